package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// SpecOut is the file a rejection's reproduction writes the tables the
// logging system behaved as into, when they are not the ones judged
// against: the test reads them, and a fix is made there.
const SpecOut = "spec.json"

// RejectionInput is a conform rejection and what the logs were judged
// against.
type RejectionInput struct {
	// Protocol is the tables judged against; Spec and SpecFile the
	// variant they were read from (nil: the built-in ones).
	Protocol  *system.Protocol
	Spec      *spec.Spec
	SpecFile  string
	Rejection *conform.Rejection
	// Command is the command that rejected the logs, for the README.
	Command string
}

// RejectionResult says what was written for a rejection.
type RejectionResult struct {
	Dir       string
	Invariant string
	// Steps is the trace's length: the explanation's steps, and the
	// violating step when Reproduced.
	Steps int
	// Explained is the explanation's steps before minimizing.
	Explained int
	// Reproduced: the trace ends in the rejection's invariant. Deviation
	// names the one-row change of the tables under which it does ("" for
	// the tables themselves); Why says why there is no such trace.
	Reproduced bool
	Deviation  string
	// DeviationRows counts the rows the deviation changes; Unlogged the
	// trace's steps that are not the explanation's (a heartbeat, a
	// delivery, a fault the logs need not show).
	DeviationRows, Unlogged int
	Why                     string
	// Plan is the reproduction on the clock derived from the trace of a
	// reproduced rejection (its files written when it reaches the
	// invariant), Timed the first timed scenario that breaks the
	// invariant when the plan does not (both nil when the rejection is
	// not reproduced).
	Plan  *Plan
	Timed *Timed
	// Scale is the plan's incident at the default workload's scale (nil
	// without a plan).
	Scale *Scale
	// Loop: the rejection names EventuallyDrained, judged where the
	// explanation ends, and a search from the trace's last state (check
	// --from-trace) finds a loop there that never drains.
	Loop bool
	// search is what the search for a deviation tried.
	search search
}

// Files lists the files written, in the order a reader takes them.
func (r *RejectionResult) Files() []string {
	var out []string
	if r.Steps > 0 {
		out = append(out, TraceFile)
	}
	if r.Deviation != "" {
		out = append(out, SpecOut)
	}
	out = append(out, ReadmeFile)
	if r.Reproduced {
		out = append(out, TestFile)
	}
	if r.Plan != nil && r.Plan.Result != nil {
		out = append(out, SimFile, WorkloadFile, FaultsFile)
	}
	if r.Scale != nil {
		out = append(out, ScaleSimFile, ScaleFaultsFile)
	}
	return out
}

// WriteRejection writes the reproduction of a rejected log into dir. The
// judge refuses a fact because no behavior of the tables takes it; the
// step the logging system took is then one of tables that differ from
// them. The reproduction finds a change of one row of the tables (the
// row does the fact's own operation too, or instead of one of its
// actions) under which the attempt's explanation, or one or two steps
// after it, breaks the rejection's invariant doing what the fact says:
// the trace is the explanation, without the steps the violation does not
// need, and that step, under those tables; replay judges it. Without an
// invariant, or with no such change, the trace is the explanation and
// the README says what comes next; without an explanation there is no
// trace, and the README says why.
func WriteRejection(dir string, in RejectionInput) (*RejectionResult, error) {
	r := in.Rejection
	if r == nil {
		return nil, errors.New("repro: no rejection to reproduce")
	}
	// The invariant to reach: the one the fact breaks, or the one a step
	// of the tables that would explain it breaks.
	inv := r.Invariant
	if inv == "" {
		inv = r.Broken
	}
	res := &RejectionResult{Dir: dir, Invariant: inv}
	v := rejectionView{In: in, Res: res}
	t := r.Trace
	var c *checker.Checker
	var prefix []system.Move
	var cfg *system.Config
	switch {
	case t == nil:
		res.Why = "No explanation of the attempt reached the fact: it is refused on what the logs themselves say (a process's generations, an attempt's end, the mocker's bookkeeping rules), before any state of the tables is judged"
	case t.ConfigJSON == nil:
		res.Why = t.Why
	default:
		var err error
		if cfg, err = system.ParseConfig(TraceFile+": config", t.ConfigJSON); err != nil {
			return nil, fmt.Errorf("repro: %w", err)
		}
		if c, err = checker.New(in.Protocol, cfg, cfg.Runs[0]); err != nil {
			return nil, fmt.Errorf("repro: %w", err)
		}
		if prefix = ExplanationMoves(c, t.Moves); prefix == nil {
			res.Why = "The attempt's explanation does not replay in its world as a configuration file gives it"
			c = nil
		}
		res.Explained = len(t.Moves)
	}
	var moves []system.Move
	var configJSON []byte
	if t != nil {
		configJSON = t.ConfigJSON
	}
	specOut, protocol := in.Spec, in.Protocol
	if c != nil {
		moves = prefix
		if inv == model.NameEventuallyDrained {
			// Judged where the explanation ends, by no step: no change
			// of a row makes a step break it. A search from there finds
			// the loop, as check --from-trace on the trace does.
			loop, err := loopsFrom(in.Protocol, cfg, prefix)
			if err != nil {
				return nil, err
			}
			res.Loop = loop
			if loop {
				res.Why = "EventuallyDrained is judged where the explanation ends, not at a step: no step of the tables breaks it, and none of their changes is looked for. `handoffcheck check --from-trace trace.jsonl` explores from the trace's last state and finds a loop there that never drains (with `--repro DIR`, in the three forms)"
			} else {
				res.Why = "EventuallyDrained is judged where the explanation ends, not at a step. `handoffcheck check --from-trace trace.jsonl` explores from the trace's last state and finds a way to drain: the judge read a fact still in flight there as lost on the clock (a deadline armed after its sending ran out), which the untimed model does not"
			}
		} else if inv != "" {
			found, dev, st := findViolation(in, t.ConfigJSON, prefix, inv)
			res.search = st
			switch {
			case found == nil:
				res.Why = whyNone(in, inv, st)
			default:
				res.Reproduced, moves, configJSON = true, found.moves, found.configJSON
				res.Unlogged = unlogged(prefix, moves)
				var err error
				if cfg, err = system.ParseConfig(TraceFile+": config", configJSON); err != nil {
					return nil, fmt.Errorf("repro: %w", err)
				}
				if dev != nil {
					res.Deviation, res.DeviationRows, specOut, protocol = dev.Name, len(dev.Rows), dev.Spec, found.checker.Protocol()
				}
				c = found.checker
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	if c != nil {
		ce, story, err := replayStory(c, moves, res.Reproduced)
		if err != nil {
			return nil, err
		}
		var trace bytes.Buffer
		if err := checker.WriteTrace(&trace, configJSON, specOut, t.Run, c.Attempts(), ce); err != nil {
			return nil, err
		}
		files[TraceFile] = trace.Bytes()
		res.Steps = len(moves)
		v.Story, v.Trace, v.Run = story, true, cfg.Runs[0]
		if res.Reproduced {
			tin := Input{Protocol: protocol, Spec: specOut, SpecFile: in.SpecFile, Run: cfg.Runs[0], Command: in.Command}
			if res.Deviation != "" {
				raw, err := specOut.MarshalJSON()
				if err != nil {
					return nil, err
				}
				files[SpecOut] = raw
				tin.SpecFile = SpecOut
			}
			test, err := render(testTemplate, tin, &Result{Invariant: inv}, story, ce)
			if err != nil {
				return nil, err
			}
			files[TestFile] = test
		}
	}
	v.Meaning = meaning(inv)
	if res.Reproduced && c != nil {
		plan, err := DerivePlan(context.Background(), protocol, cfg, c.Run(), moves, inv, false)
		if err != nil {
			return nil, err
		}
		res.Plan = plan
		if err := plan.files(files); err != nil {
			return nil, err
		}
		if res.Scale, err = plan.atScale(context.Background(), protocol); err != nil {
			return nil, err
		}
		if err := res.Scale.files(files); err != nil {
			return nil, err
		}
		if plan.Result == nil {
			if res.Timed, err = FindTimed(context.Background(), protocol, c.Run(), inv); err != nil {
				return nil, err
			}
		}
		v.Clock = clockView{P: plan, S: res.Scale, T: res.Timed, Invariant: inv, Spec: in.SpecFile, Note: clockNote(plan, inv)}
		if res.Deviation != "" {
			v.Clock.Spec = SpecOut
		}
	}
	var readme bytes.Buffer
	if err := rejectionReadme.Execute(&readme, v); err != nil {
		return nil, err
	}
	// The template's branches end on different lines: one newline ends it.
	files[ReadmeFile] = append(bytes.TrimRight(readme.Bytes(), "\n"), '\n')
	for _, name := range []string{TraceFile, SpecOut, TestFile, ReadmeFile, SimFile, WorkloadFile, FaultsFile, ScaleSimFile, ScaleFaultsFile} {
		path := filepath.Join(dir, name)
		data, ok := files[name]
		if !ok {
			// A file an earlier reproduction left there would tell
			// another story than this README.
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			continue
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// clockNote says why the clock cannot judge an invariant that is judged
// where nothing is left to do, when its runs broke a timed property of
// giving up first.
func clockNote(p *Plan, inv string) string {
	if p.Result != nil || !quietInvariant(inv) || !slices.Contains(p.Other, cluster.NameBoundedGiveUp) {
		return ""
	}
	return "On the clock a side that gave up while it held something owes it back within the reclaim bound (" + cluster.NameBoundedGiveUp +
		"), and while its peer's outcome leaves it owing (" + cluster.NameBoundedReclaim + ") its request is never idle; so the clock judges the pages this side keeps by " +
		cluster.NameBoundedGiveUp + " at that bound (the same stranded pages, under the timed property's name), before " + inv + ", which it judges only on a request with nothing left to happen, can be"
}

// unlogged counts the moves that are not the explanation's: the rest
// are the explanation's in its order.
func unlogged(explanation, moves []system.Move) int {
	n, j := 0, 0
	for _, m := range moves {
		k := slices.Index(explanation[j:], m)
		if k < 0 {
			n++
			continue
		}
		j += k + 1
	}
	return n
}

// coreCommands are the actions that are commands to a worker's core,
// with the event the core answers one that finds nothing to act on: the
// core applies such a command only while what it acts on is there.
var coreCommands = map[string]string{
	"ReleaseSource":       "ReleaseNoOp",
	"ReleaseDestination":  "ReleaseNoOp",
	"StopPrefill":         "CancelNoOp",
	"WithdrawReservation": "CancelNoOp",
	"ActivateDestination": "ActivationNoOp",
}

// maxLoopStates bounds the search loopsFrom runs from an explanation's
// last state: one handoff's states from there are far fewer.
const maxLoopStates = 100_000

// loopsFrom reports whether a search of the explanation's world started
// after its moves (check --from-trace) finds EventuallyDrained: a state
// from which no drained state can be reached.
func loopsFrom(p *system.Protocol, cfg *system.Config, moves []system.Move) (bool, error) {
	rep, err := checker.Check(context.Background(), p, cfg, cfg.Runs[:1], checker.Limits{Workers: 1, Liveness: true, MaxStates: maxLoopStates, From: moves})
	if err != nil {
		return false, fmt.Errorf("repro: the search from the explanation: %w", err)
	}
	v := rep.Runs[0].Violation
	return v != nil && v.Violation != nil && v.Violation.Invariant == model.NameEventuallyDrained, nil
}

// whyNone says why no deviation reproduces a rejection: what the search
// tried and, for a fact that repeats an operation the worker's core
// applies once, why no table does.
func whyNone(in RejectionInput, inv string, st search) string {
	t := in.Rejection.Trace
	why := fmt.Sprintf("None of the %s (the explanation's rows and those of the states its side passes through: the fact's own operation added or put in place of an action, and every change `handoffcheck mutate` makes to a row; with two, the second a row the side reaches only under the first change) breaks %s along the attempt's explanation with at most %d unlogged steps more", st, inv, maxExtra)
	if inv != model.NameExactlyOnceRelease || t == nil || t.Router {
		return why
	}
	side, role := 0, spec.Source
	if t.Side == model.DestinationSide {
		side, role = 1, spec.Destination
	}
	for _, op := range operations[t.Kind][side] {
		noOp, ok := coreCommands[op]
		if !ok || in.Protocol.Spec().Table(role).EventIndex(noOp) < 0 {
			continue
		}
		return why + fmt.Sprintf(". Nor can any change of rows: %s is a command to the worker's core, which applies it only while what it ends is held; asked again, or before anything is held, it finds nothing and answers %s. What the log says ended so, the logging system's core ended without holding it: a fault of the core, not of the tables", op, noOp)
	}
	return why
}

// ExplanationMoves is the explanation's steps as they replay in the
// configuration's world, or nil. The judge steps a world a little apart
// from an explored one: it defers a prefill's admission to a step of its
// own (no fact says whether a worker queued it), where a world read from
// a file admits at dispatch when it can; and it lets a worker evict what
// a finished side keeps cached, which an explored world's eviction fault
// does before the side finishes. Those steps are left out where the world
// does not enable them; any other step it does not enable, or one that
// breaks an invariant, leaves no trace.
func ExplanationMoves(c *checker.Checker, moves []system.Move) []system.Move {
	s := c.Initial()
	var out []system.Move
	for _, m := range moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			if m.Kind == system.MvAdmit || m.Kind == system.Evict.Move() {
				continue
			}
			return nil
		}
		if r.Violation != nil {
			return nil
		}
		out = append(out, m)
	}
	return out
}

// reaches replays moves and reports whether every one is enabled and
// none violates an invariant before the last, which violates inv ("":
// none does). It returns the state after them.
func reaches(c *checker.Checker, moves []system.Move, inv string) (system.State, bool) {
	s := c.Initial()
	for i, m := range moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			return system.State{}, false
		}
		if r.Violation != nil {
			if inv == "" || i != len(moves)-1 || r.Violation.Invariant != inv {
				return system.State{}, false
			}
			return s, true
		}
	}
	return s, inv == ""
}

type violating struct {
	checker *checker.Checker
	moves   []system.Move
	// configJSON is the world the moves replay in: the explanation's,
	// with the faults the violating steps spend.
	configJSON []byte
}

// operations are the actions of the tables that do what a fact of a kind
// says its side did (the operation the judge performs for it), by side.
var operations = map[obslog.Kind][2][]string{
	obslog.RequestAccepted:     {{"AcceptRequest"}, {"AcceptRequest"}},
	obslog.PrefillDispatched:   {{"StartPrefill"}, nil},
	obslog.PrefillStopped:      {{"StopPrefill"}, nil},
	obslog.Registered:          {{"RegisterSource"}, {"RegisterDestination"}},
	obslog.Pinned:              {{"PinSource"}, nil},
	obslog.TransferStarted:     {{"StartPush"}, {"StartPull"}},
	obslog.Activated:           {nil, {"ActivateDestination"}},
	obslog.Stored:              {{"PublishCached"}, {"PublishStored"}},
	obslog.SourceReleased:      {{"ReleaseSource"}, nil},
	obslog.ReservationReleased: {nil, {"ReleaseDestination"}},
	obslog.DecodeReleased:      {nil, {"ReleaseActive"}},
	obslog.OutcomeReported:     {{"ReportSourceReleased", "ReportSourceAborted"}, {"ReportDecodeDone", "ReportDecodeFailed"}},
}

// widen gives a configuration one fault of each kind more than it has.
func widen(configJSON []byte) ([]byte, error) {
	var file map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &file); err != nil {
		return nil, err
	}
	faults := map[string]uint{}
	if raw, ok := file["faults"]; ok {
		if err := json.Unmarshal(raw, &faults); err != nil {
			return nil, err
		}
	}
	for _, k := range system.FaultKinds {
		if faults[k.Config] < system.MaxBudget {
			faults[k.Config]++
		}
	}
	file["faults"], _ = json.Marshal(faults)
	return json.Marshal(file) // keys sorted: deterministic
}

// tighten is the narrowest of the configurations the moves replay to inv
// in: the explanation's with the fault moves they take, or else the
// widened one.
func tighten(p *system.Protocol, configJSON, wide []byte, moves []system.Move, inv string) []byte {
	var file map[string]json.RawMessage
	if json.Unmarshal(configJSON, &file) != nil {
		return wide
	}
	faults := map[string]uint{}
	if raw, ok := file["faults"]; ok && json.Unmarshal(raw, &faults) != nil {
		return wide
	}
	for k := range faults {
		if f, ok := system.ParseFault(k); ok && f.Move() != 0 {
			delete(faults, k) // counted from the moves below
		}
	}
	for _, m := range moves {
		if f, ok := m.Kind.Spends(); ok && faults[f.String()] < system.MaxBudget {
			faults[f.String()]++
		}
	}
	file["faults"], _ = json.Marshal(faults)
	tight, err := json.Marshal(file)
	if err != nil {
		return wide
	}
	cfg, err := system.ParseConfig("tight", tight)
	if err != nil {
		return wide
	}
	c, err := checker.New(p, cfg, cfg.Runs[0])
	if err != nil {
		return wide
	}
	if _, ok := reaches(c, moves, inv); !ok {
		return wide
	}
	return tight
}

// addedActions are the changes of role's table that make one of the
// rows do one of the actions more (last, then first), rows in the order
// given, a row's other version of the same operation (an outcome for
// another) first; then those that make one do an action instead of
// another of its own.
func addedActions(sp *spec.Spec, role spec.Role, rows []int, actions []string) []spec.Mutant {
	t := sp.Table(role)
	var out, later []spec.Mutant
	seen := map[int]bool{}
	for _, i := range rows {
		if seen[i] || i >= len(t.Rows) {
			continue
		}
		seen[i] = true
		row := t.Rows[i]
		for _, a := range actions {
			// The operation instead of one of the row's actions (a step
			// that did it where the tables do another).
			for k, b := range row.Actions {
				if b == a {
					continue
				}
				m := sp.Clone()
				r := &m.Table(role).Rows[i]
				r.Actions = slices.Clone(r.Actions)
				r.Actions[k] = a
				if m.Validate() != nil {
					continue
				}
				x := spec.Mutant{Name: fmt.Sprintf("%s row %d (%s on %s) does %s instead of %s", role, i+1, strings.Join(row.From, "|"), row.Event, a, b),
					Operator: "replace-action", Role: role, Row: i, Spec: m}
				if slices.Contains(actions, b) {
					// Another version of the same operation (success for
					// failure): the likeliest deviation of this row.
					out = append(out, x)
				} else {
					later = append(later, x)
				}
			}
			for _, first := range []bool{false, true} {
				m := sp.Clone()
				r := &m.Table(role).Rows[i]
				if first {
					r.Actions = append([]string{a}, r.Actions...)
				} else {
					r.Actions = append(slices.Clone(r.Actions), a)
				}
				if m.Validate() != nil {
					continue
				}
				what := "also does " + a
				if slices.Contains(row.Actions, a) {
					what = "does " + a + " twice"
				}
				out = append(out, spec.Mutant{Name: fmt.Sprintf("%s row %d (%s on %s) %s", role, i+1, strings.Join(row.From, "|"), row.Event, what),
					Operator: "add-action", Role: role, Row: i, Spec: m})
			}
		}
	}
	return append(out, later...)
}

// minimizeMoves leaves out, one at a time from the end, the steps the
// violation does not need: the trace still reaches inv at its last step
// without them (delta debugging with single steps, which for traces this
// short finds what larger chunks would).
func minimizeMoves(c *checker.Checker, moves []system.Move, inv string) []system.Move {
	for i := len(moves) - 2; i >= 0; i-- {
		try := append(append([]system.Move(nil), moves[:i]...), moves[i+1:]...)
		if _, ok := reaches(c, try, inv); ok {
			moves = try
		}
	}
	return moves
}

// replayStory steps the moves and tells them in words; the last violates
// an invariant when violated is set.
func replayStory(c *checker.Checker, moves []system.Move, violated bool) (*checker.Counterexample, []string, error) {
	s := c.Initial()
	ce := &checker.Counterexample{Initial: c.DescribeState(&s)}
	var story []string
	for i, m := range moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			return nil, nil, fmt.Errorf("repro: step %d (%s) does not replay: %v", i+1, m, err)
		}
		lines := c.FormatStep(r)
		story = append(story, fmt.Sprintf("%d. %s", i+1, lines[0]))
		for _, l := range lines[1:] {
			story = append(story, "   "+strings.TrimSpace(l))
		}
		ce.Steps = append(ce.Steps, checker.TraceStep{Move: m, Fired: r.Fired, State: c.DescribeState(&s)})
		if r.Violation != nil {
			ce.Violation = r.Violation
			ce.Steps[len(ce.Steps)-1].Failed = true
		}
	}
	if violated != (ce.Violation != nil) {
		return nil, nil, errors.New("repro: the trace does not end as found")
	}
	return ce, story, nil
}

type rejectionView struct {
	Clock   clockView
	In      RejectionInput
	Res     *RejectionResult
	Run     system.Run
	Meaning string
	Story   []string
	Trace   bool
}

var rejectionReadme = withTimed("rejection", `# Reproduction of a rejected log{{if .Res.Invariant}}: {{.Res.Invariant}}{{end}}

**What broke.** The judge rejected the fact at {{.In.Rejection.File}}:{{.In.Rejection.Line}}{{if .In.Rejection.Attempt}} (attempt {{.In.Rejection.Attempt}}){{end}}:

    {{.In.Rejection.Fact}}

{{if .Res.Invariant}}It breaks {{.Res.Invariant}}: {{.In.Rejection.Detail}}.{{if .Meaning}} The invariant demands that {{.Meaning}}.{{end}}{{else}}{{.In.Rejection.Detail}}.{{end}}

Rejected by:

    {{.In.Command}}
{{- if .In.Rejection.Allowed}}

The tables allowed the attempt's processes to log instead:
{{range .In.Rejection.Allowed}}
    {{.}}{{end}}
{{- end}}

{{if .Res.Reproduced -}}
**The deviation.** No behavior of {{if .In.Spec}}the variant {{.In.SpecFile}}{{else}}the built-in tables{{end}} takes this fact.
{{- if .Res.Deviation}} The logging system behaved as tables with {{if eq .Res.DeviationRows 1}}one row{{else}}{{.Res.DeviationRows}} rows{{end}} changed:
`+"`{{.Res.Deviation}}`"+`; under them the attempt's explanation goes on to
break {{.Res.Invariant}}. Those tables are in `+"`spec.json`"+`, and the trace carries them.{{else}} The tables themselves reach {{.Res.Invariant}} from the attempt's explanation.{{end}}

**The run.** {{.Run.Name}} ({{.Run.Policy}}, engine {{.Run.Engine}}) in the world the judge
built for the attempt (its prefill and decode worker, one handoff);
{{.Res.Steps}} steps, from the explanation's {{.Res.Explained}} and the step that breaks {{.Res.Invariant}}
(the steps it does not need are left out{{if .Res.Unlogged}}; {{.Res.Unlogged}} {{if eq .Res.Unlogged 1}}step is{{else}}steps are{{end}} not the explanation's: unlogged, as the logs need not show them{{end}}).
{{- else if .Trace -}}
**No violating step.** {{if .Res.Why}}{{.Res.Why}}. {{end}}The trace is the attempt's
explanation, {{.Res.Steps}} steps in the world the judge built for it ({{.Run.Name}}, {{.Run.Policy}},
engine {{.Run.Engine}}){{if eq .Res.Invariant "EventuallyDrained"}}, to where the logs end.{{else}}; the next logged fact, the one rejected above, is one the tables
cannot take there{{if .In.Rejection.Allowed}}: they allow only what is listed above{{end}}.{{end}}
{{- else -}}
**No trace.** {{.Res.Why}}.
{{- end}}
{{- if .Trace}}

**The steps.**

{{range .Story}}    {{.}}
{{end}}
**The commands.**

    handoffcheck replay trace.jsonl          # the steps, judged one by one{{if .Res.Reproduced}}: exit 1 on the violation{{end}}
    handoffcheck explore trace.jsonl         # the steps in a browser; branch off at any step
    handoffcheck check --from-trace trace.jsonl   # what else can happen from there
{{- if .Res.Reproduced}}

`+"`repro_test.go`"+` replays `+"`trace.jsonl`"+` against {{if .Res.Deviation}}`+"`spec.json`"+`{{else}}the tables{{end}} and fails while they
allow these steps: copy this directory into the module (not under a
`+"`testdata`"+` directory, which go test skips) and run `+"`go test`"+` on it.{{if .Res.Deviation}} Once
the logging system's tables are fixed, put them in `+"`spec.json`"+`: the test then passes.{{end}}

{{template "timed" .Clock}}
{{template "live" .Clock}}
{{- end}}
{{- end}}
`)
