package conform

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Properties on the clock (Options.Props): leads_to within, sometimes and
// the antecedents, judged along each attempt's explanation once it is
// final (the attempt finished, or the logs ended), never along the
// branches the search tried and left: a branch that explains nothing says
// nothing of the run.
//
// Each step of an explanation is stamped from the facts' time stamps
// (timedSteps) and the steps are judged in the order of their stamps. A
// step that made a fact is at that fact's time. An unlogged step lies
// between the stamped steps around it, when exactly the log does not say:
// an obligation it opens counts from the later one (the latest it can
// have opened), a Q it makes hold counts from the earlier one (the
// earliest it can have held). So a violation found is one under every
// timing the log allows. The clock of the logs is the latest time stamp
// read.
//
// An attempt that finished is gone: an obligation it leaves open is
// violated at once (props.Clock.Gone). An attempt still open when the logs
// end (--open, or one about to be rejected as unfinished) keeps its
// obligations open: undecided while their deadline is after the logs'
// last time stamp, violated otherwise. A rejection is at the attempt's
// first fact stamped after the deadline, else at its last fact.

// needStamps refuses a fact without a time stamp when a property bounds
// a wait on the clock: a verdict never rests on times the log did not
// give.
func (j *judge) needStamps(f *obslog.Fact) error {
	if j.clock == nil || f.TUS >= 0 {
		return nil
	}
	p := j.props.TimedProperty()
	if p == nil {
		return nil
	}
	return &props.Error{File: j.props.File, Line: p.Line, Col: p.WithinCol,
		Msg: fmt.Sprintf("leads_to %s within %s needs time stamps, and %s has none (t_us): a bound on the clock cannot be judged on a log without a clock; want a log whose facts carry t_us, or a file without within",
			p.Name, p.Bound(), f.Where())}
}

// at is a fact's time stamp in configured microseconds (Options.TimeScale).
func (j *judge) at(f *obslog.Fact) int64 {
	if j.scale <= 0 || j.scale == 1 || f.TUS < 0 {
		return f.TUS
	}
	return int64(math.Round(float64(f.TUS) / j.scale))
}

// observeTimed judges the explanation n of attempt a on the clock; gone:
// the attempt finished.
func (j *judge) observeTimed(a *attempt, n *node, gone bool) {
	if j.clock == nil || j.rep.Rejection != nil {
		return
	}
	var path []*node
	for x := n; x != nil; x = x.parent {
		path = append(path, x)
	}
	slices.Reverse(path)
	steps, ok := j.timedSteps(path)
	if !ok {
		// No order of the explanation's steps follows the time stamps:
		// the states it goes through are not the run's on the clock.
		j.clock.Unordered(a.seq)
		for _, x := range path {
			if _, err := j.clock.ObserveUntimed(j.chk, x.st, a.seq, -1); err != nil {
				j.timedReject(a, a.last, nil, err.Error(), n)
				return
			}
		}
		j.cite(a)
		return
	}
	last, prev := a.last, int64(-1)
	for _, t := range steps {
		p, err := j.clock.Observe(j.chk, t.st, a.seq, t.open, t.close)
		if err != nil {
			j.timedReject(a, t.blame(last), p, err.Error(), n)
			return
		}
		if ms := j.clock.Take(); len(ms) > 0 {
			j.timedReject(a, t.blame(last), ms[0].Prop, ms[0].Detail(), n)
			return
		}
		prev = max(prev, t.close)
	}
	j.cite(a)
	if gone {
		j.clock.Gone(a.seq, max(prev, 0))
	} else {
		// Still open at the logs' end: only the clock decides.
		j.clock.Advance(j.clockUS)
	}
	if ms := j.clock.Take(); len(ms) > 0 {
		j.cite(a)
		j.timedReject(a, after(steps, ms[0].Deadline, last), ms[0].Prop, ms[0].Detail(), n)
	}
}

// timedStep is a step of an explanation on the clock: its move, the
// state after it, the fact that stamps it (nil: unlogged), and the times
// an obligation it opens counts from (open) and a Q it makes hold counts
// from (close).
type timedStep struct {
	m           system.Move
	st          *system.State
	fact        *obslog.Fact
	open, close int64
	// forced: the judge took the move without the state enabling it (an
	// eviction the cache makes), so a replay forces it too.
	forced bool
	at     int64 // its fact's time stamp, -1 when unlogged
}

func (t *timedStep) blame(last *obslog.Fact) *obslog.Fact {
	if t.fact != nil {
		return t.fact
	}
	return last
}

// timedSteps stamps the steps of an explanation (path, root first) and
// orders them by their time stamps. A step is stamped by the fact it
// explains or, when its facts were explained later (a fact owed), by the
// first of those; an unlogged step lies between the stamped steps around
// it. The explanation orders the facts of different processes as any
// interleaving the tables allow, not by their time stamps: when its order
// is not theirs, its steps are taken again in theirs (stably, so each
// process keeps its own order), from the attempt's first state; false
// when that order is not a behavior of the tables, or does not end where
// the explanation does.
func (j *judge) timedSteps(path []*node) ([]timedStep, bool) {
	var steps []timedStep
	// from[k] is the step that made the fact owed at k.
	var from []int
	stamp := func(k int, f *obslog.Fact) {
		if t := &steps[k]; f != nil && (t.at < 0 || j.at(f) < t.at) {
			t.at, t.fact = j.at(f), f
		}
	}
	for i := 1; i < len(path); i++ {
		x, up := path[i], path[i-1]
		if x.move.Kind == 0 {
			// A fact a step owed: it stamps that step (the earliest of
			// its facts is the latest it can have happened).
			k := 0
			for k < int(x.owedN) && x.owed[k] == up.owed[k] {
				k++
			}
			if len(from) == int(up.owedN) && int(x.owedN) == int(up.owedN)-1 {
				stamp(from[k], x.fact)
				from = slices.Delete(from, k, k+1)
			} else {
				from = from[:0]
			}
			continue
		}
		t := timedStep{m: x.move, st: x.st, at: -1}
		cp := *up.st
		if _, ok := j.stepper.Step(&cp, x.move); !ok {
			t.forced = true
		}
		steps = append(steps, t)
		stamp(len(steps)-1, x.fact)
		if len(from) == int(up.owedN) && x.owedN >= up.owedN {
			for range int(x.owedN - up.owedN) {
				from = append(from, len(steps)-1)
			}
		} else {
			from = from[:0]
		}
	}
	if len(steps) == 0 {
		return steps, true
	}
	// An unlogged step counts from the latest stamped step before it
	// (close) and opens from the next one after it (open); it is taken
	// no earlier than the steps before it.
	lo := int64(-1)
	for k := range steps {
		if steps[k].at >= 0 {
			lo = max(lo, steps[k].at)
			steps[k].open, steps[k].close = steps[k].at, steps[k].at
			continue
		}
		steps[k].close = lo
	}
	hi := int64(-1)
	for k := len(steps) - 1; k >= 0; k-- {
		if steps[k].at >= 0 {
			hi = steps[k].at
			continue
		}
		steps[k].open = max(hi, steps[k].close)
		if hi < 0 {
			steps[k].open = steps[k].close
		}
		if steps[k].close < 0 {
			steps[k].close = steps[k].open
		}
	}
	sorted := slices.Clone(steps)
	key := func(t *timedStep) int64 {
		if t.at >= 0 {
			return t.at
		}
		return t.close
	}
	slices.SortStableFunc(sorted, func(a, b timedStep) int { return cmp.Compare(key(&a), key(&b)) })
	same := true
	for k := range steps {
		if steps[k].st != sorted[k].st {
			same = false
			break
		}
	}
	if same {
		return steps, true
	}
	// Take the steps again in the order of the time stamps.
	st := *path[0].st
	for k := range sorted {
		t := &sorted[k]
		var v *model.Violation
		if t.forced {
			v = j.stepper.Force(&st, t.m)
		} else {
			var ok bool
			if v, ok = j.stepper.Step(&st, t.m); !ok {
				return nil, false
			}
		}
		if v != nil {
			return nil, false
		}
		cp := st
		t.st = &cp
	}
	// The fault budget aside: the stepper gives each step a whole one.
	end := *path[len(path)-1].st
	if st.B = end.B; st != end {
		return nil, false
	}
	return sorted, true
}

// after is the earliest fact of an explanation's steps stamped after a
// deadline: the first line of the attempt that shows the deadline passed;
// else the attempt's last fact.
func after(steps []timedStep, deadline int64, last *obslog.Fact) *obslog.Fact {
	var best *obslog.Fact
	for _, t := range steps {
		if f := t.fact; f != nil && t.at > deadline && (best == nil || f.TUS < best.TUS) {
			best = f
		}
	}
	if best == nil {
		return last
	}
	return best
}

// cite keeps the id of an attempt the clock's report names.
func (j *judge) cite(a *attempt) {
	if j.clock.Cites(a.seq) && j.cited[a.seq] == "" {
		j.cited[a.seq] = a.id
	}
}

// timedReject rejects the logs at fact f for a property on the clock.
func (j *judge) timedReject(a *attempt, f *obslog.Fact, p *props.Property, detail string, n *node) {
	j.cited[a.seq] = a.id
	r := &Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Detail: detail, Explained: j.history(n)}
	if p != nil {
		r.Property, r.PropertyAt = p.Name, fmt.Sprintf("%s:%d", j.props.File, p.Line)
	}
	j.reject(r)
}

// timedReport is the verdicts on the clock, once the logs were judged.
func (j *judge) timedReport() *props.RunReport {
	if j.clock == nil {
		return nil
	}
	// A rejection stops the judgement: what the clock saw until then is
	// no run's verdict, unless the rejection is the clock's own.
	if r := j.rep.Rejection; r != nil && (r.Property == "" || !j.timedProperty(r.Property)) {
		return nil
	}
	j.clock.Advance(j.clockUS)
	violated := ""
	if r := j.rep.Rejection; r != nil && r.Property != "" {
		violated = r.Property
	}
	return j.clock.Report(violated, func(i int) string {
		if id := j.cited[i]; id != "" {
			return "attempt " + id
		}
		return fmt.Sprintf("attempt #%d", i)
	})
}

func (j *judge) timedProperty(name string) bool {
	for _, p := range j.props.Props {
		if p.Name == name {
			return p.Kind == props.LeadsTo
		}
	}
	return false
}
