package conform

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Verdicts: an attempt that ends explained, unfinished or rejected, and a
// rejection's detail: what the tables allowed, what was explained, why.

// late judges a fact about an attempt that an explanation finished, which
// the judge forgot: the only facts a finished attempt may still log are
// the Removed of the blocks its sides keep cached and the index
// advertises. Anything else is judged by what it would physically do to
// an attempt that had released everything: a release is a second one
// (ExactlyOnceRelease), a Removed one of blocks the index does not
// advertise (IndexMatchesCache), a fact of the attempt's work a second
// attempt under the same id (AttemptIsolation). A fact that does nothing
// physical by itself (a cancel taken, a timer acted on) is held until the
// next late fact of its process, which says what it led to, or the end.
func (j *judge) late(f *obslog.Fact, e *finished) {
	sd := -1
	switch {
	case f.Proc == int(e.p):
		sd = int(model.SourceSide)
	case f.Proc == int(e.d):
		sd = int(model.DestinationSide)
	}
	if f.Kind == obslog.Removed && sd >= 0 && e.removed[sd] >= 0 && int64(e.gen[sd]) == f.Gen && (!f.HasFigure(obslog.FigBlocks) || f.Blocks == int64(e.removed[sd])) {
		// The Removed the record expects: the common case, judged before
		// anything of a report is written.
		e.removed[sd] = -1
		return
	}
	name := j.h.Processes[f.Proc].Name
	end := j.endOf(e)
	held := j.held[f.Attempt]
	r := &Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Allowed: j.lateAllowed(e)}
	if f.Kind == obslog.Removed {
		r.Invariant = model.NameIndexMatchesCache
		switch {
		case sd >= 0 && e.removed[sd] >= 0 && int64(e.gen[sd]) == f.Gen:
			r.Detail = fmt.Sprintf("%s publishes Removed for %d blocks of the attempt, and the index advertises %d of them: Removed is published for what was Stored", name, f.Blocks, e.removed[sd])
		default:
			r.Detail = fmt.Sprintf("%s publishes Removed for blocks of the attempt the index does not advertise: the attempt ended at %s, and %s had no Stored of it left (never stored, or already removed): nothing is Removed that was not Stored", name, end, name)
		}
		j.reject(r)
		return
	}
	if held != nil && held.Proc != f.Proc {
		j.rejectHeld(f.Attempt, e)
		return
	}
	switch f.Kind {
	case obslog.SourceReleased, obslog.ReservationReleased, obslog.DecodeReleased, obslog.PrefillStopped:
		r.Invariant = model.NameExactlyOnceRelease
		r.Detail = fmt.Sprintf("%s logs %s for the attempt after its end at %s, where both sides had already released everything they held: a release happens exactly once", name, f.Kind, end)
		if held != nil {
			r.Detail += fmt.Sprintf(" (it follows %s at %s)", held.Kind, held.Where())
		}
	case obslog.OutcomeReported:
		r.Detail = fmt.Sprintf("%s reports a terminal outcome for the attempt after its end at %s, where both sides had reported theirs: a finished side takes no more steps", name, end)
		if held != nil && delivered(held.Kind) {
			r.Invariant = model.NameAttemptIsolation
			r.Detail += fmt.Sprintf(" (it follows %s at %s, a fact delivered after the end that moved the finished side's machine)", held.Kind, held.Where())
		}
	default:
		if physics[f.Kind] == nil && f.Kind != obslog.Routed && held == nil && sd >= 0 {
			j.held[f.Attempt] = f
			j.lateHeld = append(j.lateHeld, f.Attempt)
			return
		}
		if held != nil {
			j.rejectHeld(f.Attempt, e)
			return
		}
		r.Invariant = model.NameAttemptIsolation
		r.Detail = fmt.Sprintf("%s logs %s of attempt %s after its end at %s: attempt ids are never reused, so this is a second attempt under the same id", name, f.Kind, f.Attempt, end)
	}
	j.reject(r)
}

// rejectHeld rejects the late fact held for a finished attempt: nothing
// it led to explains it.
//
// A fact a side logs when it takes a fact delivered to it (delivered)
// says that a fact reaching the finished side moved its machine, which
// AttemptIsolation forbids: a fact addressed to a finished record is
// stale and changes nothing (check names the same step so).
func (j *judge) rejectHeld(id string, e *finished) {
	f := j.held[id]
	r := &Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Allowed: j.lateAllowed(e),
		Detail: fmt.Sprintf("%s logs %s for the attempt after its end at %s: a finished side takes no more steps", j.h.Processes[f.Proc].Name, f.Kind, j.endOf(e))}
	if delivered(f.Kind) {
		r.Invariant = model.NameAttemptIsolation
		r.Detail += "; a fact delivered after the end moved its machine, where a stale fact changes nothing"
	}
	j.reject(r)
}

// delivered reports whether a side logs facts of kind k when it takes a
// fact delivered to it (a peer's or a router's), rather than on its own
// (its deadlines, its aborts).
func delivered(k obslog.Kind) bool {
	switch k {
	case obslog.Cancelled, obslog.LeaseRenewed, obslog.ReaderCompleted, obslog.ReceiveCompleted:
		return true
	}
	return false
}

// endOf is where a finished attempt's last fact was.
func (j *judge) endOf(e *finished) string {
	return fmt.Sprintf("%s:%d", j.rep.Files[e.file], e.line)
}

// lateAllowed is what a finished attempt's processes may still log.
func (j *judge) lateAllowed(e *finished) []string {
	var out []string
	for sd, by := range []obslog.Who{obslog.BySource, obslog.ByDestination} {
		if e.removed[sd] >= 0 {
			out = append(out, obslog.Label{Kind: obslog.Removed, By: by, Blocks: e.removed[sd]}.String())
		}
	}
	return out
}

func (j *judge) reject(r *Rejection) {
	if j.rep.Rejection != nil {
		return
	}
	r.Prefix = j.rep.Facts - 1
	j.rep.Rejection = r
	j.rep.Verdict = Rejected
}

// end judges what is open when the logs end. It returns an error when
// the logs do not say enough to judge an attempt (ErrInput).
func (j *judge) end() error {
	// An attempt none of whose facts gives its size cannot be judged: the
	// log lacks what the judgement rests on, which no fact broke.
	for _, a := range j.sortedOpen() {
		if a.wcfg == nil {
			f := a.last
			for _, sl := range a.slots {
				if len(sl.facts) > 0 && sl.facts[0].Seq < f.Seq {
					f = sl.facts[0]
				}
			}
			return fmt.Errorf("%s: %w: no fact of attempt %s gives its prompt_tokens (the prefill router's routed fact should carry them), so it cannot be sized", f.Where(), ErrInput, a.id)
		}
	}
	for _, id := range j.lateHeld {
		if j.held[id] != nil {
			e, _, err := j.gone.get(id)
			if err != nil {
				return err
			}
			j.rejectHeld(id, &e)
			return nil
		}
	}
	for _, a := range j.sortedOpen() {
		for _, p := range []int{a.p, a.d} {
			if r := j.procRestart(p); r != nil && !j.logged(a, p) && j.rep.Rejection == nil {
				j.add(a, r)
			}
		}
		if j.rep.Rejection != nil {
			return nil
		}
		if _, open := j.att[a.id]; !open {
			continue
		}
		for {
			if _, open := j.att[a.id]; !open {
				break // a search with more unlogged faults finished it
			}
			if !a.full {
				if best := j.greedyEnd(a); best != nil {
					j.account(a, best)
					j.exercise(a, best, j.doneAtEnd(best))
					j.observeTimed(a, best, j.doneAtEnd(best))
					break
				}
				a.full, a.cur = true, nil
				j.dropGreedy(a)
				if !j.replay(a, nil) {
					return nil
				}
				continue
			}
			if best := j.ended(a); best != nil {
				j.account(a, best)
				j.exercise(a, best, j.doneAtEnd(best))
				j.observeTimed(a, best, j.doneAtEnd(best))
				break
			}
			if !a.full {
				a.full = true
				if !j.replay(a, nil) {
					return nil
				}
				continue
			}
			// Unlogged faults may be what ended it (a cancel or a lost
			// fact that no line records).
			if a.fcut && a.level < j.maxF {
				a.level++
				if !j.replay(a, nil) {
					return nil
				}
				continue
			}
			j.unfinished(a)
			return nil
		}
	}
	return nil
}

// ended is an explanation of all of an attempt's facts that finished it
// (or any, with Open).
func (j *judge) ended(a *attempt) *node {
	for _, n := range a.waiting {
		if j.caughtUp(a, n) && n.owedN == 0 && (j.open || j.doneAtEnd(n)) {
			return n
		}
	}
	return nil
}

// unfinished rejects an attempt the logs leave holding something, owing
// a fact, or with a fact no explanation reached.
func (j *judge) unfinished(a *attempt) {
	var caught *node
	for _, n := range a.waiting {
		if j.caughtUp(a, n) && n.owedN == 0 {
			caught = n
			break
		}
	}
	if caught == nil {
		j.dead(a, a.waiting)
		return
	}
	// A deadline the logs' clock passed is the finding that explains
	// why the attempt never finished.
	j.exercise(a, caught, false)
	if j.observeTimed(a, caught, false); j.rep.Rejection != nil || j.rejectTrapped(a, caught) {
		return
	}
	f := a.last
	j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Invariant: model.NameQuiescence,
		Detail: "the logs end with the attempt unfinished: " + j.unfinishedBy(a, caught), Explained: j.history(caught), Allowed: j.allowed(a, []*node{caught}),
		Trace: j.rejectionTrace(a, caught, f)})
}

// unfinishedBy says what keeps an explanation from the end of the logs:
// what its attempt holds, or else the side whose machine did not finish.
func (j *judge) unfinishedBy(a *attempt, n *node) string {
	x := &n.st.W.H[0]
	held := false
	for s := model.SourceSide; s <= model.DestinationSide; s++ {
		held = held || x.InFlight[s]
	}
	if held || x.Src != model.SrcNone || x.Dst != model.DstNone || x.Pending || x.Timers != 0 {
		return n.st.W.DescribeHeld()
	}
	var parts []string
	for sd, p := range []int{a.p, a.d} {
		if p >= 0 && x.Worker(model.Side(sd)) >= 0 && !j.chk.Terminal(n.st, system.RoleOf(model.Side(sd)), 0) {
			parts = append(parts, fmt.Sprintf("%s never finished its side (no terminal outcome any behavior of the tables reaches from its facts)", j.h.Processes[p].Name))
		}
	}
	if len(parts) == 0 {
		return n.st.W.DescribeHeld()
	}
	return strings.Join(parts, "; ")
}

// dead rejects an attempt no explanation can carry further. The fact
// blamed is the first one the furthest explanations could not explain;
// the invariant named is the one its physical effect breaks in every
// explanation that reached it, if it breaks one in each.
func (j *judge) dead(a *attempt, ns []*node) {
	ns = append(slices.Clone(ns), a.furthest...)
	var best *node
	for _, n := range ns {
		if best == nil || better(n, best) {
			best = n
		}
	}
	// Blame the first fact (in reading order) the furthest explanations
	// cannot take; but a fact whose physical effect breaks an invariant in
	// every one of them is the cause, the others wait on it, so it is
	// blamed first whatever order the logs were read in.
	f := a.last
	var first *model.Violation
	var at []*node
	var figs string
	if best != nil {
		type cand struct {
			f  *obslog.Fact
			at []*node
			v  *model.Violation
			// figs says how the fact's figures differ from those of the
			// same kind every explanation gives there.
			figs string
		}
		var cs []cand
		for s := range a.slots {
			p := int(best.pos[s])
			if p >= len(a.slots[s].facts) {
				continue
			}
			c := cand{f: a.slots[s].facts[p]}
			for _, n := range ns {
				if n.consumed == best.consumed && n.pos[s] == best.pos[s] && !slices.Contains(c.at, n) {
					c.at = append(c.at, n)
				}
			}
			// A fact of a kind the explanations log next, but with other
			// figures, is wrong in its figures: its operation (which
			// takes the attempt's own figures) is not the cause.
			if c.figs = j.wrongFigures(a, c.at, c.f); c.figs == "" {
				c.v = j.breaksInAll(a, c.at, best, c.f)
			}
			cs = append(cs, c)
			// A fact that does nothing physical (a cancel taken, a timer
			// acted on) may be refused only because what it led to is
			// wrong: the process's next facts, up to its first physical
			// one, are judged where it stands, and one that breaks an
			// invariant there is the cause.
			// A source's facts that say why it may release are not
			// passed over: its release is judged on what it had learned.
			// Nor is a fact no step of the tables logs where its process
			// stands in these explanations, even one that breaks an
			// invariant (a cancel whose message no explanation sent yet):
			// it is refused for what comes before it, and what follows it
			// happened after that, not where the explanations stand.
			for q := p; c.v == nil && q+1 < len(a.slots[s].facts) && j.nothingPhysical(a, a.slots[s].facts[q]) && j.logsNext(a, c.at, a.slots[s].facts[q]); q++ {
				g := a.slots[s].facts[q+1]
				if v := j.breaksInAll(a, c.at, best, g); v != nil {
					cs = append(cs, cand{f: g, at: c.at, v: v})
					break
				}
			}
		}
		sort.Slice(cs, func(x, y int) bool {
			if (cs[x].v != nil) != (cs[y].v != nil) {
				return cs[x].v != nil
			}
			return cs[x].f.Seq < cs[y].f.Seq
		})
		if len(cs) > 0 {
			f, at, first, figs = cs[0].f, cs[0].at, cs[0].v, cs[0].figs
		}
	}
	first = stepFirst(a, f, first)
	r := &Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f)}
	if a.everCut || a.cut {
		r.Detail = fmt.Sprintf("no explanation within %d unlogged steps between facts and %d unlogged faults; a longer search (--bound) may find one", j.bound, j.maxF)
		j.rep.BoundReached++
		j.reject(r)
		j.rep.Verdict = Inconclusive
		return
	}
	if best != nil {
		r.Explained = j.history(best)
		r.Trace = j.rejectionTrace(a, best, f)
	}
	r.Allowed = j.allowed(a, at)
	all := first != nil
	switch {
	case all && first != nil:
		r.Invariant, r.Detail = first.Invariant, first.Detail
		j.nameProperty(r, first)
	case figs != "":
		r.Detail = figs
	case best != nil && best.owedN > 0:
		r.Detail = j.outOfOrder(a, best, f)
	case len(at) == 0:
		r.Detail = "no behavior of the tables begins the attempt with this fact"
	default:
		r.Detail = noStep
	}
	switch {
	case r.Invariant == "" && a.broken != nil && r.Detail == noStep && j.nameProperty(r, a.broken):
		// The tables may well allow the step: the property forbids it.
		r.Detail = fmt.Sprintf("no step here that this fact describes keeps every property: one that would explain it breaks %s: %s", a.broken.Invariant, a.broken.Detail)
	case r.Invariant == "" && a.broken != nil:
		r.Detail += fmt.Sprintf(" (a step that would explain it breaks %s: %s)", a.broken.Invariant, a.broken.Detail)
		r.Broken = a.broken.Invariant
		j.nameProperty(r, a.broken)
	}
	j.reject(r)
}

// noStep is the detail of a fact no step of the tables describes.
const noStep = "the tables allow no step here that this fact describes"

// nameProperty says in a rejection that the violation it rests on is of
// a property of the file (Options.Props), with where it is written, and
// reports whether it is one: a property's violation carries its
// expression as its check, which tells it from a built-in invariant of
// the same name.
func (j *judge) nameProperty(r *Rejection, v *model.Violation) bool {
	if j.props == nil || v == nil {
		return false
	}
	for _, p := range j.props.Props {
		if p.Name == v.Invariant && p.Expr == v.Check {
			r.Property = p.Name
			r.PropertyAt = fmt.Sprintf("%s:%d", j.props.File, p.Line)
			return true
		}
	}
	return false
}

// outOfOrder says what an explanation owes when a fact comes instead:
// the facts the step that explains an earlier one makes observable, which
// each process logs in the vocabulary's order.
func (j *judge) outOfOrder(a *attempt, n *node, f *obslog.Fact) string {
	var names, mine []string
	for _, l := range n.owed[:n.owedN] {
		names = append(names, l.String())
		if j.logsIt(a, &l, f) {
			mine = append(mine, l.String())
		}
	}
	// The fact whose step owes them: the one explained by the step that
	// first owed the first of them (the last explained by a step, when
	// none is found).
	var by *node
	if n.owedN > 0 {
		first := n.owed[0]
		for x := n; x != nil && x.parent != nil && by == nil; x = x.parent {
			if slices.Contains(x.owed[:x.owedN], first) && !slices.Contains(x.parent.owed[:x.parent.owedN], first) {
				if x.fact != nil && x.move.Kind != 0 {
					by = x
				}
				break
			}
		}
	}
	for x := n; x != nil && x.parent != nil && by == nil; x = x.parent {
		if x.fact != nil && x.move.Kind != 0 {
			by = x
		}
	}
	step := "the attempt's previous fact"
	if by != nil {
		step = fmt.Sprintf("%s at %s (step %s)", by.fact.Kind, by.fact.Where(), by.move)
	}
	name := j.h.Processes[f.Proc].Name
	if late := j.tooLateForStep(a, n, f, step); late != "" {
		return late
	}
	if len(mine) > 0 {
		return fmt.Sprintf("%s logs %s where it owes %s: the step that explains %s also makes it log %s, in this order, and %s never logged %s before this fact", name, f.Kind, mine[0], step, strings.Join(mine, ", "), name, mine[0])
	}
	return fmt.Sprintf("the step that explains %s also makes %s observable first, and %s logs %s instead", step, strings.Join(names, ", "), name, f.Kind)
}

// wrongFigures says how a fact's figures differ from those of the facts
// of its kind its process may log next in every one of the explanations
// ns, or "" when one of them logs it as it is, or none logs its kind.
func (j *judge) wrongFigures(a *attempt, ns []*node, f *obslog.Fact) string {
	if len(obslog.Kinds[f.Kind].Figures) == 0 || len(ns) == 0 {
		return ""
	}
	var want []string
	for i, n := range ns {
		if i == 16 {
			break
		}
		found := false
		for _, l := range j.nextOf(a, n, f, false) {
			if l.Kind != f.Kind || f.Kind == obslog.Routed && l.Stage != f.Stage {
				continue
			}
			// An outcome or a cause the physics judges (the fact's own
			// operation takes them): only counts and sizes are wrong here.
			if matches(f, &l) || sameCounts(f, &l) {
				return ""
			}
			found = true
			if s := l.String(); !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
		if !found {
			return ""
		}
	}
	sort.Strings(want)
	d := Describe(j.h, f)
	return fmt.Sprintf("%s logs %s, figures no behavior of the tables gives it here: every explanation of the facts before it logs %s", j.h.Processes[f.Proc].Name, d[strings.LastIndex(d, ": ")+2:], strings.Join(want, " or "))
}

// sameCounts reports whether a fact's counts and sizes (its figures other
// than the outcome, the timer and the stage) are a label's.
func sameCounts(f *obslog.Fact, l *obslog.Label) bool {
	for _, g := range obslog.Kinds[f.Kind].Figures {
		switch g {
		case obslog.FigStage, obslog.FigOutcome, obslog.FigTimer:
		default:
			if f.HasFigure(g) && figure(f, g) != labelFigure(l, g) {
				return false
			}
		}
	}
	return true
}

// nextOf is what the process of fact f may log next in explanation n:
// the first fact n owes it, or else the first of its facts in a step n
// may take after unlogged steps of no fault (at most the bound). With
// broken, the step that logs it may break an invariant (the unlogged
// steps before it keep every one).
func (j *judge) nextOf(a *attempt, n *node, f *obslog.Fact, broken bool) []obslog.Label {
	var out []obslog.Label
	for k, l := range n.owed[:n.owedN] {
		if firstOfItsProcess(n.owed[:n.owedN], k) && j.logsIt(a, &l, f) {
			return []obslog.Label{l}
		}
	}
	frontier := []*node{n}
	var seen map[uint64][]*node
	for depth := 0; len(frontier) > 0 && depth <= j.bound; depth++ {
		var next []*node
		for _, x := range frontier {
			st, moves := j.movesOf(x)
			for _, m := range moves {
				if _, fault := m.Kind.Spends(); fault && m.Kind != system.Evict.Move() {
					continue
				}
				ns := st
				v := j.stepper.Force(&ns, m)
				if v != nil && !broken {
					continue
				}
				var must []obslog.Label
				for _, l := range obslog.Observe(nil, 0, &st, &ns, m, j.stepper.Firings()) {
					if j.mustLog(a, &l) {
						must = append(must, l)
					}
				}
				if len(must) == 0 {
					if depth < j.bound && v == nil {
						c := j.child(x)
						c.st, c.stKey = &ns, j.stateKey(&ns)
						next = append(next, c)
					}
					continue
				}
				for k, l := range must {
					if firstOfItsProcess(must, k) && j.logsIt(a, &l, f) {
						out = append(out, l)
					}
				}
			}
		}
		frontier, seen = j.fresh(next, seen)
	}
	return out
}

// logsNext reports whether a step of the tables logs fact f next for its
// process in one of the explanations ns (the first 16), whether or not
// that step keeps every invariant.
func (j *judge) logsNext(a *attempt, ns []*node, f *obslog.Fact) bool {
	for i, n := range ns {
		if i == 16 {
			break
		}
		for _, l := range j.nextOf(a, n, f, true) {
			if l.Kind == f.Kind {
				return true
			}
		}
	}
	return false
}

// nothingPhysical reports whether a fact changes nothing the physics
// judges: no operation of its own, and not what a source's release is
// judged on (releaseCause).
func (j *judge) nothingPhysical(a *attempt, f *obslog.Fact) bool {
	if physics[f.Kind] != nil || f.Kind == obslog.Removed {
		return false
	}
	if f.Proc != a.p {
		return true
	}
	switch f.Kind {
	case obslog.ReaderCompleted, obslog.TransferDone, obslog.Cancelled, obslog.Aborted, obslog.TransferFailed, obslog.LeaseExpired, obslog.DeadlineExpired:
		return false
	}
	return true
}

// breaksInAll is the invariant a fact's physical effect breaks in every
// explanation that reached it (the best one's, when they differ), or nil
// when one of them allows it.
func (j *judge) breaksInAll(a *attempt, at []*node, best *node, f *obslog.Fact) *model.Violation {
	var first *model.Violation
	for _, n := range at {
		v := j.skipped(a, n, f)
		if v == nil {
			v = j.physical(a, n, f)
		}
		if v == nil {
			return nil
		}
		if first == nil || n == best {
			first = v
		}
	}
	return first
}

// skipped judges a fact that comes where an explanation owes its process
// a release: the step that explains the facts before it returns blocks
// the process never said it returned.
func (j *judge) skipped(a *attempt, n *node, f *obslog.Fact) *model.Violation {
	for _, l := range n.owed[:n.owedN] {
		if l.By == obslog.ByRouter || j.logger(a, &l) != f.Proc {
			continue
		}
		var what string
		switch l.Kind {
		case obslog.SourceReleased:
			what = fmt.Sprintf("%d pinned blocks", l.Blocks)
		case obslog.ReservationReleased:
			what = fmt.Sprintf("%d reserved pages", l.Pages)
		case obslog.DecodeReleased:
			what = fmt.Sprintf("%d active blocks", l.Blocks)
		case obslog.PrefillStopped:
			what = fmt.Sprintf("%d compute blocks", l.Blocks)
		default:
			return nil
		}
		if l.Kind == f.Kind {
			return nil
		}
		return &model.Violation{Invariant: model.NameQuiescence, Handoff: 0, Worker: -1,
			Detail: fmt.Sprintf("%s logs %s without returning its %s: every behavior of the tables that explains its facts so far returns them first, and it never says it did", j.h.Processes[f.Proc].Name, f.Kind, what)}
	}
	return nil
}

// allowed lists what the nodes could have logged next.
func (j *judge) allowed(a *attempt, ns []*node) []string {
	set := map[string]bool{}
	for i, n := range ns {
		if i == 16 {
			break
		}
		// What each process may log next: the first fact it owes, or
		// else the first fact of its own in a step.
		for k, l := range n.owed[:n.owedN] {
			if firstOfItsProcess(n.owed[:n.owedN], k) {
				set[l.String()] = true
			}
		}
		st, moves := j.movesOf(n)
		for _, m := range moves {
			next := st
			if v := j.stepper.Force(&next, m); v != nil {
				continue
			}
			var must []obslog.Label
			for _, l := range obslog.Observe(nil, 0, &st, &next, m, j.stepper.Firings()) {
				if j.mustLog(a, &l) {
					must = append(must, l)
				}
			}
			for k, l := range must {
				if firstOfItsProcess(must, k) && (l.By == obslog.ByRouter || !j.owes(a, n, j.logger(a, &l))) {
					set[l.String()] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
