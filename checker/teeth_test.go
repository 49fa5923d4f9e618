package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/steps"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// checkerFor builds the checker of one named run of a configuration.
func checkerFor(t *testing.T, p *system.Protocol, cfg *system.Config, name string) *Checker {
	t.Helper()
	c, err := New(p, cfg, runNamed(t, cfg, name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Step takes only a move the state enables: not the zero move, and not a
// well-formed move of the wrong moment. A replayed trace relies on it to
// refuse a step the system could not have taken.
func TestStep_RefusesMovesTheStateDoesNotEnable(t *testing.T) {
	c := checkerFor(t, system.Generated(), mustConfig(t, smallConfig), "vllm")
	s := c.Initial()
	for _, m := range []system.Move{{}, steps.Move(t, "reserve h=0"), {Kind: system.MvRoutePrefill, H: 0, Arg: 1}} {
		before := s
		if _, _, err := c.Step(&s, m, nil); err == nil || !strings.Contains(err.Error(), "not enabled") {
			t.Errorf("move %q on the initial state: err %v, want it refused", m, err)
		}
		if s != before {
			t.Errorf("a refused move %q changed the state", m)
		}
	}
	if _, _, err := c.Step(&s, system.Move{Kind: system.MvRoutePrefill, H: 0, Arg: 0}, nil); err != nil {
		t.Fatalf("routing to the prefill worker: %v", err)
	}
}

// The initial state of each role is the state the table marks initial,
// wherever the table lists it: a table whose states are listed in another
// order is the same protocol and explores the same number of states.
func TestInitial_IsTheMarkedStateWhereverItIsListed(t *testing.T) {
	reordered := spec.Default()
	for _, r := range []spec.Role{spec.Source, spec.Destination} {
		slices.Reverse(reordered.Table(r).States)
		if reordered.Table(r).States[0].Initial {
			t.Fatalf("%s: the initial state is still listed first", r)
		}
	}
	cfg := mustConfig(t, smallConfig)
	for _, run := range []string{"vllm", "sglang"} {
		want := checkerFor(t, system.Generated(), cfg, run).checkRun(context.Background(), Limits{Workers: 1}, nil)
		c := checkerFor(t, interpreted(t, reordered), cfg, run)
		s := c.Initial()
		for _, r := range []spec.Role{spec.Source, spec.Destination} {
			if got := c.Protocol().StateName(r, s.Role(r, 0)); got != reordered.Table(r).Initial() {
				t.Errorf("%s: %s starts in %s, want %s", run, r, got, reordered.Table(r).Initial())
			}
		}
		got := c.checkRun(context.Background(), Limits{Workers: 1}, nil)
		if got.Stats.States != want.Stats.States || got.Violation != nil || !got.Complete {
			t.Errorf("%s: reordered states explore %d states (violation %v), the built-in tables %d",
				run, got.Stats.States, got.Violation, want.Stats.States)
		}
	}
}

// slotBound is two handoffs on a decode worker with one request slot: the
// second activation waits for the first decode to end, and only the
// promote move gives it the slot.
const slotBound = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 8, "slots": 1, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 32, "headroom_tokens": 0}, {"prompt_tokens": 48, "headroom_tokens": 0}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {}
}`

// A request slot that binds: on an engine that takes the slot at
// activation, a handoff activated while the slot is taken runs once the
// slot is free, through promote, and every handoff drains.
// The promote move must be enabled somewhere and the exploration must end
// with no violation (a promote that does nothing leaves a request that
// never runs, which EventuallyDrained reports).
func TestSlots_PromoteRunsAWaitingActivation(t *testing.T) {
	cfg := mustConfig(t, slotBound)
	for _, run := range []string{"vllm", "sglang"} {
		c := checkerFor(t, system.Generated(), cfg, run)
		r := c.checkRun(context.Background(), Limits{Workers: 1, Liveness: true}, nil)
		if r.Violation != nil || !r.Complete {
			t.Fatalf("%s: %v (complete %v)", run, r.Violation, r.Complete)
		}
		// Find a state where promote is enabled by a breadth-first walk of
		// the moves, and take it: the waiting request gets the slot.
		found := false
		seen := map[system.Key]bool{}
		queue := []system.State{c.Initial()}
		for len(queue) > 0 && !found {
			s := queue[0]
			queue = queue[1:]
			var ms system.MoveSet
			c.Enabled(&s, &ms)
			for i := 0; i < ms.N; i++ {
				m := ms.M[i]
				next := s
				if _, v, err := c.Step(&next, m, nil); err != nil || v != nil {
					t.Fatalf("%s: %s: %v %v", run, m, err, v)
				}
				if m.Kind == system.MvPromote {
					x := &next.W.H[m.H]
					if !x.Running || s.W.H[m.H].Running {
						t.Fatalf("%s: promote did not give handoff %d the slot", run, m.H)
					}
					if next.W.W[x.Decode].SlotsUsed != s.W.W[x.Decode].SlotsUsed+1 {
						t.Fatalf("%s: promote did not count the slot", run)
					}
					found = true
					break
				}
				if k := c.Key(&next); !seen[k] {
					seen[k] = true
					queue = append(queue, next)
				}
			}
		}
		// An engine that takes the slot at reservation never activates a
		// request without one; the others activate into a waiting state.
		if slotFirst := c.World().Engine.Traits().SlotAtReservation; found == slotFirst {
			t.Fatalf("%s: promote enabled: %v, but the engine takes the slot at reservation: %v", run, found, slotFirst)
		}
	}
}

// A state is drained only when every placed record is terminal, whichever
// worker index the record is placed on (worker 0 included), and nothing is
// held: a record left waiting with nothing held is not drained.
func TestDrained_NeedsEveryPlacedRecordTerminal(t *testing.T) {
	decodeFirst := strings.Replace(strings.Replace(smallConfig,
		`{"role": "prefill", "capacity_blocks": 8},`, ``, 1),
		`"prefix_hit_tokens": [16]}`, `"prefix_hit_tokens": [16]},
    {"role": "prefill", "capacity_blocks": 8}`, 1)
	for i, js := range []string{smallConfig, decodeFirst} {
		cfg := mustConfig(t, js)
		c := checkerFor(t, system.Generated(), cfg, "vllm")
		if first := c.World().Workers[0].Role; first != []model.WorkerRole{model.PrefillWorker, model.DecodeWorker}[i] {
			t.Fatalf("configuration %d lists a %s worker first", i, first)
		}
		s := c.Initial()
		if !c.Drained(&s) {
			t.Fatalf("the initial state is not drained: %s", s.W.DescribeHeld())
		}
		for _, side := range []string{"source", "destination"} {
			placed := s
			if side == "source" {
				placed.W.H[0].Prefill = int8(c.World().PrefillWorkers()[0])
			} else {
				placed.W.H[0].Decode = int8(c.World().DecodeWorkers()[0])
			}
			if !placed.W.Drained() {
				t.Fatalf("placing a record alone holds something: %s", placed.W.DescribeHeld())
			}
			if c.Drained(&placed) {
				t.Errorf("workers %v: a %s record placed and not terminal counts as drained", cfg.World.Workers, side)
			}
		}
	}
}

// The Mermaid rendering of a liveness counterexample puts the loop in a
// loop block that closes, after the stem, and names the lane of every
// step: a restart of a decode worker is a note over the destination.
func TestMermaid_LivenessLoopAndLanes(t *testing.T) {
	c := rearmChecker(t)
	r := c.checkRun(context.Background(), Limits{Liveness: true, Workers: 1}, nil)
	if r.Violation == nil || len(r.Violation.Loop) == 0 {
		t.Fatalf("want a liveness counterexample with a loop, got %+v", r.Violation)
	}
	ce := r.Violation
	out := c.mermaidSequence(ce)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	open := slices.Index(lines, "    loop never drains")
	if open < 0 || strings.Count(out, "loop never drains") != 1 || lines[len(lines)-1] != "    end" {
		t.Fatalf("want one loop block closed at the end:\n%s", out)
	}
	// Everything before the loop block is the stem: as many route,
	// deliver, timer... lines as the stem has, so the block opens after
	// the last stem step's notes and before the first loop step's.
	before := strings.Join(lines[:open], "\n")
	after := strings.Join(lines[open:], "\n")
	if !strings.Contains(before, "VIOLATION EventuallyDrained") {
		t.Errorf("the step that enters the trap is not marked before the loop:\n%s", out)
	}
	if strings.Contains(after, "VIOLATION") {
		t.Errorf("a loop step is marked as the violation:\n%s", out)
	}

	// A decode worker's restart is drawn on the destination's lane, a
	// prefill worker's on the source's.
	for _, w := range []int{c.World().DecodeWorkers()[0], c.World().PrefillWorkers()[0]} {
		lane := "Destination"
		if c.World().Workers[w].Role == model.PrefillWorker {
			lane = "Source"
		}
		ce := &Counterexample{Violation: ce.Violation, Steps: []TraceStep{{Move: system.Move{Kind: system.Restart.Move(), Arg: int8(w)}}}}
		want := fmt.Sprintf("    Note over %s: worker %d restarts", lane, w)
		if out := c.mermaidSequence(ce); !strings.Contains(out, want) {
			t.Errorf("restart of worker %d: want %q in\n%s", w, want, out)
		}
	}
}

// A move of a kind outside the table (a corrupt trace, a bad fuzz input)
// still prints, by number, without its arguments: messages about bad
// input must never panic.
func TestMove_StringOfAnUnknownKind(t *testing.T) {
	for _, k := range []system.MoveKind{system.NumMoveKinds, system.NumMoveKinds + 1, 255} {
		m := system.Move{Kind: k, H: 1, Arg: 1}
		if got, want := m.String(), fmt.Sprintf("MoveKind(%d) h=1", uint8(k)); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if got := (system.Move{Kind: system.MvRoutePrefill, H: -1, Arg: 2}).String(); got != "route-prefill worker=2" {
		t.Errorf("a move about no handoff prints %q", got)
	}
}

// The mutation summary and its JSON count what was decided: undecided
// mutants apart, invariants of equal kills in name order, and the number
// of mutants checked.
func TestMutationSummary_CountsEveryKind(t *testing.T) {
	m := func(name string) spec.Mutant { return spec.Mutant{Name: name, Operator: spec.Operators[0]} }
	results := []mutantResult{
		{Mutant: m("a"), Checked: true, Killed: true, Invariant: "Zeta", Check: "z"},
		{Mutant: m("b"), Checked: true, Killed: true, Invariant: "Alpha", Check: "a1"},
		{Mutant: m("c"), Checked: true, Bounded: true},
		{Mutant: m("d"), Checked: true},
		{Mutant: m("e")},
	}
	got := mutationSummary(results)
	for _, want := range []string{
		"mutation score: 2/4 mutants killed (50.0%), 1 undecided (an exploration hit a bound)\n",
		"killed by:\n  Alpha                          1\n       1  a1\n  Zeta                           1\n       1  z\n",
		"survivors (1): each is an equivalent change or a gap in what is checked:\n  d\n",
		"interrupted: 1 of 5 mutants not checked; the score covers the 4 checked\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	js, err := mutationJSON(results)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Killed, Checked, Total int
		Interrupted            bool
	}
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	if out.Killed != 2 || out.Checked != 4 || out.Total != 5 || !out.Interrupted {
		t.Errorf("JSON counts %+v, want 2 killed, 4 checked, 5 in all, interrupted", out)
	}
}

// A liveness loop of a single move (a timer that re-arms itself) is still
// a loop: the trace file marks where it starts.
func TestWriteTrace_OneMoveLoop(t *testing.T) {
	cfg := mustConfig(t, smallConfig)
	c := checkerFor(t, system.Generated(), cfg, "vllm")
	ce := &Counterexample{
		Violation: &model.Violation{Invariant: model.NameEventuallyDrained},
		Steps:     []TraceStep{{Move: system.Move{Kind: system.MvRoutePrefill, H: 0, Arg: 0}}},
		Loop:      []TraceStep{{Move: system.Move{Kind: system.MvTimer, H: 0, Arg: int8(model.TimerReservation)}}},
	}
	var b strings.Builder
	if err := WriteTrace(&b, []byte(smallConfig), nil, "vllm", c.Attempts(), ce); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace("t.jsonl", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if tr.LoopFrom != 1 || len(tr.Moves) != 2 {
		t.Errorf("loop_from %d over %d moves, want 1 over 2:\n%s", tr.LoopFrom, len(tr.Moves), b.String())
	}
}

// eachState explores a run breadth-first and calls visit on every
// reachable state until it returns true (found).
func eachState(t *testing.T, c *Checker, visit func(*system.State) bool) bool {
	t.Helper()
	seen := map[system.Key]bool{}
	queue := []system.State{c.Initial()}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if visit(&s) {
			return true
		}
		var ms system.MoveSet
		c.Enabled(&s, &ms)
		for i := 0; i < ms.N; i++ {
			next := s
			if _, _, err := c.Step(&next, ms.M[i], nil); err != nil {
				t.Fatal(err)
			}
			if k := c.Key(&next); !seen[k] {
				seen[k] = true
				queue = append(queue, next)
			}
		}
	}
	return false
}

// findState returns the first reachable state, breadth-first, that
// satisfies want.
func findState(t *testing.T, c *Checker, want func(*system.State) bool) system.State {
	t.Helper()
	var found system.State
	if !eachState(t, c, func(s *system.State) bool {
		if want(s) {
			found = *s
			return true
		}
		return false
	}) {
		t.Fatal("no reachable state has what the test needs")
	}
	return found
}

// A fact delivered (or duplicated) to a terminal record may change nothing
// but the channel it was taken from: judgeStep, which every step of the
// explorer goes through, reports AttemptIsolation with the check that
// failed, for a delivery and a duplicate alike, and nothing for a clean one.
func TestJudgeStep_AttemptIsolation(t *testing.T) {
	c := checkerFor(t, system.Generated(), mustConfig(t, smallConfig), "vllm")
	to := model.DestinationSide
	before := findState(t, c, func(s *system.State) bool {
		return c.Terminal(s, spec.Destination, 0) && s.W.H[0].Ch[to].N > 0
	})
	msg := before.W.H[0].Ch[to].M[0]
	deliver := system.Move{Kind: system.MvDeliver, H: 0, Arg: int8(to), Msg: msg}
	dup := system.Move{Kind: faultMove(t, "duplicate"), H: 0, Arg: int8(to), Msg: msg}
	// The step that applies a delivery to the finished record says it is
	// stale (Journal.Stale), and only such a step is judged here.
	for _, m := range []system.Move{deliver, dup} {
		after := before
		tx := model.Tx{W: &after.W}
		c.ApplyTx(&after, &tx, m, nil, false)
		if !tx.J.Stale || tx.J.Fired()&model.TrigStaleDelivery == 0 {
			t.Errorf("%s to the finished %s: the step's journal does not say it is stale", m, to)
		}
	}
	j := model.Journal{Stale: true}
	for _, tc := range []struct {
		name   string
		m      system.Move
		change func(*system.State)
		check  string
	}{
		{"clean delivery", deliver, func(s *system.State) { s.W.H[0].Ch[to].Take(0) }, ""},
		{"clean duplicate", dup, func(s *system.State) {}, ""},
		{"delivery that frees a block", deliver, func(s *system.State) { s.W.H[0].Ch[to].Take(0); s.W.W[1].Free++ }, "a stale fact to the %s changed the world"},
		{"duplicate that frees a block", dup, func(s *system.State) { s.W.W[1].Free++ }, "a duplicate of a stale fact changed the world"},
		{"delivery that moves a machine", deliver, func(s *system.State) { s.W.H[0].Ch[to].Take(0); s.Src[0]++ }, "a stale fact changed a role machine"},
	} {
		after := before
		tc.change(&after)
		v := c.JudgeStep(&before, &after, &j, tc.m)
		got := ""
		if v != nil {
			got = v.Check
			if v.Invariant != model.NameAttemptIsolation {
				t.Errorf("%s: %s fired", tc.name, v.Invariant)
			}
		}
		if got != tc.check {
			t.Errorf("%s: check %q, want %q", tc.name, got, tc.check)
		}
	}
}

// The memory a process may use is the machine's unless a control group
// allows less: a smaller cgroup limit wins, "max" and a larger one do not,
// and with no meminfo the cgroup limit alone is the answer.
func TestMachineMemory_CgroupLimitWins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	meminfo := write("meminfo", "MemFree:  100 kB\nMemTotal:       2048 kB\nSwapTotal: 0 kB\n")
	for _, tc := range []struct {
		name   string
		limits []string
		want   uint64
	}{
		{"no cgroup", nil, 2 << 20},
		{"unlimited", []string{write("max", "max\n")}, 2 << 20},
		{"larger", []string{write("large", "4294967296\n")}, 2 << 20},
		{"smaller", []string{write("small", "1048576\n")}, 1 << 20},
		{"smallest of two", []string{write("a", "1572864\n"), write("b", "1048576\n")}, 1 << 20},
		{"missing file", []string{dir + "/none"}, 2 << 20},
		{"zero is no limit", []string{write("zero", "0\n")}, 2 << 20},
		{"one byte", []string{write("one", "1\n")}, 1},
	} {
		if got := machineMemoryFrom(meminfo, tc.limits...); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := machineMemoryFrom(dir+"/none", write("only", "1048576\n")); got != 1<<20 {
		t.Errorf("no meminfo, a cgroup limit: %d", got)
	}
	if got := machineMemoryFrom(dir + "/none"); got != 0 {
		t.Errorf("nothing known: %d, want 0", got)
	}
	// Without /proc the runtime's own figure stands in: it holds at least
	// the heap this test runs on, and what it gave back to the system is
	// not counted.
	if got := residentFromRuntime(); got < 1<<20 {
		t.Errorf("the runtime says it holds %d bytes", got)
	}
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if got := residentFromRuntime(); ms.HeapReleased > 1<<20 && got >= ms.Sys {
		t.Errorf("the runtime's figure %d counts what it released (%d of %d obtained)", got, ms.HeapReleased, ms.Sys)
	}
}

// A walk takes at most Steps moves, and a run interrupted before any walk
// ran reports no walk at all (not walks it did not make).
func TestWalk_StepBoundAndInterruptBeforeStart(t *testing.T) {
	c := checkerFor(t, system.Generated(), mustConfig(t, twoByTwo), "vllm")
	// Seed 3 is deterministic: a walk or two end early (nothing they may
	// take is enabled, they stop), the rest take exactly four moves; a
	// fifth move anywhere would pass 80.
	for sched, want := range map[schedule]int64{scheduleUniform: 78, schedulePositions: 79, schedulePCT: 78} {
		r := c.walk(context.Background(), walkOptions{Seed: 3, Walks: 20, Steps: 4, sched: sched, Workers: 2})
		if r.Walks != 20 || r.Moves != want || r.Violation != nil {
			t.Errorf("%s: 20 walks of at most 4 steps: %d walks, %d moves (want %d), violation %v", sched.name(), r.Walks, r.Moves, want, r.Violation)
		}
		// The walks that stopped at the bound took four moves each; the
		// others stopped because nothing was enabled.
		st := r.stats
		if short := 20 - st.Ended[endStepBound]; st.Ended[endNothingEnabled] != short || st.Ended[endViolation] != 0 ||
			int64(4*st.Ended[endStepBound]) > r.Moves || r.Moves-int64(4*st.Ended[endStepBound]) > int64(3*short) {
			t.Errorf("%s: %d moves, walks ended %v", sched.name(), r.Moves, st.Ended)
		}
		for i, n := range st.Lengths {
			if n > 4 {
				t.Errorf("%s: walk %d took %d moves", sched.name(), i, n)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := c.walk(ctx, walkOptions{Seed: 3, Walks: 20, Steps: 4, Workers: 2})
	if !r.Interrupted || r.Walks != 0 || r.Moves != 0 || r.Distinct != 0 || r.Failing != -1 {
		t.Errorf("interrupted before the first walk: %+v", r)
	}
}

// The loop of a liveness counterexample shows movement: where a trapped
// state can both stay (a timer re-arming itself) and move on, the loop
// takes the way that moves, so that it says what keeps the trap going.
// (In the rearm-reservation variant the self-loop is all there is.)
func TestLiveness_LoopPrefersMovementOverASelfLoop(t *testing.T) {
	for _, tc := range []struct {
		v    uint32
		succ []uint32
		want uint32
	}{
		{5, []uint32{5, 7, 9}, 7},
		{5, []uint32{7, 5}, 7},
		{5, []uint32{5}, 5},
		{5, []uint32{9}, 9},
	} {
		if got := loopStep(tc.v, tc.succ); got != tc.want {
			t.Errorf("from %d with successors %v the loop takes %d, want %d", tc.v, tc.succ, got, tc.want)
		}
	}
}

// A run whose levels all fit under --max-memory but whose liveness check
// would not has explored every state, yet is not complete: it says that
// EventuallyDrained was not judged, with max-memory as its stop reason. The checks before each level
// and before liveness read resident memory through readResident: the test
// counts those reads on a run without pressure, then makes only the last
// one (the liveness check's) read as full.
func TestExplore_LivenessNotJudgedWhenItsGraphWouldNotFit(t *testing.T) {
	if residentBytes() == 0 {
		t.Skip("no resident-memory reading on this system")
	}
	c := checkerFor(t, system.Generated(), mustConfig(t, smallConfig), "vllm")
	bound := int64(residentBytes()) + 1<<30 // the watcher, on real memory, never stops it
	old := readResident
	t.Cleanup(func() { readResident = old })
	reads := 0
	readResident = func() uint64 { reads++; return 0 }
	full := c.checkRun(context.Background(), Limits{Workers: 1, Liveness: true, MaxMemory: bound}, nil)
	if !full.Complete || full.StopReason != "" || reads < 2 {
		t.Fatalf("without pressure: complete %v, stop %q, %d reads", full.Complete, full.StopReason, reads)
	}
	last := reads
	reads = 0
	readResident = func() uint64 {
		reads++
		if reads == last {
			return uint64(bound)
		}
		return 0
	}
	r := c.checkRun(context.Background(), Limits{Workers: 1, Liveness: true, MaxMemory: bound}, nil)
	if r.Complete || r.StopReason != stopMaxMemory || !strings.Contains(r.StopDetail, "EventuallyDrained not judged") {
		t.Fatalf("stop %q (%s), want max-memory with EventuallyDrained not judged", r.StopReason, r.StopDetail)
	}
	if r.Stats.States != full.Stats.States || r.Violation != nil {
		t.Errorf("the safety part changed: %d states (want %d), violation %v", r.Stats.States, full.Stats.States, r.Violation)
	}
}

// A transfer fails, as a fault, only where its runner can be told: in a
// variant whose pulling destination has no row for TransferFailed while
// it receives, the fault is never offered there, though the transfer
// could still succeed.
func TestFaults_TransferFailureOnlyWhereTheRunnerCanBeTold(t *testing.T) {
	s := spec.Default()
	tb := s.Table(spec.Destination)
	tb.Rows = slices.DeleteFunc(tb.Rows, func(r spec.Row) bool {
		return r.Event == "TransferFailed" && slices.Contains(r.From, "Receiving")
	})
	js := strings.Replace(smallConfig, `"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, `"faults": {"transfer_failure": 1}`, 1)
	c := checkerFor(t, interpreted(t, s), mustConfig(t, js), "vllm")
	receiving := uint8(c.Protocol().Spec().Destination.StateIndex("Receiving"))
	pulls := 0
	eachState(t, c, func(st *system.State) bool {
		if st.Dst[0] != receiving || st.W.H[0].Xfer != model.XferRunning {
			return false
		}
		pulls++
		var ms system.MoveSet
		c.Enabled(st, &ms)
		for i := 0; i < ms.N; i++ {
			if ms.M[i].Kind.String() == "fail-transfer" {
				t.Errorf("a transfer failure is offered to a receiving destination that has no row for it:\n%s", strings.Join(c.DescribeState(st), "\n"))
				return true
			}
		}
		return false
	})
	if pulls == 0 {
		t.Fatal("no reachable state has the destination receiving a running transfer")
	}
}

// Every move is drawn on the lane of whoever it happens to: a delivery
// arrives at its side, scheduler facts of the decode worker over the
// destination, an abort or a restart notice over the side it concerns.
func TestMermaid_EveryMoveOnItsLane(t *testing.T) {
	c := checkerFor(t, system.Generated(), mustConfig(t, smallConfig), "vllm")
	dst, src := int8(model.DestinationSide), int8(model.SourceSide)
	for _, tc := range []struct {
		m    system.Move
		want string
	}{
		{system.Move{Kind: system.MvDeliver, H: 0, Arg: dst, Msg: model.MsgReaderCompleted}, "    Transport->>Destination: h0 ReaderCompleted\n"},
		{system.Move{Kind: system.MvDeliver, H: 1, Arg: src, Msg: model.MsgReaderCompleted}, "    Transport->>Source: h1 ReaderCompleted\n"},
		{system.Move{Kind: faultMove(t, "duplicate"), H: 0, Arg: src, Msg: model.MsgReaderCompleted}, "    Transport->>Source: h0 ReaderCompleted (duplicate, kept in flight)\n"},
		{steps.Move(t, "lose h=0 to=destination msg=ReaderCompleted"), "    Transport-xDestination: h0 ReaderCompleted lost\n"},
		{steps.Move(t, "reserve h=0"), "    Note over Destination: reserve h=0\n"},
		{system.Move{Kind: system.MvPromote, H: 0}, "    Note over Destination: promote h=0\n"},
		{steps.Move(t, "decode-finish h=0"), "    Note over Destination: decode-finish h=0\n"},
		{system.Move{Kind: system.MvCompute, H: 0}, "    Note over Source: compute h=0\n"},
		{steps.Move(t, "abort h=0 side=destination"), "    Note over Destination: abort h=0 side=destination\n"},
		{steps.Move(t, "abort h=0 side=source"), "    Note over Source: abort h=0 side=source\n"},
		{steps.Move(t, "peer-restarted h=0 side=destination"), "    Note over Destination: peer-restarted h=0 side=destination\n"},
		{steps.Move(t, "deferred h=0 side=destination"), "    Note over Destination: deferred h=0 side=destination\n"},
		{steps.Move(t, "deferred h=0 side=source"), "    Note over Source: deferred h=0 side=source\n"},
		{system.Move{Kind: system.MvTimer, H: 0, Arg: int8(model.TimerLease)}, "    Note over Source: timer h=0 timer=lease\n"},
		{system.Move{Kind: system.MvTimer, H: 0, Arg: int8(model.TimerReservation)}, "    Note over Destination: timer h=0 timer=reservation\n"},
		{steps.Move(t, "free-background worker=1"), "    Note over Destination: free-background worker=1\n"},
		{system.Move{Kind: system.MvTransfer, H: 0}, "    Source-->>Destination: h0 KV transfer completes\n"},
		{steps.Move(t, "fail-transfer h=1"), "    Source-->>Destination: h1 KV transfer fails\n"},
	} {
		out := c.mermaidSequence(&Counterexample{Violation: &model.Violation{}, Steps: []TraceStep{{Move: tc.m}}})
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: want %q in\n%s", tc.m, tc.want, out)
		}
	}
}

// "symmetry": false turns the reduction off (it is on by default), and
// the problems of a file are listed in line order, whatever order they
// were found in: here the fault budget, judged last, sits on the first
// line after the schema.
func TestParseConfig_SymmetryFlagAndProblemsInLineOrder(t *testing.T) {
	on := mustConfig(t, smallConfig)
	off := mustConfig(t, strings.Replace(smallConfig, `"schema": "handoffcheck.config/v1",`, `"schema": "handoffcheck.config/v1", "symmetry": false,`, 1))
	if !on.Symmetry || off.Symmetry {
		t.Errorf("symmetry: default %v, after \"symmetry\": false %v", on.Symmetry, off.Symmetry)
	}
	bad := strings.Replace(strings.Replace(smallConfig,
		`"schema": "handoffcheck.config/v1",`, `"schema": "handoffcheck.config/v1",
  "faults": {"loss": 99},`, 1),
		`"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, `"renewal": true`, 1)
	bad = strings.Replace(bad, `{"role": "prefill", "capacity_blocks": 8}`, `{"role": "router", "capacity_blocks": 8}`, 1)
	_, err := system.ParseConfig("bad.json", []byte(bad))
	if err == nil {
		t.Fatal("a bad budget and a bad role are accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "bad.json:3: ") || !strings.Contains(lines[1], "loss") ||
		!strings.Contains(lines[2], `role "router"`) {
		t.Errorf("want the budget (line 3) before the role, got:\n%s", err)
	}
}

// A walk report interrupted before its only run started says so: one run
// not run is an interrupted report (exit code 3), not a clean one.
func TestCheck_WalksOneRunNotRunIsInterrupted(t *testing.T) {
	cfg := mustConfig(t, smallConfig)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Check(ctx, system.Generated(), cfg, cfg.Runs[:1], Limits{Seed: 1, Walks: 5, Steps: 10, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || len(rep.NotRun) != 1 || len(rep.Runs) != 0 {
		t.Errorf("interrupted %v, not run %v, runs %d: want interrupted with its one run not run", rep.Interrupted, rep.NotRun, len(rep.Runs))
	}
}

// Without lease renewal the heartbeat never fires, and every other timer
// still does: the lease, the bootstrap and the reservation deadlines are
// what end a wait when nothing else can.
func TestTimers_RenewalOffSilencesOnlyTheHeartbeat(t *testing.T) {
	timersFired := func(js string) map[model.Timer]bool {
		cfg := mustConfig(t, js)
		fired := map[model.Timer]bool{}
		for _, run := range []string{"vllm", "sglang"} {
			c := checkerFor(t, system.Generated(), cfg, run)
			eachState(t, c, func(s *system.State) bool {
				var ms system.MoveSet
				c.Enabled(s, &ms)
				for i := 0; i < ms.N; i++ {
					if m := ms.M[i]; m.Kind == system.MvTimer {
						fired[model.Timer(m.Arg)] = true
					}
				}
				return false
			})
		}
		return fired
	}
	faults := `"faults": {"loss": 1, "early_timer": 1}`
	on := timersFired(strings.Replace(smallConfig, `"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, faults, 1))
	off := timersFired(strings.Replace(smallConfig, `"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, faults+`, "renewal": false`, 1))
	// With renewal on every timer fires somewhere: the runs reach them all.
	for tm := model.Timer(0); tm < model.NumTimers; tm++ {
		if !on[tm] {
			t.Errorf("the %s timer never fired with renewal on", tm)
		}
		if want := tm != model.TimerHeartbeat; off[tm] != want {
			t.Errorf("renewal off: the %s timer fired %v, want %v", tm, off[tm], want)
		}
	}
}

// A worker's background load starts held when it has any, unless the file
// says otherwise: one block is enough.
func TestParseConfig_BackgroundStartsHeldByDefault(t *testing.T) {
	for _, tc := range []struct {
		worker string
		want   bool
	}{
		{`"background_blocks": 1`, true},
		{`"background_slots": 1`, true},
		{`"background_blocks": 1, "background_at_start": false`, false},
		{`"background_blocks": 0`, false},
	} {
		js := strings.Replace(smallConfig, `"prefix_hit_tokens": [16]}`, `"prefix_hit_tokens": [16], `+tc.worker+`}`, 1)
		if got := mustConfig(t, js).World.Workers[1].BackgroundAtStart; got != tc.want {
			t.Errorf("%s: background at start %v, want %v", tc.worker, got, tc.want)
		}
	}
}

// A transfer profile whose groups are wrong is reported once, as what is
// wrong with its groups: the world's own checks, which would then also
// find no usable profile, are not run on it.
func TestParseConfig_BadGroupsReportedOnce(t *testing.T) {
	groups, err := os.ReadFile("../testdata/groups/broken-missing-window.json")
	if err != nil {
		t.Fatal(err)
	}
	js := strings.Replace(smallConfig, `"transfer": {"bytes_per_token": 131072, "block_size_tokens": 16}`,
		`"transfer": {"groups": `+string(groups)+`}`, 1)
	_, err = system.ParseConfig("g.json", []byte(js))
	if err == nil {
		t.Fatal("a groups profile without its window is accepted")
	}
	lines := strings.Split(err.Error(), "\n")[1:]
	if len(lines) != 1 || !strings.Contains(lines[0], "transfer groups: ") {
		t.Errorf("want one problem, about the groups; got:\n%s", err)
	}
}

// Every timer, message and side reads back from its step syntax: the first
// of each list as much as the others.
func TestParseMove_EveryTimerMessageAndSide(t *testing.T) {
	var moves []system.Move
	for tm := model.Timer(0); tm < model.NumTimers; tm++ {
		moves = append(moves, system.Move{Kind: system.MvTimer, H: 1, Arg: int8(tm)})
	}
	for m := model.Msg(1); m < model.NumMsgs; m++ {
		moves = append(moves, system.Move{Kind: system.MvDeliver, H: 0, Arg: int8(model.SourceSide), Msg: m})
	}
	moves = append(moves, steps.Move(t, "abort h=2 side=source"), steps.Move(t, "abort h=2 side=destination"),
		steps.Move(t, "deferred h=3 side=source"), steps.Move(t, "deferred h=3 side=destination"),
		system.Move{Kind: system.MvRoutePrefill, H: 0, Arg: 0})
	for _, m := range moves {
		got, err := system.ParseMove(m.String(), nil)
		if err != nil || got != m {
			t.Errorf("%q read back as %q (%v)", m, got, err)
		}
	}
}

// Mutate counts its progress up to the number of mutants, and each
// mutant's result adds up the states its runs explored.
func TestMutate_ProgressAndStates(t *testing.T) {
	cfg := mustConfig(t, smallConfig)
	mutants := spec.Mutants(spec.Default(), spec.Operators)[:3]
	var seen []int
	results := Mutate(context.Background(), cfg, mutants, Limits{Liveness: true}, 1, func(done, total int) {
		if total != 3 {
			t.Errorf("progress out of %d, want 3", total)
		}
		seen = append(seen, done)
	})
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Errorf("progress %v, want 1, 2, 3", seen)
	}
	for _, r := range results {
		least := 1
		if !r.Killed {
			// A survivor was explored by every run: at least the states
			// of the smallest run of the built-in tables.
			least = 137
		}
		if !r.Checked || r.States < least {
			t.Errorf("%s: checked %v, %d states", r.Mutant.Name, r.Checked, r.States)
		}
	}
}

// Two roles, one topology: the decode role's own profile in a
// configuration is checked against the prefill role's, and a pair that
// cannot hand off is refused at the line of transfer.decode with a
// message that names both roles.
func TestParseConfig_DecodeProfile(t *testing.T) {
	data, err := os.ReadFile("../testdata/configs/grouped-pair.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := system.ParseConfig("grouped-pair.json", data)
	if err != nil {
		t.Fatal(err)
	}
	w := c.World
	if err := w.Prepare(); err != nil {
		t.Fatal(err)
	}
	if w.DecodeGrouped == nil || w.DecodeGrouped.VLLMVersion != "0.31.0" || w.DecodeGrouped.Role != "decode" {
		t.Fatalf("decode profile %+v, want the 0.31.0 decode role's", w.DecodeGrouped)
	}
	// The source's quote is the 0.32.0 prefill's, checkpoints and all
	// (docs/lifecycle.md section 6): 13 computed, 4 checkpoint, 9 pinned.
	if q := w.SourceQuote(0); q.ComputeBlocks != 13 || q.CheckpointBlocks != 4 || q.PinnedBlocks != 9 {
		t.Errorf("source quote computes %d (%d checkpoint), pins %d; want 13 (4), 9", q.ComputeBlocks, q.CheckpointBlocks, q.PinnedBlocks)
	}
	// The destination's is the decode role's: the 4096-token hit locks
	// floor(4096/2048) = 2 attn blocks and reserves 2 + 4 + 1 = 7.
	if q := w.DestQuote(0, 1, false); q.ReservedBlocks != 7 || q.LockedBlocks != 2 || q.CheckpointBlocks != 0 {
		t.Errorf("destination quote reserves %d, locks %d, %d checkpoint; want 7, 2, 0 (the decode role's 0.31.0 profile)", q.ReservedBlocks, q.LockedBlocks, q.CheckpointBlocks)
	}

	glm, err := os.ReadFile("../testdata/groups/glm-hybrid.json")
	if err != nil {
		t.Fatal(err)
	}
	wide, err := os.ReadFile("../testdata/groups/glm-hybrid-window-256.json")
	if err != nil {
		t.Fatal(err)
	}
	linear := `"bytes_per_token": 131072, "block_size_tokens": 16`
	for _, tc := range []struct {
		name, transfer, want string
	}{
		{"grouped_prefill_linear_decode", `{"groups": ` + string(glm) + `, "decode": {` + linear + `}}`,
			"transfer: the prefill role's profile is grouped and the decode role's is linear: a grouped rank counts a handoff in full-attention blocks and a linear rank in tokens, so the two roles cannot hand off to each other"},
		{"linear_prefill_grouped_decode", `{` + linear + `, "decode": {"groups": ` + string(glm) + `}}`,
			"transfer: the prefill role's profile is linear and the decode role's is grouped: a grouped rank counts a handoff in full-attention blocks and a linear rank in tokens, so the two roles cannot hand off to each other"},
		{"different_groups", `{"groups": ` + string(glm) + `, "decode": {"groups": ` + string(wide) + `}}`,
			`transfer: the prefill and decode profiles have different cache groups: group "swa": window_tokens 128 on the prefill role, 256 on the decode role; a grouped rank counts a handoff in blocks, so both roles need the same groups`},
		{"different_linear", `{` + linear + `, "decode": {"bytes_per_token": 65536, "block_size_tokens": 16}}`,
			"transfer: the prefill role's linear profile (131072 bytes per token, 16-token pages) and the decode role's (65536 bytes per token, 16-token pages) differ: both roles must agree on what a token moves and on the page a hit is counted in"},
		{"decode_both_forms", `{` + linear + `, "decode": {"bytes_per_token": 1, "block_size_tokens": 16, "groups": ` + string(glm) + `}}`,
			"transfer decode takes either groups or bytes_per_token with block_size_tokens, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := strings.Replace(smallConfig, `"transfer": {"bytes_per_token": 131072, "block_size_tokens": 16}`, `"transfer":
 `+tc.transfer, 1)
			_, err := system.ParseConfig("pair.json", []byte(js))
			if err == nil {
				t.Fatal("accepted")
			}
			lines := strings.Split(err.Error(), "\n")[1:]
			// transfer.decode opens on the line after "transfer": the 13th
			// or later of smallConfig, whatever the profiles' own lines.
			line := strings.Count(js[:strings.Index(js, `"decode": {`)], "\n") + 1
			want := fmt.Sprintf("pair.json:%d: %s", line, tc.want)
			if len(lines) != 1 || lines[0] != want {
				t.Errorf("got:\n%s\nwant the one problem:\n%s", strings.Join(lines, "\n"), want)
			}
		})
	}
}
