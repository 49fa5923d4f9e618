package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// LiveJudged is what conform says of the plan's own run on the clock,
// its log cut into one log per process as a live run writes them: each
// process's facts keep their own order only, so the judge is as free as
// it is with a live run's logs.
type LiveJudged struct {
	Rejected bool
	// Invariant is the invariant the rejected fact breaks by itself,
	// Broken the one a step of the tables that would explain it breaks
	// (each "" when there is none).
	Invariant, Broken string
	Detail            string
}

// Names is the invariant the judge names: the fact's own, else the
// step's.
func (j *LiveJudged) Names() string {
	if j.Invariant != "" {
		return j.Invariant
	}
	return j.Broken
}

// judgeAsLive judges the plan's run as conform judges a live run's logs.
func (p *Plan) judgeAsLive(ctx context.Context, proto *system.Protocol) error {
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, p.Config.LogHeader(obslog.All))
	if err != nil {
		return err
	}
	if _, err := sim.Run(ctx, p.Config, &sim.SliceSource{Reqs: slices.Clone(p.Requests)}, sim.Options{Protocol: proto, Faults: toCluster(p.Faults), Log: w}); err != nil {
		return fmt.Errorf("repro: the plan's run: %w", err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	if len(lines) == 0 {
		return nil
	}
	header := lines[0]
	var order []string
	per := map[string]*bytes.Buffer{}
	for _, l := range lines[1:] {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var f struct {
			Proc string `json:"proc"`
		}
		if err := json.Unmarshal(l, &f); err != nil {
			return fmt.Errorf("repro: the plan's log: %w", err)
		}
		b := per[f.Proc]
		if b == nil {
			b = bytes.NewBuffer(slices.Clone(header))
			per[f.Proc] = b
			order = append(order, f.Proc)
		}
		b.Write(l)
	}
	var in []conform.Input
	for _, name := range order {
		in = append(in, conform.Input{Name: name + ".jsonl", R: per[name]})
	}
	if len(in) == 0 {
		return nil
	}
	opt := conform.Options{Protocol: proto, Config: p.Config}
	if d := p.clockError(); d >= 0 {
		// The live run's clock error, in the configured time the plan's
		// run stamps its facts in.
		opt.ClockError, opt.Clocked = d, true
	}
	rep, err := conform.Judge(in, opt)
	if err != nil {
		return fmt.Errorf("repro: judging the plan's log: %w", err)
	}
	j := &LiveJudged{}
	if r := rep.Rejection; r != nil {
		j.Rejected, j.Invariant, j.Broken, j.Detail = true, r.Invariant, r.Broken, r.Detail
	}
	p.Judged = j
	return nil
}

// judgedNote says what the judge makes of the plan's own run, cut as a
// live run's logs are: where it names the invariant, the live run's
// facts after the violation may still change its mind; where it names
// another or explains the logs, a live run that logs the same facts up
// to there cannot show the invariant to it.
func (p *Plan) judgedNote() string {
	j := p.Judged
	if j == nil || p.Result == nil || p.Result.Violation == nil {
		return ""
	}
	inv := p.Result.Violation.Invariant
	note := " Judged as `conform` judges a live run's logs (each process's facts in their own order only), the plan's own run on the clock, whose log ends at its violation,"
	switch {
	case !j.Rejected:
		return note + fmt.Sprintf(" is explained: the judge finds an order of the processes' facts in which every invariant holds, so a live run that logs the same facts shows it no %s.", inv)
	case j.Names() == inv && p.retired != "":
		after := " names AttemptIsolation instead."
		if inv == model.NameAttemptIsolation {
			// A finished side that logs taking a delivered fact after
			// the attempt's end is judged so too.
			after = " names AttemptIsolation all the same: a finished side that says it took a fact delivered to it moved its machine on a stale fact."
		}
		return note + fmt.Sprintf(" is rejected naming %s too. Its step delivers %s after that side reported its outcome holding nothing: a live worker keeps a finished side's machine until the coordinator has both sides' outcomes, as the model keeps it until the request retires, so the late fact reaches it there too and the row the violation fires runs. Where the peer's own end is logged before that step (the two sides' last facts cross on a loaded machine), the judge reads the step as one after the attempt's end and", inv, p.retired) + after
	case j.Names() == inv && p.Pinned != "":
		return note + fmt.Sprintf(" is rejected naming %s too, with %s. Without it a live run goes on past the violation, and that side's later facts (what it does after the fact it sent) may be placed before the step that takes the fact, in an order that explains the logs; aborted there, it logs nothing after it, and every order of the logs breaks %s.", inv, p.Pinned, inv)
	case j.Names() == inv:
		note += fmt.Sprintf(" is rejected naming %s too. A live run goes on past the violation: what its processes log after it (a side's later facts; a hung transfer failing once a registration it uses is gone) may give the judge an order that explains the logs, or one in which another invariant breaks first.", inv)
		if slices.ContainsFunc(p.Faults, func(f faultplan.Fault) bool { return f.Kind == "delay" }) {
			// The activation a slowed core applies late is logged only
			// when applied, and nothing the peer logs waits for it.
			note += " The plan's delay logs nothing: a command its slowed core applies late is logged only once applied, and the judge may place that fact as early as the step that issued the command, before the peer's steps the delay let come first."
		}
		if p.pinWhy != "" {
			note += " " + p.pinWhy
		}
		return note
	case j.Invariant != "":
		return note + fmt.Sprintf(" is rejected naming %s, not %s: %s. The judge names what a fact breaks by itself before what a step of the tables that would explain it breaks, and a live run logs the same fact.", j.Invariant, inv, j.Detail)
	case j.Names() != "":
		return note + fmt.Sprintf(" is rejected naming %s, not %s: %s.", j.Names(), inv, j.Detail)
	}
	return note + fmt.Sprintf(" is rejected naming no invariant: %s.", j.Detail)
}
