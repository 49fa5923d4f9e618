// Package repro turns a counterexample into a reproduction a person can
// read and a test that fails until the bug is fixed: a directory holding
// the trace (minimized to the handoffs the violation needs), a README that
// tells it in words with the commands to run, and a Go test that replays
// the trace against the tables.
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
	"text/template"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The files a reproduction directory holds.
const (
	TraceFile  = "trace.jsonl"
	ReadmeFile = "README.md"
	TestFile   = "repro_test.go"
)

// Input is a counterexample and what it was found with.
type Input struct {
	Protocol *system.Protocol
	// Spec is the variant's tables (nil: the built-in ones); SpecFile the
	// file they were read from, which the test reads again.
	Spec     *spec.Spec
	SpecFile string
	// ConfigJSON is the configuration as the search read it.
	ConfigJSON []byte
	Run        system.Run
	Found      *checker.Counterexample
	// Command is the command that found it, for the README.
	Command string
}

// Result says what was written.
type Result struct {
	Dir       string
	Invariant string
	// Steps and Handoffs are the reproduction's; HandoffsBefore the
	// configuration's before minimizing.
	Steps, Handoffs, HandoffsBefore int
	// Plan is the reproduction on the clock derived from the trace (its
	// files written when it reaches the invariant); Timed the first
	// timed scenario that breaks the invariant, looked for only when the
	// plan does not.
	Plan  *Plan
	Timed *Timed
	// Scale is the plan's incident at the default workload's scale (nil
	// without a plan).
	Scale *Scale
}

// Files lists the files written, in the order a reader takes them.
func (r *Result) Files() []string {
	out := []string{TraceFile, ReadmeFile, TestFile}
	if r.Plan != nil && r.Plan.Result != nil {
		out = append(out, SimFile, WorkloadFile, FaultsFile)
	}
	if r.Scale != nil {
		out = append(out, ScaleSimFile, ScaleFaultsFile)
	}
	return out
}

// Write writes the reproduction of in into dir (created if need be).
func Write(dir string, in Input) (*Result, error) {
	ce := in.Found
	if ce == nil || ce.Violation == nil {
		return nil, errors.New("repro: no violation to reproduce")
	}
	moves := movesOf(ce)
	cfgJSON, run, moves, nh, before, err := minimize(in, moves)
	if err != nil {
		return nil, err
	}
	cfg, err := system.ParseConfig(TraceFile+": config", cfgJSON)
	if err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	c, err := checker.New(in.Protocol, cfg, run)
	if err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	min, story, err := replay(c, moves, ce)
	if err != nil {
		return nil, err
	}
	plan, err := DerivePlan(context.Background(), in.Protocol, cfg, run, moves, ce.Violation.Invariant, len(ce.Loop) > 0)
	if err != nil {
		return nil, err
	}
	scale, err := plan.atScale(context.Background(), in.Protocol)
	if err != nil {
		return nil, err
	}
	var timed *Timed
	if plan.Result == nil {
		timed, err = FindTimed(context.Background(), in.Protocol, run, ce.Violation.Invariant)
		if err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var trace bytes.Buffer
	if err := checker.WriteTrace(&trace, cfgJSON, in.Spec, run.Name, c.Attempts(), min); err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Invariant: ce.Violation.Invariant, Steps: len(moves), Handoffs: nh, HandoffsBefore: before, Plan: plan, Timed: timed, Scale: scale}
	readme, err := render(readmeTemplate, in, res, story, min)
	if err != nil {
		return nil, err
	}
	test, err := render(testTemplate, in, res, story, min)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{TraceFile: trace.Bytes(), ReadmeFile: readme, TestFile: test}
	if err := plan.files(files); err != nil {
		return nil, err
	}
	if err := scale.files(files); err != nil {
		return nil, err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func movesOf(ce *checker.Counterexample) []system.Move {
	var out []system.Move
	for _, st := range append(slices.Clone(ce.Steps), ce.Loop...) {
		out = append(out, st.Move)
	}
	return out
}

// minimize keeps only the handoffs the trace moves (and only its run) in
// the configuration, renumbering the moves' handoffs, when the smaller
// configuration still reaches the same violation on the same steps; else
// it keeps the configuration as it was. A liveness trace is kept whole:
// its loop is a claim about every way out, which another world may not
// share.
func minimize(in Input, moves []system.Move) (cfgJSON []byte, run system.Run, out []system.Move, handoffs, before int, err error) {
	var file map[string]json.RawMessage
	if err := json.Unmarshal(in.ConfigJSON, &file); err != nil {
		return nil, system.Run{}, nil, 0, 0, fmt.Errorf("repro: the configuration is not a JSON object: %w", err)
	}
	var hs []json.RawMessage
	if err := json.Unmarshal(file["handoffs"], &hs); err != nil {
		return nil, system.Run{}, nil, 0, 0, fmt.Errorf("repro: the configuration's handoffs: %w", err)
	}
	before = len(hs)
	keep := in.ConfigJSON
	if len(in.Found.Loop) > 0 {
		return keep, in.Run, moves, before, before, nil
	}
	used := map[int8]int8{}
	var order []int8
	for _, m := range moves {
		if m.H >= 0 {
			if _, ok := used[m.H]; !ok {
				used[m.H] = -1
				order = append(order, m.H)
			}
		}
	}
	if len(order) == 0 || len(order) == len(hs) {
		return keep, in.Run, moves, before, before, nil
	}
	slices.Sort(order)
	var kept []json.RawMessage
	for i, h := range order {
		used[h] = int8(i)
		kept = append(kept, hs[h])
	}
	file["handoffs"], _ = json.Marshal(kept)
	// A worker's prefix hits are listed per handoff: the kept ones stay.
	var workers []map[string]json.RawMessage
	if err := json.Unmarshal(file["workers"], &workers); err != nil {
		return keep, in.Run, moves, before, before, nil
	}
	for _, w := range workers {
		var hits []json.RawMessage
		if json.Unmarshal(w["prefix_hit_tokens"], &hits) != nil || len(hits) != len(hs) {
			continue
		}
		var k []json.RawMessage
		for _, h := range order {
			k = append(k, hits[h])
		}
		w["prefix_hit_tokens"], _ = json.Marshal(k)
	}
	file["workers"], _ = json.Marshal(workers)
	runJSON := map[string]string{"name": in.Run.Name, "policy": in.Run.Policy.String(), "engine": in.Run.Engine.String()}
	file["runs"], _ = json.Marshal([]any{runJSON})
	small, _ := json.Marshal(file) // keys sorted: deterministic
	renumbered := make([]system.Move, len(moves))
	for i, m := range moves {
		if m.H >= 0 {
			m.H = used[m.H]
		}
		renumbered[i] = m
	}
	cfg, err := system.ParseConfig("minimized", small)
	if err != nil {
		return keep, in.Run, moves, before, before, nil
	}
	c, err := checker.New(in.Protocol, cfg, cfg.Runs[0])
	if err != nil {
		return keep, in.Run, moves, before, before, nil
	}
	if _, _, err := replay(c, renumbered, in.Found); err != nil {
		return keep, in.Run, moves, before, before, nil
	}
	return small, cfg.Runs[0], renumbered, len(order), before, nil
}

// replay steps the moves on a checker and checks they reach the
// counterexample's violation (its invariant, at its last step; for a
// liveness trace, the loop back to where it started without draining). It
// returns the counterexample on this checker and the steps told in words.
func replay(c *checker.Checker, moves []system.Move, want *checker.Counterexample) (*checker.Counterexample, []string, error) {
	s := c.Initial()
	ce := &checker.Counterexample{Initial: c.DescribeState(&s)}
	var story []string
	loopFrom := len(want.Steps)
	var loopKey system.Key
	drained := false
	for i, m := range moves {
		if len(want.Loop) > 0 && i == loopFrom {
			loopKey = c.Key(&s)
		}
		r, err := c.Apply(&s, m)
		if err != nil {
			return nil, nil, fmt.Errorf("repro: step %d (%s) does not replay: %v", i+1, m, err)
		}
		lines := c.FormatStep(r)
		story = append(story, fmt.Sprintf("%d. %s", i+1, lines[0]))
		for _, l := range lines[1:] {
			story = append(story, "   "+strings.TrimSpace(l))
		}
		st := checker.TraceStep{Move: m, Fired: r.Fired, State: c.DescribeState(&s)}
		if len(want.Loop) > 0 && i >= loopFrom {
			ce.Loop = append(ce.Loop, st)
			drained = drained || c.Drained(&s)
			continue
		}
		ce.Steps = append(ce.Steps, st)
		if r.Violation != nil {
			if i != len(moves)-1 || r.Violation.Invariant != want.Violation.Invariant {
				return nil, nil, fmt.Errorf("repro: step %d violates %s, not %s at the last step", i+1, r.Violation.Invariant, want.Violation.Invariant)
			}
			ce.Violation = r.Violation
			ce.Steps[len(ce.Steps)-1].Failed = true
		}
	}
	if len(want.Loop) > 0 {
		if c.Key(&s) != loopKey || drained {
			return nil, nil, errors.New("repro: the loop does not return to where it started without draining")
		}
		ce.Violation = want.Violation
	}
	if ce.Violation == nil {
		return nil, nil, fmt.Errorf("repro: the steps do not reach %s", want.Violation.Invariant)
	}
	return ce, story, nil
}

// meaning is what an invariant demands, from the registry.
func meaning(name string) string {
	for _, inv := range model.Invariants {
		if inv.Name == name {
			return inv.Meaning
		}
	}
	return ""
}

type view struct {
	Clock     clockView
	In        Input
	Res       *Result
	Detail    string
	Meaning   string
	Story     []string
	Loop      bool
	LoopFrom  int
	Generated bool
}

func render(t *template.Template, in Input, res *Result, story []string, ce *checker.Counterexample) ([]byte, error) {
	var b bytes.Buffer
	v := view{Clock: clockView{P: res.Plan, S: res.Scale, T: res.Timed, Invariant: res.Invariant, Spec: in.SpecFile}, In: in, Res: res, Detail: ce.Violation.Detail, Meaning: meaning(res.Invariant), Story: story,
		Loop: len(ce.Loop) > 0, LoopFrom: len(ce.Steps), Generated: in.Spec == nil}
	if err := t.Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// timedBlock says a reproduction's bug on the clock (a clockView), for
// every README that has one: the plan derived from the trace, or why
// there is none and the first timed scenario that breaks the invariant.
const timedBlock = `{{define "scalecost"}}{{.Requests}} request{{if ne .Requests 1}}s{{end}}, {{.Succeeded}} succeeded, {{.Failed}} failed,
{{.Cancelled}} were cancelled{{with .KeptGoing}}{{if .Requests}} and {{.Requests}} took no step after breaking an invariant{{end}}{{end}}; {{.FaultsStruck}} fault{{if ne .FaultsStruck 1}}s{{end}} struck; throughput {{printf "%.2f" .ThroughputRPS}} requests/s, TTFT p99
{{printf "%.1f" .TTFT.P99}} ms; stranded source KV {{printf "%.1f" .StrandedSourceBlockSeconds}} block-seconds (peak {{.StrandedSourcePeak}} blocks); held for
doomed attempts {{printf "%.1f" .StrandedBlockSeconds}} block-seconds; {{with .KeptGoing}}{{.InUseBlocks}} block{{if ne .InUseBlocks 1}}s{{end}} still in use at the end{{end}}.{{end}}{{define "timed"}}{{with .P}}{{if .Result}}{{with .Target}}**On the clock.** ` + "`sim.json`, `workload.jsonl` and `faults.jsonl`" + ` are these steps on the simulator's
clock: {{$.P.Summary}}. {{if $.P.KeepGoing}}{{with $.P.Result.Violation}}` + "`simulate`" + ` breaks {{.Invariant}} first, at {{ms .AtUS}} ms of virtual time on request {{.Request}}:
a bound on time, whose request goes on; going on past it (` + "`--keep-going`" + `), {{if $.P.NeverDrains}}the loop breaks {{$.Invariant}} as the clock
judges a loop that never drains, an hour of virtual time after the last arrival{{else}}the request breaks {{$.Invariant}} once
nothing is left to happen for it{{end}}{{end}}{{else}}` + "`simulate`" + ` breaks {{$.Invariant}} too{{end}}, at {{ms .AtUS}} ms of virtual time on request {{.Request}}:
{{.Detail}}.

    handoffcheck simulate --config sim.json --workload workload.jsonl --faults faults.jsonl{{if $.Spec}} --spec {{$.Spec}}{{end}}{{if $.P.KeepGoing}} --keep-going{{end}}
{{end}}{{with .Result.Summary}}
**The cost of the plan's run** (as ` + "`simulate`" + ` reports it, {{if $.P.KeepGoing}}to the end of the run{{else}}up to the violation,
which ends the run{{end}}): {{.Requests}} request{{if ne .Requests 1}}s{{end}}, {{.Succeeded}} succeeded, {{.Failed}} failed, {{.Cancelled}} cancelled;
stranded source KV {{printf "%.1f" .StrandedSourceBlockSeconds}} block-seconds (peak {{.StrandedSourcePeak}} blocks);
held for doomed attempts {{printf "%.1f" .StrandedBlockSeconds}} block-seconds.
{{end}}{{with $.S}}
**The cost at the default workload's scale.** The incident recurring under load:
the default workload ({{.Requests}} requests, what ` + "`simulate`" + ` runs when given none) on the
plan's cluster with {{.Config.Prefill.Workers}} prefill and {{.Config.Decode.Workers}} decode workers (its deadlines and durations
kept), and the plan's faults on one request in {{.Every}} ({{.Struck}} of them), each aimed at
the same phase of its request as the plan aims it (one placed by time, at the same
time after its request's arrival){{if .Restarts}}; the plan's {{.Restarts}} worker restart{{if ne .Restarts 1}}s are{{else}} is{{end}} left out (aimed
at a worker, not at a request's phase){{end}}. The simulator is deterministic, so these
figures are those of the command below. It keeps going past each violation
(` + "`--keep-going`" + `): a request that breaks an invariant takes no further step and keeps what
it holds, as a leak would (one that breaks a bound on time goes on), and the others go on around it. {{with .Result}}{{with .Violation}}It breaks {{.Invariant}} first at {{ms .AtUS}} ms of virtual time on
request {{.Request}}{{else}}It breaks nothing{{end}}{{with .Summary}}{{with .KeptGoing}}, {{.Total}} time{{if ne .Total 1}}s{{end}} in all ({{range $i, $c := .Violations}}{{if $i}}, {{end}}{{$c.Invariant}} {{$c.Count}}{{end}}){{if .Stopped}}, until {{.Stopped}}{{end}}{{end}}. Of the {{template "scalecost" .}}{{end}}{{end}}
{{if $.Spec}}The same command without ` + "`--spec`" + ` runs the built-in tables on the same workload and faults,
for the cost to the other requests (the plan's deadlines, tuned to this bug, may not suit them).
{{end}}
    handoffcheck simulate --config ` + ScaleSimFile + ` --faults ` + ScaleFaultsFile + `{{if $.Spec}} --spec {{$.Spec}}{{end}} --keep-going
{{end}}{{else}}**From the trace.** No plan on the clock derived from these steps reaches {{$.Invariant}}:
{{.Why}}.{{with $.Note}} {{.}}.{{end}}

{{end}}{{end}}{{with .T}}{{if .Scenario}}**On the clock.** The timed scenario ` + "`{{.Scenario}}`" + ` ({{.Policy}}) breaks
{{$.Invariant}} too, at {{printf "%.3f" .AtMS}} ms of virtual time on request {{.Request}}: {{.Detail}}.
By then {{.Requests}} requests had arrived; {{.Succeeded}} succeeded, {{.Failed}} failed and {{.Cancelled}} were cancelled.
The scenario's workload and faults on a cluster, with these tables:

    handoffcheck timeline --scenario {{.Scenario}} --policy {{.Policy}}{{if $.Spec}} --spec {{$.Spec}}{{end}} --out /tmp/{{.Scenario}}
{{else}}**On the clock.** {{if .Why}}No timed scenario was run: {{.Why}}.{{else}}None of the timed scenarios ({{range $i, $s := .Tried}}{{if $i}}, {{end}}{{$s}}{{end}}) breaks {{$.Invariant}}{{if .Other}} (some broke another invariant first: {{range $i, $s := .Other}}{{if $i}}, {{end}}{{$s}}{{end}}){{end}}: the order these steps take is one the clock does not reach in them.{{end}}
{{end}}{{end}}{{end}}{{define "live"}}{{with .P}}{{if and .KeepGoing .NeverDrains}}**Live.** The same three files run the steps over real processes, whose logs
` + "`conform`" + ` judges:

    handoffcheck live --config sim.json --workload workload.jsonl --faults faults.jsonl{{if $.Spec}} --spec {{$.Spec}}{{end}}

{{.LoopLiveNote}}
{{else if .KeepGoing}}**Live.** No live plan is derived from these steps: on the clock they break a bound on time first, and a
live run's logs are judged by their first violation.
{{else if .Result}}**Live.** The same three files run the steps over real processes, whose logs
` + "`conform`" + ` judges{{if .LiveClock}}, on the clock the processes share{{end}}:

    handoffcheck live --config sim.json --workload workload.jsonl --faults faults.jsonl{{if $.Spec}} --spec {{$.Spec}}{{end}}{{if .LiveClock}}{{with .LiveTimeScale}} --time-scale {{.}}{{end}} --clock-error {{.LiveClockError}}{{end}}

{{.LiveNote}}{{if .LiveClock}} {{.LiveClockNote}}{{end}}

Live logs order facts only within each process and along the messages
between them, and the judge explains them in any order those allow. Where
the violation rests on the order of two processes' steps that no message
ties (under these tables, a step one side takes without waiting for the
other), the judge finds an order that breaks nothing, or one in which
another invariant breaks first, and names that one.{{if .LiveClock}} Given the
clock error, it orders them by their stamps too, where they are further
apart than twice the error.{{end}}
{{else}}**Live.** No live plan is derived from these steps: there is no plan on the clock
to run. ` + "`handoffcheck live`" + ` runs the same tables over real processes.
{{end}}{{end}}{{end}}`

// clockView is what the timed block says: the timed reproduction, the
// invariant, and the tables' file for the command.
type clockView struct {
	P         *Plan
	S         *Scale
	T         *Timed
	Invariant string
	Spec      string
	// Note says more of why the clock does not reach the invariant.
	Note string
}

// withTimed parses a README template beside the timed block.
func withTimed(name, text string) *template.Template {
	funcs := template.FuncMap{"ms": workload.FormatMillis}
	return template.Must(template.Must(template.New(name).Funcs(funcs).Parse(timedBlock)).Parse(text))
}

var readmeTemplate = withTimed("readme", `# Reproduction: {{.Res.Invariant}}

**What broke.** {{.Res.Invariant}}: {{.Detail}}.
{{- if .Meaning}} The invariant demands that {{.Meaning}}.{{end}}

Found by:

    {{.In.Command}}

**The run.** {{.In.Run.Name}} ({{.In.Run.Policy}}, engine {{.In.Run.Engine}}), under
{{if .Generated}}the built-in tables{{else}}the variant {{.In.SpecFile}}{{end}};
{{.Res.Steps}} steps over {{if eq .Res.Handoffs 1}}one handoff{{else}}{{.Res.Handoffs}} handoffs{{end}}{{if ne .Res.Handoffs .Res.HandoffsBefore}} (the configuration had {{.Res.HandoffsBefore}}: the others play no part and are left out){{end}}.

**The steps.**{{if .Loop}} Steps {{.LoopFrom}} on loop back to the state after step {{.LoopFrom}} without ever draining.{{end}}

{{range .Story}}    {{.}}
{{end}}
**The commands.**

    handoffcheck replay trace.jsonl          # the steps, judged one by one: exit 1 on the violation
    handoffcheck explore trace.jsonl         # the steps in a browser; branch off at any step
    handoffcheck check --from-trace trace.jsonl   # what else can happen from there

`+"`repro_test.go`"+` replays `+"`trace.jsonl`"+` against the tables and fails while they
allow these steps: copy this directory into the module (not under a
`+"`testdata`"+` directory, which go test skips) and run `+"`go test`"+` on it. It
passes once the tables no longer reach {{.Res.Invariant}} this way.

{{template "timed" .Clock}}
{{template "live" .Clock}}`)

var testTemplate = template.Must(template.New("test").Parse(`package repro

// A reproduction of {{.Res.Invariant}}, found by:
//
//	{{.In.Command}}
//
// The test replays trace.jsonl against the tables and fails while they
// allow these steps; it passes once they do not (a step is no longer
// enabled, or none violates an invariant).

import (
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
{{- if not .Generated}}
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
{{- end}}
)

{{if not .Generated}}// specFile is the variant the trace was found under: the test judges the
// file as it is now.
const specFile = {{printf "%q" .In.SpecFile}}

{{end}}func TestRepro(t *testing.T) {
	data, err := os.ReadFile("trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := checker.ParseTrace("trace.jsonl", data)
	if err != nil {
		t.Fatal(err)
	}
{{- if .Generated}}
	proto := system.Generated()
{{- else}}
	raw, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Parse(specFile, raw)
	if err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(sp)
	if err != nil {
		t.Fatal(err)
	}
	proto, err := system.FromStepper(specFile, sp, it)
	if err != nil {
		t.Fatal(err)
	}
{{- end}}
	runs, err := checker.SelectRuns(tr.Config, []string{tr.Run}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := checker.New(proto, tr.Config, runs[0])
	if err != nil {
		t.Fatal(err)
	}
	s := c.Initial()
	var loopKey system.Key
	drained := false
	for i, m := range tr.Moves {
		if tr.LoopFrom > 0 && i == tr.LoopFrom {
			loopKey = c.Key(&s)
		}
		r, err := c.Apply(&s, m)
		if err != nil {
			t.Logf("step %d (%s) is no longer enabled: %v", i+1, m, err)
			return
		}
		if r.Violation != nil {
			t.Fatalf("step %d (%s) violates %s: %s", i+1, m, r.Violation.Invariant, r.Violation.Detail)
		}
		drained = drained || (tr.LoopFrom > 0 && i >= tr.LoopFrom && c.Drained(&s))
	}
	if tr.LoopFrom > 0 && !drained && c.Key(&s) == loopKey {
		t.Fatalf("steps %d-%d loop back to the state after step %d without draining: %s", tr.LoopFrom+1, len(tr.Moves), tr.LoopFrom, tr.Violation)
	}
}
`))
