package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// refExploration is the state graph of a run rebuilt without the search: a
// plain breadth-first search that steps concrete states through Step (the
// path sessions and replay use), dedupes them by canonical key in a map
// and counts what the report counts. The search's figures must match it.
type refExploration struct {
	keys     []system.Key
	states   []system.State // the first concrete state reached for each key
	depthOf  []int
	drained  []bool
	own      [][]int // successors by the moves the system makes on its own
	ids      map[system.Key]int
	perShard [numShards]int

	transitions int64
	depth       int
	// deadEnds counts the expanded states in which no protocol, timer or
	// delivery move is enabled (faults do not count): the quiescent
	// states, each of which Quiescence is checked on.
	deadEnds int
	ownEdges int
	// ownStates counts the states with at least one own move: a drain
	// chain records one edge from each (liveness.go).
	ownStates int
	// movesOf and quiet are, per expanded state, its enabled moves and
	// whether none but faults are.
	movesOf []int
	quiet   []bool
}

// cutAt is what an exploration expanding the states at depths below d
// reaches: states, transitions and dead ends.
func (r *refExploration) cutAt(d int) (states int, transitions int64, deadEnds int) {
	for id, dd := range r.depthOf {
		if dd <= d {
			states++
		}
		if dd < d && id < len(r.movesOf) {
			transitions += int64(r.movesOf[id])
			if r.quiet[id] {
				deadEnds++
			}
		}
	}
	return states, transitions, deadEnds
}

// ownMove says whether the i-th enabled move of a state is one the system
// makes on its own: not a fault, and not a timer fired early (while the
// system could still progress). Only these may lead out of a trap.
func ownMove(ms *system.MoveSet, protocol, i int) bool {
	return i < protocol && !(ms.M[i].Kind == system.MvTimer && !ms.Stuck)
}

// exploreRef explores c breadth first, expanding states at depths below
// maxDepth (0: all). Every step and every state must pass the safety
// invariants: it is meant for runs without safety violations.
func exploreRef(t testing.TB, c *Checker, maxDepth int) *refExploration {
	t.Helper()
	r := &refExploration{ids: map[system.Key]int{}}
	words := 1 + c.World().NumWorkers() + 2*c.World().NumHandoffs()
	add := func(s system.State, d int) int {
		k := c.Key(&s)
		if id, ok := r.ids[k]; ok {
			return id
		}
		id := len(r.keys)
		r.ids[k] = id
		r.keys = append(r.keys, k)
		r.states = append(r.states, s)
		r.depthOf = append(r.depthOf, d)
		r.drained = append(r.drained, c.Drained(&s))
		r.own = append(r.own, nil)
		r.perShard[shardOf(fingerprint(&k, words))]++
		r.depth = max(r.depth, d)
		return id
	}
	add(c.Initial(), 0)
	for i := 0; i < len(r.keys); i++ {
		if maxDepth > 0 && r.depthOf[i] >= maxDepth {
			continue
		}
		s := r.states[i]
		var ms system.MoveSet
		protocol := c.Enabled(&s, &ms)
		if protocol == 0 {
			r.deadEnds++
		}
		for len(r.movesOf) < i {
			r.movesOf, r.quiet = append(r.movesOf, 0), append(r.quiet, false)
		}
		r.movesOf, r.quiet = append(r.movesOf, ms.N), append(r.quiet, protocol == 0)
		for mi := 0; mi < ms.N; mi++ {
			u := s
			_, v, err := c.Step(&u, ms.M[mi], nil)
			if err != nil {
				t.Fatalf("state %d: enabled move %s: %v", i, ms.M[mi], err)
			}
			if v == nil {
				v = c.CheckState(&u)
			}
			if v != nil {
				t.Fatalf("state %d: move %s: %v", i, ms.M[mi], v)
			}
			r.transitions++
			j := add(u, r.depthOf[i]+1)
			if ownMove(&ms, protocol, mi) {
				r.own[i] = append(r.own[i], j)
				r.ownEdges++
			}
		}
		if len(r.own[i]) > 0 {
			r.ownStates++
		}
	}
	return r
}

// trapped marks the states from which no drained state can be reached by
// the moves the system makes on its own, by a plain fixpoint.
func (r *refExploration) trapped() []bool {
	can := append([]bool(nil), r.drained...)
	for changed := true; changed; {
		changed = false
		for i, succ := range r.own {
			if can[i] {
				continue
			}
			for _, j := range succ {
				if can[j] {
					can[i], changed = true, true
					break
				}
			}
		}
	}
	out := make([]bool, len(can))
	for i := range can {
		out[i] = !can[i]
	}
	return out
}

// fpTableBytes is what one shard's fingerprint table holds after n
// insertions: 16 slots at first, growing by half whenever the load would
// pass 0.8; 8 bytes a slot, 12 with the state's id.
func fpTableBytes(n int, ids bool) int64 {
	if n == 0 {
		return 0
	}
	slots := 16
	for have := 0; have < n; have++ {
		if (have+1)*5 > slots*4 {
			slots += slots / 2
		}
	}
	per := int64(8)
	if ids {
		per = 12
	}
	return int64(slots) * per
}

// storeBytes is the store's size for the states of r.
func (r *refExploration) storeBytes(ids bool) (store, fps int64) {
	for _, n := range r.perShard {
		store += fpTableBytes(n, ids)
		fps += fpTableBytes(n, false)
	}
	return store, fps
}

func runNamed(t testing.TB, cfg *system.Config, name string) system.Run {
	t.Helper()
	for _, r := range cfg.Runs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no run %q", name)
	return system.Run{}
}

func loadConfigFile(t testing.TB, path string) *system.Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkOne runs Check on one run of cfg.
func checkOne(t testing.TB, cfg *system.Config, name string, lim Limits) *Report {
	t.Helper()
	rep, err := Check(context.Background(), system.Generated(), cfg, []system.Run{runNamed(t, cfg, name)}, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("%d results for one run", len(rep.Runs))
	}
	return rep
}

// Every figure of a complete run is the figure of an independent search
// of the same graph: distinct states, transitions, depth, the quiescent
// states checked (dead ends), the store's exact size (its tables' growth
// depends only on how many states each shard holds), the parent links,
// the liveness graph (8 bytes an edge and a flag a state, kept only with
// liveness on: a drain chain's edge from each state that has an own move)
// and the collision bound n²/2⁶⁵.
func TestReport_FiguresMatchAnIndependentSearch(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	for _, name := range []string{"vllm", "sglang", "trtllm"} {
		c, err := New(system.Generated(), cfg, runNamed(t, cfg, name))
		if err != nil {
			t.Fatal(err)
		}
		ref := exploreRef(t, c, 0)
		if ref.deadEnds == 0 {
			t.Fatalf("%s: the reference search found no quiescent state: a complete run ends in one", name)
		}
		for _, lim := range []Limits{{Workers: 1}, {Workers: 2, Liveness: true}, {Workers: 2, Exact: true}, {Workers: 1, Exact: true, Liveness: true}} {
			what := fmt.Sprintf("%s exact=%v liveness=%v workers=%d", name, lim.Exact, lim.Liveness, lim.Workers)
			r := c.checkRun(context.Background(), lim, nil)
			s := r.Stats
			n := len(ref.keys)
			if !r.Complete || r.Violation != nil || r.StopReason != "" || r.StopDetail != "" {
				t.Fatalf("%s: complete=%v violation=%v stop=%q %q", what, r.Complete, r.Violation != nil, r.StopReason, r.StopDetail)
			}
			if s.States != n || s.Transitions != ref.transitions || s.Depth != ref.depth || r.DeadEnds != ref.deadEnds {
				t.Errorf("%s: %d states, %d transitions, depth %d, %d dead ends; the independent search: %d, %d, %d, %d",
					what, s.States, s.Transitions, s.Depth, r.DeadEnds, n, ref.transitions, ref.depth, ref.deadEnds)
			}
			if r.Liveness != lim.Liveness || r.Exact != lim.Exact || r.Symmetry || s.Workers != lim.Workers {
				t.Errorf("%s: result says liveness=%v exact=%v symmetry=%v workers=%d", what, r.Liveness, r.Exact, r.Symmetry, s.Workers)
			}
			if s.TraceBytes != int64(5*n) {
				t.Errorf("%s: trace links %d bytes, want 5 per state (%d)", what, s.TraceBytes, 5*n)
			}
			wantGraph := int64(0)
			if lim.Liveness {
				wantGraph = int64(8*ref.ownStates + n)
			}
			if s.GraphBytes != wantGraph {
				t.Errorf("%s: liveness graph %d bytes, want %d (a drain chain's edge from each of the %d states with an own move)", what, s.GraphBytes, wantGraph, ref.ownStates)
			}
			if lim.Exact {
				if want := int64(n) * int64(8*keyWords+4) * 4 / 3; s.StoreBytes != want || s.FingerprintBytes != 0 {
					t.Errorf("%s: store %d bytes (fingerprints %d), want %d and 0", what, s.StoreBytes, s.FingerprintBytes, want)
				}
				if r.CollisionProbability != 0 {
					t.Errorf("%s: collision probability %g in exact mode", what, r.CollisionProbability)
				}
				continue
			}
			store, fps := ref.storeBytes(lim.Liveness)
			if s.StoreBytes != store || s.FingerprintBytes != fps {
				t.Errorf("%s: store %d bytes, fingerprints %d; want %d and %d", what, s.StoreBytes, s.FingerprintBytes, store, fps)
			}
			// Once the states outnumber the 64 shards' first 16 slots,
			// a state costs 8/0.8 to 8/0.53 bytes, 1.5× that with ids.
			if per := float64(s.StoreBytes) / float64(n); n >= 500 && (per < 8 || per > 32) {
				t.Errorf("%s: %.1f store bytes per state, want 8 to 32", what, per)
			}
			if want := float64(n) * float64(n) / 2 / math.Exp2(64); r.CollisionProbability != want {
				t.Errorf("%s: collision probability %g, want n²/2⁶⁵ = %g", what, r.CollisionProbability, want)
			}
		}
	}
}

// jsonFigures is the part of the JSON report the figures are read from.
type jsonFigures struct {
	Verdict      string  `json:"verdict"`
	PeakResident *uint64 `json:"peak_resident_bytes"`
	Runs         []struct {
		Name        string   `json:"name"`
		Complete    bool     `json:"complete"`
		StopReason  string   `json:"stop_reason"`
		StopDetail  string   `json:"stop_detail"`
		States      int      `json:"states"`
		Transitions int64    `json:"transitions"`
		Depth       int      `json:"depth"`
		Quiescent   int      `json:"quiescent_states"`
		StoreBPS    float64  `json:"store_bytes_per_state"`
		FPBPS       float64  `json:"fingerprint_bytes_per_state"`
		ElapsedMS   *float64 `json:"elapsed_ms"`
		Workers     *int     `json:"workers"`
		PeakHeap    *uint64  `json:"peak_heap_bytes"`
		PeakRes     *uint64  `json:"peak_resident_bytes"`
		ResPerState *float64 `json:"resident_bytes_per_state"`
		Spilled     *int64   `json:"spilled_bytes"`
		Symmetry    bool     `json:"symmetry"`
		Exact       bool     `json:"exact"`
		Liveness    bool     `json:"liveness_checked"`
		Collision   float64  `json:"collision_probability"`
		Coverage    []struct {
			Role  string   `json:"role"`
			Fired int      `json:"fired"`
			Total int      `json:"total"`
			Dead  []string `json:"never_fired"`
		} `json:"coverage"`
		Violation *struct {
			Invariant string `json:"invariant"`
			Handoff   int    `json:"handoff"`
			Worker    int    `json:"worker"`
			Trace     []struct {
				Move string `json:"move"`
			} `json:"trace"`
			Loop []struct {
				Move string `json:"move"`
			} `json:"loop"`
			Mermaid string `json:"mermaid"`
		} `json:"violation"`
	} `json:"runs"`
	Coverage []struct {
		Policy  string   `json:"policy"`
		Runs    []string `json:"runs"`
		Partial bool     `json:"partial"`
		Role    string   `json:"role"`
		Fired   int      `json:"fired"`
		Total   int      `json:"total"`
		Dead    []string `json:"never_fired"`
	} `json:"coverage_by_policy"`
}

func parseReportJSON(t testing.TB, rep *Report, opt TextOptions) *jsonFigures {
	t.Helper()
	data, err := rep.marshal(opt)
	if err != nil {
		t.Fatal(err)
	}
	var j jsonFigures
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, data)
	}
	if len(j.Runs) != len(rep.Runs) {
		t.Fatalf("the JSON report has %d runs, the report %d", len(j.Runs), len(rep.Runs))
	}
	return &j
}

func wantLine(t testing.TB, text, line string) {
	t.Helper()
	if !strings.Contains(text, line) {
		t.Errorf("the text report lacks %q:\n%s", line, text)
	}
}

func wantNoLine(t testing.TB, text, line string) {
	t.Helper()
	if strings.Contains(text, line) {
		t.Errorf("the text report has %q:\n%s", line, text)
	}
}

// The text and the JSON report carry the same figures, and those are the
// results' own: counts, memory per state, the collision bound, the peaks
// of heap and resident memory (non-zero, and below what three runs of a
// few hundred states could plausibly need), workers, and the flags.
func TestReport_TextAndJSONCarryTheSameFigures(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs, Limits{Workers: 2, Liveness: true})
	if err != nil {
		t.Fatal(err)
	}
	opt := TextOptions{Stats: true}
	text := rep.text(opt)
	j := parseReportJSON(t, rep, opt)
	if j.Verdict != "pass" {
		t.Errorf("verdict %q, want pass", j.Verdict)
	}
	resident := residentBytes() != 0
	for i, x := range rep.Runs {
		jr := j.Runs[i]
		s := x.Stats
		if jr.Name != x.Run.Name || jr.States != s.States || jr.Transitions != s.Transitions || jr.Depth != s.Depth ||
			jr.Quiescent != x.DeadEnds || !jr.Complete || jr.StopReason != "" || jr.StopDetail != "" {
			t.Errorf("run %s: JSON %+v differs from the result %+v (dead ends %d)", x.Run.Name, jr, s, x.DeadEnds)
		}
		if jr.StoreBPS != float64(s.StoreBytes)/float64(s.States) || jr.FPBPS != float64(s.FingerprintBytes)/float64(s.States) {
			t.Errorf("run %s: JSON store %.3f (fingerprints %.3f) bytes/state, result %d (%d) bytes for %d states",
				x.Run.Name, jr.StoreBPS, jr.FPBPS, s.StoreBytes, s.FingerprintBytes, s.States)
		}
		// With ids for the liveness graph, each slot is 8 bytes of
		// fingerprint and 4 of id.
		if s.StoreBytes*2 != s.FingerprintBytes*3 || (s.States >= 500 && (jr.StoreBPS < 8 || jr.StoreBPS > 32)) {
			t.Errorf("run %s: store %d bytes, fingerprints %d: want 1.5× (ids kept) and 8 to 32 bytes/state", x.Run.Name, s.StoreBytes, s.FingerprintBytes)
		}
		if jr.Symmetry != x.Symmetry || x.Symmetry || jr.Exact || !jr.Liveness || !x.Liveness || jr.Collision != x.CollisionProbability || x.CollisionProbability <= 0 {
			t.Errorf("run %s: JSON symmetry=%v exact=%v liveness=%v collision=%g; result symmetry=%v liveness=%v collision=%g",
				x.Run.Name, jr.Symmetry, jr.Exact, jr.Liveness, jr.Collision, x.Symmetry, x.Liveness, x.CollisionProbability)
		}
		if jr.ElapsedMS == nil || jr.Workers == nil || *jr.Workers != 2 || jr.PeakHeap == nil || jr.PeakRes == nil {
			t.Fatalf("run %s: JSON lacks timing figures: %+v", x.Run.Name, jr)
		}
		if *jr.PeakHeap != s.PeakHeap || s.PeakHeap == 0 || s.PeakHeap > 64<<20 {
			t.Errorf("run %s: peak heap %d bytes (JSON %d): want above 0 and below 64 MiB", x.Run.Name, s.PeakHeap, *jr.PeakHeap)
		}
		if *jr.PeakRes != s.PeakResident || (resident && (s.PeakResident == 0 || s.PeakResident > 4<<30)) {
			t.Errorf("run %s: peak resident %d bytes (JSON %d): want above 0 and below 4 GiB", x.Run.Name, s.PeakResident, *jr.PeakRes)
		}
		if resident && s.PeakResident > rep.PeakResident {
			t.Errorf("run %s: peak resident %d above the process's high-water mark %d", x.Run.Name, s.PeakResident, rep.PeakResident)
		}
		// Row coverage: never_fired names exactly the rows that did not fire.
		rc := x.rowCoverage(rep.Checker(i).Protocol().Spec())
		if len(jr.Coverage) != len(rc) {
			t.Fatalf("run %s: %d coverage roles in JSON, %d in the result", x.Run.Name, len(jr.Coverage), len(rc))
		}
		for k, c := range jr.Coverage {
			if c.Fired != rc[k].Fired || c.Total != rc[k].Total || len(c.Dead) != c.Total-c.Fired || len(c.Dead) != len(rc[k].Dead) {
				t.Errorf("run %s %s: JSON %d/%d fired, %d never; result %d/%d, %d", x.Run.Name, c.Role, c.Fired, c.Total, len(c.Dead),
					rc[k].Fired, rc[k].Total, len(rc[k].Dead))
			}
			if rc[k].Total == 0 || rc[k].Fired == 0 {
				t.Errorf("run %s %s: %d/%d rows fired", x.Run.Name, c.Role, rc[k].Fired, rc[k].Total)
			}
		}

		header := fmt.Sprintf("run %s (%s, engine %s): complete, no violation\n", x.Run.Name, x.Run.Policy, x.Run.Engine)
		wantLine(t, text, header)
		wantLine(t, text, fmt.Sprintf("%s  %s distinct states, %s transitions, depth %d, %s quiescent states checked\n",
			header, commas(int64(jr.States)), commas(jr.Transitions), jr.Depth, commas(int64(jr.Quiescent))))
		wantLine(t, text, fmt.Sprintf("  store (fingerprints): %.1f bytes/state (fingerprints alone %.1f), trace links 5.0 bytes/state, liveness graph %.1f bytes/state\n",
			jr.StoreBPS, jr.FPBPS, float64(s.GraphBytes)/float64(s.States)))
		perState := ""
		if *jr.PeakRes > 0 {
			perState = fmt.Sprintf(" (%.1f bytes/state)", float64(*jr.PeakRes)/float64(jr.States))
		}
		if jr.ResPerState == nil || *jr.ResPerState != s.residentPerState() || jr.Spilled == nil || *jr.Spilled != 0 {
			t.Errorf("run %s: JSON resident bytes/state %v, spilled %v; want %g and nothing spilled", x.Run.Name, jr.ResPerState, jr.Spilled, s.residentPerState())
		}
		wantLine(t, text, fmt.Sprintf("  peak heap %s (this run's own), peak resident memory %s%s\n", FormatBytes(int64(*jr.PeakHeap)), residentText(*jr.PeakRes), perState))
		wantLine(t, text, fmt.Sprintf("  64-bit fingerprints: probability that two states collided ≤ %.1e\n", jr.Collision))
	}
	// Figures of small.json pinned as the text shows them: the thousands
	// separator, and the counts of the first run.
	wantLine(t, text, "  563 distinct states, 1,154 transitions, depth 15, ")
	wantLine(t, text, ", 2 workers\n")
	wantLine(t, text, "  EventuallyDrained: checked on the explored graph\n")
	wantLine(t, text, "invariants checked: ")
	wantLine(t, text, ", EventuallyDrained\n")
	// One decode worker and one handoff: nothing is interchangeable, and
	// the report must not claim a reduction.
	wantNoLine(t, text, "symmetry reduction")
	wantNoLine(t, text, "warning")
	wantNoLine(t, text, "unknown")
	if j.PeakResident == nil || *j.PeakResident != rep.PeakResident || (resident && rep.PeakResident == 0) {
		t.Errorf("process peak resident: JSON %v, report %d", j.PeakResident, rep.PeakResident)
	}
	wantLine(t, text, fmt.Sprintf("peak resident memory of the process: %s\n", residentText(rep.PeakResident)))
	// Coverage by policy merges the runs of each policy, and only those.
	runsOf := map[string]string{}
	for _, pc := range j.Coverage {
		runsOf[pc.Policy] = strings.Join(pc.Runs, ",")
		if pc.Partial || len(pc.Dead) != pc.Total-pc.Fired {
			t.Errorf("policy %s %s: partial=%v, %d never fired of %d/%d", pc.Policy, pc.Role, pc.Partial, len(pc.Dead), pc.Fired, pc.Total)
		}
	}
	if runsOf["source-first"] != "vllm,trtllm" || runsOf["destination-first"] != "sglang" {
		t.Errorf("coverage by policy groups runs as %v", runsOf)
	}
	wantLine(t, text, "coverage under source-first (runs vllm, trtllm): ")

	// Without timing, neither report carries a measured figure.
	quiet := TextOptions{Stats: true, NoTiming: true}
	qt := rep.text(quiet)
	for _, measured := range []string{"elapsed", "states/s", "peak", "bytes/state", "workers"} {
		wantNoLine(t, qt, measured)
	}
	wantLine(t, rep.text(TextOptions{}), "  elapsed ")
	wantNoLine(t, rep.text(TextOptions{}), "peak heap")
	qj := parseReportJSON(t, rep, quiet)
	if qj.PeakResident != nil || qj.Runs[0].ElapsedMS != nil || qj.Runs[0].PeakHeap != nil || qj.Runs[0].States != 563 {
		t.Errorf("JSON without timing: %+v", qj.Runs[0])
	}
}

// A dead end is a state explored (not merely reached) in which nothing
// but faults is enabled: a quiescent state, on which Quiescence is
// checked. Cut at the depth of the nearest quiescent state, a run has
// reached such states but explored none: it counts no dead end. One level
// deeper it counts exactly those at that depth. A bound on states stops
// after the level that reached it; either cut says so in its report.
func TestReport_DeadEndsAndCuts(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c, err := New(system.Generated(), cfg, runNamed(t, cfg, "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	full := exploreRef(t, c, 0)
	nearest := -1
	for id, s := range full.states {
		if quiescent, _ := c.Quiescence(&s); quiescent && (nearest < 0 || full.depthOf[id] < nearest) {
			nearest = full.depthOf[id]
		}
	}
	if nearest < 1 || nearest >= full.depth {
		t.Fatalf("the nearest quiescent state is at depth %d of %d", nearest, full.depth)
	}
	for _, d := range []int{nearest, nearest + 1, full.depth, full.depth + 1} {
		ref := exploreRef(t, c, d)
		if d == nearest && ref.deadEnds != 0 || d == nearest+1 && ref.deadEnds == 0 {
			t.Fatalf("depth %d: the reference counts %d dead ends", d, ref.deadEnds)
		}
		for _, lim := range []Limits{{MaxDepth: d, Workers: 2}, {MaxDepth: d, Workers: 1, Liveness: true}} {
			r := c.checkRun(context.Background(), lim, nil)
			s := r.Stats
			if s.States != len(ref.keys) || s.Transitions != ref.transitions || s.Depth != ref.depth || r.DeadEnds != ref.deadEnds {
				t.Errorf("max depth %d liveness=%v: %d states, %d transitions, depth %d, %d dead ends; want %d, %d, %d, %d",
					d, lim.Liveness, s.States, s.Transitions, s.Depth, r.DeadEnds, len(ref.keys), ref.transitions, ref.depth, ref.deadEnds)
			}
			if d > full.depth {
				// Every state was explored: the bound cut nothing.
				if !r.Complete || r.StopReason != "" || r.Liveness != lim.Liveness {
					t.Errorf("max depth %d of %d: complete=%v stop=%q liveness=%v", d, full.depth, r.Complete, r.StopReason, r.Liveness)
				}
				continue
			}
			detail := fmt.Sprintf("stopped at depth %d (--max-depth)", d)
			if lim.Liveness {
				detail += "; EventuallyDrained not judged: the graph is incomplete"
			}
			if r.Complete || r.StopReason != stopMaxDepth || r.StopDetail != detail || r.Liveness || r.Violation != nil {
				t.Errorf("max depth %d: complete=%v stop=%q %q liveness=%v", d, r.Complete, r.StopReason, r.StopDetail, r.Liveness)
			}
		}
	}

	// --max-states stops after the first level that reaches the bound,
	// whenever states remain to explore (the last level too: its states
	// are reached, not explored): the figures are those of a cut at that
	// level's depth. A bound above the run's states cuts nothing.
	for level := 1; level <= full.depth+1; level++ {
		states, transitions, deadEnds := full.cutAt(level)
		before, _, _ := full.cutAt(level - 1)
		bounds := []int{before + 1, states}
		if level > full.depth {
			bounds = bounds[:1]
		}
		for _, bound := range bounds {
			r := c.checkRun(context.Background(), Limits{MaxStates: bound, Workers: 2}, nil)
			if level > full.depth {
				if !r.Complete || r.StopReason != "" || r.Stats.States != len(full.keys) {
					t.Errorf("max states %d of %d: complete=%v stop=%q, %d states", bound, len(full.keys), r.Complete, r.StopReason, r.Stats.States)
				}
				continue
			}
			if r.Stats.States != states || r.Stats.Transitions != transitions || r.Stats.Depth != level || r.DeadEnds != deadEnds {
				t.Errorf("max states %d: %d states, %d transitions, depth %d, %d dead ends; want %d, %d, %d, %d", bound,
					r.Stats.States, r.Stats.Transitions, r.Stats.Depth, r.DeadEnds, states, transitions, level, deadEnds)
			}
			detail := fmt.Sprintf("stopped after the level that reached %s distinct states (--max-states %d)", commas(int64(states)), bound)
			if r.Complete || r.StopReason != stopMaxStates || r.StopDetail != detail {
				t.Errorf("max states %d: complete=%v stop=%q %q, want %q", bound, r.Complete, r.StopReason, r.StopDetail, detail)
			}
		}
	}

	// The report of a cut run says it is incomplete, why, and what that
	// means for the verdicts.
	rep := checkOne(t, cfg, "vllm", Limits{MaxDepth: nearest})
	text := rep.text(TextOptions{})
	wantLine(t, text, fmt.Sprintf("run vllm (source-first, engine vllm): incomplete (stopped at depth %d (--max-depth)), no violation found\n", nearest))
	wantLine(t, text, fmt.Sprintf(", depth %d, 0 quiescent states checked\n", nearest))
	wantLine(t, text, "  warning: the exploration was cut by a bound: Quiescence and EventuallyDrained verdicts cover only what was explored\n")
	wantLine(t, text, "(partial: an exploration stopped early, so rows that never fired are not findings)")
	j := parseReportJSON(t, rep, TextOptions{})
	if jr := j.Runs[0]; j.Verdict != "incomplete" || jr.Complete || jr.StopReason != stopMaxDepth || jr.Quiescent != 0 || jr.Depth != nearest {
		t.Errorf("JSON of a cut run: verdict %q, %+v", j.Verdict, jr)
	}
	// A run that completes carries no warning.
	wantNoLine(t, checkOne(t, cfg, "vllm", Limits{}).text(TextOptions{}), "warning")
}

// symmetryConfig has two identical decode workers and two handoffs that
// differ: only the workers are interchangeable.
const symmetryConfig = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 6, "slots": 2, "headroom_tokens": 1024},
    {"role": "decode", "capacity_blocks": 6, "slots": 2, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}, {"prompt_tokens": 32, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"loss": 1}
}`

// Symmetry over interchangeable workers alone: with two identical decode
// workers and two different handoffs, each orbit holds one or two states,
// so the reduced count lies strictly between half the plain count and the
// plain count; it is exactly the number of orbits of the plain reachable
// states (counted here through the reduced checker's canonical key). The
// counts are pinned, the verdict is the same, and the report states
// symmetry on exactly when states were reduced.
func TestReport_SymmetryOverWorkersAlone(t *testing.T) {
	pinned := map[string][2]int{"vllm": {208, 400}, "sglang": {671, 1333}}
	for _, name := range []string{"vllm", "sglang"} {
		on := mustConfig(t, symmetryConfig)
		off := mustConfig(t, symmetryConfig)
		off.Symmetry = false
		run := runNamed(t, on, name)
		cOn, err := New(system.Generated(), on, run)
		if err != nil {
			t.Fatal(err)
		}
		cOff, err := New(system.Generated(), off, run)
		if err != nil {
			t.Fatal(err)
		}
		if !cOn.Symmetric() || cOff.Symmetric() {
			t.Fatalf("%s: renamings with symmetry %v, without %v", name, cOn.Symmetric(), cOff.Symmetric())
		}
		lim := Limits{Workers: 2, Liveness: true}
		rOn := cOn.checkRun(context.Background(), lim, nil)
		rOff := cOff.checkRun(context.Background(), lim, nil)
		plain := exploreRef(t, cOff, 0)
		orbits := map[system.Key]bool{}
		for i := range plain.states {
			orbits[cOn.Key(&plain.states[i])] = true
		}
		t.Logf("%s: %d states reduced, %d plain, %d orbits", name, rOn.Stats.States, rOff.Stats.States, len(orbits))
		if got := [2]int{rOn.Stats.States, rOff.Stats.States}; got != pinned[name] {
			t.Errorf("%s: %d states reduced, %d plain; pinned %v", name, got[0], got[1], pinned[name])
		}
		if rOff.Stats.States != len(plain.keys) || rOn.Stats.States != len(orbits) ||
			!(rOn.Stats.States < rOff.Stats.States && rOff.Stats.States <= 2*rOn.Stats.States) {
			t.Errorf("%s: %d states reduced, %d plain; the plain search has %d states in %d orbits", name,
				rOn.Stats.States, rOff.Stats.States, len(plain.keys), len(orbits))
		}
		if !rOn.Complete || !rOff.Complete || rOn.Violation != nil || rOff.Violation != nil {
			t.Errorf("%s: verdicts: reduced complete=%v violation=%v, plain complete=%v violation=%v", name,
				rOn.Complete, rOn.Violation != nil, rOff.Complete, rOff.Violation != nil)
		}
		if !rOn.Symmetry || rOff.Symmetry {
			t.Errorf("%s: result symmetry flags %v (reduced) and %v (plain)", name, rOn.Symmetry, rOff.Symmetry)
		}
		for _, x := range []struct {
			cfg *system.Config
			on  bool
		}{{on, true}, {off, false}} {
			rep := checkOne(t, x.cfg, name, lim)
			text := rep.text(TextOptions{})
			j := parseReportJSON(t, rep, TextOptions{})
			if j.Runs[0].Symmetry != x.on || strings.Contains(text, "symmetry reduction: on") != x.on ||
				strings.Contains(text, "warning: liveness on a symmetry-reduced graph") != x.on {
				t.Errorf("%s symmetry=%v: JSON says %v; text:\n%s", name, x.on, j.Runs[0].Symmetry, text)
			}
		}
	}
}

func TestReport_FormatBytesAndThresholds(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 1<<20 - 1: "1024.0 KiB",
		1 << 20: "1.0 MiB", 1<<30 - 1: "1024.0 MiB", 1 << 30: "1.0 GiB", 3<<30 + 400<<20: "3.4 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1023: "1,023", 1234567: "1,234,567", -5: "-5"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
	// The watcher stops a tenth of the bound below it, or 64 MiB below it
	// when that is more, but never more than half the bound below it.
	for bound, want := range map[int64]int64{
		1 << 30:   1<<30 - (1<<30)/10,
		10 << 30:  9 << 30,
		256 << 20: 192 << 20,
		100 << 20: 50 << 20,
		1:         1,
	} {
		if got := memoryThreshold(bound); got != want {
			t.Errorf("memoryThreshold(%d) = %d, want %d", bound, got, want)
		}
	}
}

func TestReport_SelectRuns(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	names := func(rs []system.Run) string {
		var n []string
		for _, r := range rs {
			n = append(n, r.Name)
		}
		return strings.Join(n, ",")
	}
	for _, tc := range []struct {
		names    []string
		policies []spec.Policy
		want     string
	}{
		{nil, nil, "vllm,sglang,trtllm"},
		{[]string{"trtllm", "vllm"}, nil, "trtllm,vllm"},
		{nil, []spec.Policy{spec.SourceFirst}, "vllm,trtllm"},
		{nil, []spec.Policy{spec.DestinationFirst}, "sglang"},
		{[]string{"sglang", "vllm"}, []spec.Policy{spec.SourceFirst}, "vllm"},
		{[]string{"vllm", "vllm"}, nil, ""},
		{[]string{"nope"}, nil, ""},
		{[]string{"vllm"}, []spec.Policy{spec.DestinationFirst}, ""},
	} {
		got, err := SelectRuns(cfg, tc.names, tc.policies)
		if tc.want == "" {
			if err == nil || !errors.Is(err, system.ErrConfig) {
				t.Errorf("SelectRuns(%v, %v) = %s, %v; want a refusal", tc.names, tc.policies, names(got), err)
			}
			continue
		}
		if err != nil || names(got) != tc.want {
			t.Errorf("SelectRuns(%v, %v) = %s, %v; want %s", tc.names, tc.policies, names(got), err, tc.want)
		}
	}
	if _, err := Check(context.Background(), system.Generated(), cfg, nil, Limits{}); err == nil {
		t.Errorf("checking no run is not refused")
	}
}

// refViolation is the first violation of a breadth-first scan that takes
// states in the order they were first reached and their moves in order:
// the moves from the initial state to it, its invariant, the depth of the
// state it was found from, and how many states lie at that depth or less.
type refViolation struct {
	moves  []string
	inv    string
	depth  int
	states int
}

func firstViolationRef(t testing.TB, c *Checker) *refViolation {
	t.Helper()
	ids := map[system.Key]int{}
	var states []system.State
	var parent, depth []int
	var via []string
	add := func(s system.State, p int, m string) {
		ids[c.Key(&s)] = len(states)
		states = append(states, s)
		parent = append(parent, p)
		d := 0
		if p >= 0 {
			d = depth[p] + 1
		}
		depth = append(depth, d)
		via = append(via, m)
	}
	found := func(i int, m, inv string) *refViolation {
		r := &refViolation{inv: inv, depth: depth[i]}
		for j := i; j > 0; j = parent[j] {
			r.moves = append([]string{via[j]}, r.moves...)
		}
		if m != "" {
			r.moves = append(r.moves, m)
		}
		for _, d := range depth {
			if d <= r.depth {
				r.states++
			}
		}
		return r
	}
	add(c.Initial(), -1, "")
	if v := c.CheckState(&states[0]); v != nil {
		return found(0, "", v.Invariant)
	}
	for i := 0; i < len(states); i++ {
		s := states[i]
		if _, v := c.Quiescence(&s); v != nil {
			return found(i, "", v.Invariant)
		}
		for _, m := range c.MovesInto(&s, nil) {
			u := s
			_, v, err := c.Step(&u, m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v != nil {
				return found(i, m.String(), v.Invariant)
			}
			if _, ok := ids[c.Key(&u)]; ok {
				continue
			}
			if v := c.CheckState(&u); v != nil {
				return found(i, m.String(), v.Invariant)
			}
			add(u, i, m.String())
		}
	}
	return nil
}

// A safety violation is reported on a shortest trace, and the same one
// for any number of workers: the first found in the order states are
// numbered (by the state it is found from, then by the move). An
// independent scan in that order must find the same trace, stop at the
// same depth and count the same states.
func TestReport_FirstViolationInBreadthFirstOrder(t *testing.T) {
	cases := []struct {
		run    string
		budget system.Budget
		break_ func(t *testing.T, s *spec.Spec)
	}{
		{"vllm", budgetOf(t, "duplicate=1", "cancel=1", "early_timer=1"), func(t *testing.T, s *spec.Spec) {
			override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
				"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
		}},
		{"vllm", budgetOf(t, "duplicate=1", "cancel=1"), func(t *testing.T, s *spec.Spec) {
			override(t, s, spec.Destination, "Reserving", "DestinationReserved", spec.SourceFirst, "Receiving",
				"RegisterDestination", "PublishStored", "StartPull")
		}},
		{"sglang", budgetOf(t, "duplicate=1", "abort=1"), func(t *testing.T, s *spec.Spec) {
			override(t, s, spec.Destination, "Reserved", "Cancelled", spec.DestinationFirst, "",
				"DisarmReservationTimer", "FenceDestination", "ReleaseDestination")
		}},
		// The pin is never released: the run ends holding it.
		{"vllm", system.Budget{system.Cancel: 1}, func(t *testing.T, s *spec.Spec) {
			override(t, s, spec.Source, "Pinned", "ReaderCompleted", spec.SourceFirst, "Released",
				"DisarmLease", "ReportSourceReleased", "Complete")
		}},
		// The request is never counted out of the worker: a state
		// invariant, judged on the state a step reaches.
		{"vllm", system.Budget{system.Cancel: 1}, func(t *testing.T, s *spec.Spec) {
			override(t, s, spec.Source, "Pinned", "ReaderCompleted", spec.SourceFirst, "Released",
				"DisarmLease", "ReleaseSource", "ReportSourceReleased")
		}},
	}
	// Each broken table on one handoff, and on two handoffs and two
	// decode workers without symmetry, where several states of the
	// failing level break an invariant and the order must choose.
	for i := range 2 * len(cases) {
		tc := cases[i%len(cases)]
		s := spec.Default()
		tc.break_(t, s)
		cfg := mustConfig(t, smallConfig)
		if i >= len(cases) {
			cfg = mustConfig(t, twoByTwo)
			cfg.Symmetry = false
		}
		cfg.Budget = tc.budget
		c, err := New(interpreted(t, s), cfg, runNamed(t, cfg, tc.run))
		if err != nil {
			t.Fatal(err)
		}
		ref := firstViolationRef(t, c)
		if ref == nil {
			t.Fatalf("case %d: the independent scan finds no violation", i)
		}
		for _, workers := range []int{1, 2} {
			r := c.checkRun(context.Background(), Limits{Workers: workers, Liveness: workers == 2}, nil)
			if r.Violation == nil {
				t.Fatalf("case %d: no violation; the scan finds %s", i, ref.inv)
			}
			var moves []string
			for _, st := range r.Violation.Steps {
				moves = append(moves, st.Move.String())
			}
			got, want := strings.Join(moves, "\n"), strings.Join(ref.moves, "\n")
			if r.Violation.Violation.Invariant != ref.inv || got != want || !r.Violation.Steps[len(moves)-1].Failed {
				t.Errorf("case %d workers %d: %s after\n%s\nthe scan: %s after\n%s", i, workers, r.Violation.Violation.Invariant, got, ref.inv, want)
			}
			if r.Complete || r.StopReason != "" || r.Liveness || r.Stats.Depth != ref.depth || r.Stats.States != ref.states {
				t.Errorf("case %d workers %d: complete=%v stop=%q liveness=%v, depth %d, %d states; the scan: depth %d, %d states",
					i, workers, r.Complete, r.StopReason, r.Liveness, r.Stats.Depth, r.Stats.States, ref.depth, ref.states)
			}
		}
		t.Logf("case %d: %s in %d steps", i, ref.inv, len(ref.moves))
	}
}

// Rates are per second of the run, and zero for a run that took no time.
func TestReport_Rates(t *testing.T) {
	s := searchStats{States: 300, Transitions: 900, Elapsed: 1500 * time.Millisecond}
	if s.statesPerSecond() != 200 || s.transitionsPerSecond() != 600 {
		t.Errorf("rates %g and %g, want 200 and 600", s.statesPerSecond(), s.transitionsPerSecond())
	}
	s.Elapsed = 0
	if s.statesPerSecond() != 0 || s.transitionsPerSecond() != 0 {
		t.Errorf("rates %g and %g for no time, want 0", s.statesPerSecond(), s.transitionsPerSecond())
	}
	// No worker count means every core.
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c, err := New(system.Generated(), cfg, runNamed(t, cfg, "trtllm"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.checkRun(context.Background(), Limits{}, nil); r.Stats.Workers != runtime.GOMAXPROCS(0) || r.Stats.States != 137 {
		t.Errorf("%d workers, %d states; want %d and 137", r.Stats.Workers, r.Stats.States, runtime.GOMAXPROCS(0))
	}
}

// A check interrupted before it starts runs nothing and says so; so does
// its JSON report. An exploration interrupted before its first level
// reports the initial state alone, and the store that holds it.
func TestReport_Interrupted(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := New(system.Generated(), cfg, runNamed(t, cfg, "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.checkRun(ctx, Limits{Workers: 1}, nil)
	if r.Complete || r.StopReason != stopInterrupted || r.StopDetail != "interrupted before the exploration completed" ||
		r.Stats.States != 1 || r.Stats.Depth != 0 || r.Stats.StoreBytes != 16*8 {
		t.Errorf("interrupted exploration: complete=%v stop=%q %q, %d states, depth %d, store %d bytes",
			r.Complete, r.StopReason, r.StopDetail, r.Stats.States, r.Stats.Depth, r.Stats.StoreBytes)
	}
	rep, err := Check(ctx, system.Generated(), cfg, cfg.Runs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 0 || len(rep.NotRun) != 3 || !rep.Interrupted {
		t.Fatalf("%d runs, %d not run, interrupted=%v", len(rep.Runs), len(rep.NotRun), rep.Interrupted)
	}
	text := rep.text(TextOptions{})
	wantLine(t, text, "run sglang (destination-first, engine sglang): not run (interrupted)\n")
	wantLine(t, text, "interrupted: the verdicts above cover only what was explored\n")
	data, err := rep.marshal(TextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Verdict string   `json:"verdict"`
		NotRun  []string `json:"not_run"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j.Verdict != "interrupted" || strings.Join(j.NotRun, ",") != "vllm,sglang,trtllm" {
		t.Errorf("JSON verdict %q, not run %v", j.Verdict, j.NotRun)
	}
	// Walks too.
	wrep, err := Check(ctx, system.Generated(), cfg, cfg.Runs, Limits{Seed: 1, Walks: 5, Steps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(wrep.Runs) != 0 || len(wrep.NotRun) != 3 || !wrep.Interrupted {
		t.Fatalf("walks: %d runs, %d not run, interrupted=%v", len(wrep.Runs), len(wrep.NotRun), wrep.Interrupted)
	}
	wantLine(t, wrep.textWalks(TextOptions{}), "run trtllm (source-first, engine trtllm): not run (interrupted)\n")
}

// The speed-up over one worker is stated whenever it was measured, also
// when it is below one (more workers were slower), and left out when the
// run took no time. The JSON report carries the same ratio. Limits.Speedup
// measures it: the same run again on one worker, the same search.
func TestReport_SpeedupOverOneWorker(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	measured := checkOne(t, cfg, "trtllm", Limits{Workers: 2, Speedup: true})
	if len(measured.baseline) != 1 || measured.baseline[0].Stats.States != measured.Runs[0].Stats.States || measured.baseline[0].Stats.Elapsed <= 0 {
		t.Fatalf("Limits.Speedup measured %d runs on one worker", len(measured.baseline))
	}
	rep := checkOne(t, cfg, "trtllm", Limits{Workers: 2})
	one := &Report{Runs: []*Result{{Stats: searchStats{Elapsed: time.Second}}}}
	rep.setBaseline(one)
	for _, tc := range []struct {
		elapsed time.Duration
		line    string
		ratio   float64
	}{
		{2 * time.Second, ", 2 workers, 0.50× the speed of one worker (1s on one)\n", 0.5},
		{time.Second / 4, ", 2 workers, 4.00× the speed of one worker (1s on one)\n", 4},
		{0, ", 2 workers\n", 0},
	} {
		rep.Runs[0].Stats.Elapsed = tc.elapsed
		wantLine(t, rep.text(TextOptions{Stats: true}), tc.line)
		data, err := rep.marshal(TextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var j struct {
			Runs []struct {
				Speedup float64 `json:"speedup_over_one_worker"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(data, &j); err != nil {
			t.Fatal(err)
		}
		if j.Runs[0].Speedup != tc.ratio {
			t.Errorf("elapsed %s: JSON speed-up %g, want %g", tc.elapsed, j.Runs[0].Speedup, tc.ratio)
		}
	}
}

// Progress is reported after a level, at most every progressEvery; with
// no wait, after every level. Each report gives the run, the states
// reached, the transitions taken, the depth reached and the states
// waiting to be explored, as an independent search counts them.
func TestExplore_ProgressAfterEveryLevel(t *testing.T) {
	_, _, c, ref := progressEveryLevel(t)
	var got []searchProgress
	r := c.checkRun(context.Background(), Limits{Workers: 2}, func(p searchProgress) { got = append(got, p) })
	if !r.Complete || len(got) != ref.depth+1 {
		t.Fatalf("complete=%v, %d progress reports for a run %d moves deep; want one per level, %d", r.Complete, len(got), ref.depth, ref.depth+1)
	}
	for d, p := range got {
		states, transitions, queue := ref.progressAt(d + 1)
		want := searchProgress{Run: "trtllm", States: states, Transitions: transitions, Depth: d + 1, Queue: queue, Elapsed: p.Elapsed}
		if p != want || p.Elapsed <= 0 {
			t.Errorf("report %d: %+v, want %+v", d, p, want)
		}
	}
	// No callback: nothing is called, however often progress is due.
	if r := c.checkRun(context.Background(), Limits{Workers: 1}, nil); !r.Complete {
		t.Errorf("a run without a progress callback did not complete")
	}
}

// Limits.Progress receives one line per progress report, as check prints
// it: the run, the transitions taken ("states"), the distinct states, the
// depth, the queue and the rate. The speed-up's second search on one
// worker writes none.
func TestCheck_ProgressLines(t *testing.T) {
	cfg, run, _, ref := progressEveryLevel(t)
	var out strings.Builder
	rep, err := Check(context.Background(), system.Generated(), cfg, []system.Run{run}, Limits{Workers: 2, Speedup: true, Progress: &out})
	if err != nil || !rep.Runs[0].Complete {
		t.Fatalf("check: %v", err)
	}
	lines := strings.SplitAfter(out.String(), "\n")
	if last := lines[len(lines)-1]; last != "" {
		t.Fatalf("the progress ends in a partial line %q", last)
	}
	lines = lines[:len(lines)-1]
	if len(lines) != ref.depth+1 {
		t.Fatalf("%d progress lines for a run %d moves deep; want one per level, %d:\n%s", len(lines), ref.depth, ref.depth+1, out.String())
	}
	rate := regexp.MustCompile(`^[0-9]+ states/s\n$`)
	for d, line := range lines {
		states, transitions, queue := ref.progressAt(d + 1)
		want := fmt.Sprintf("trtllm: %d states, %d distinct, depth %d, queue %d, ", transitions, states, d+1, queue)
		if !strings.HasPrefix(line, want) || !rate.MatchString(strings.TrimPrefix(line, want)) {
			t.Errorf("line %d: %q, want %q and a rate", d, line, want)
		}
	}
}

// progressEveryLevel is the run the progress tests search (the small
// configuration's trtllm), its checker and a reference search of it,
// with progress due after every level for the rest of the test.
func progressEveryLevel(t *testing.T) (*system.Config, system.Run, *Checker, *refExploration) {
	t.Helper()
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	run := runNamed(t, cfg, "trtllm")
	c, err := New(system.Generated(), cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	ref := exploreRef(t, c, 0)
	old := progressEvery
	progressEvery = 0
	t.Cleanup(func() { progressEvery = old })
	return cfg, run, c, ref
}

// progressAt is what a progress report after the level reaching depth
// says, counted on the reference: the states reached, the transitions
// taken and the states at that depth, waiting to be explored.
func (r *refExploration) progressAt(depth int) (states int, transitions int64, queue int) {
	states, transitions, _ = r.cutAt(depth)
	for _, d := range r.depthOf {
		if d == depth {
			queue++
		}
	}
	return states, transitions, queue
}

// lateCancel is a context that reads as live for its first n looks and as
// cancelled after them: an interrupt that lands at a chosen point of a run
// whatever the timing.
type lateCancel struct {
	context.Context
	n atomic.Int32
}

func (c *lateCancel) Err() error {
	if c.n.Add(-1) >= 0 {
		return nil
	}
	return context.Canceled
}

// An interrupt that lands inside a level drops that level whole: the run
// is incomplete, says it was interrupted, and its figures are those of the
// levels it completed, as an independent search counts them. Landing in
// the first level leaves the initial state alone.
func TestExplore_InterruptedWithinALevel(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c, err := New(system.Generated(), cfg, runNamed(t, cfg, "trtllm"))
	if err != nil {
		t.Fatal(err)
	}
	ref := exploreRef(t, c, 0)
	// One worker looks at the context before each level, every 256
	// states of a batch and once each batch is expanded: after one look
	// the first level is under way, after twenty a later one.
	for _, looks := range []int32{1, 20} {
		ctx := &lateCancel{Context: context.Background()}
		ctx.n.Store(looks)
		r := c.checkRun(ctx, Limits{Workers: 1}, nil)
		if r.Complete || r.StopReason != stopInterrupted || r.StopDetail != "interrupted before the exploration completed" {
			t.Errorf("interrupted after %d looks: complete=%v stop=%q %q", looks, r.Complete, r.StopReason, r.StopDetail)
		}
		if looks == 1 && r.Stats.Depth != 0 || looks > 1 && (r.Stats.Depth == 0 || r.Stats.Depth >= ref.depth) {
			t.Errorf("interrupted after %d looks: depth %d of %d", looks, r.Stats.Depth, ref.depth)
		}
		states, transitions, deadEnds := ref.cutAt(r.Stats.Depth)
		if r.Stats.States != states || r.Stats.Transitions != transitions || r.DeadEnds != deadEnds {
			t.Errorf("interrupted after %d looks at depth %d: %d states, %d transitions, %d dead ends; the levels before it: %d, %d, %d",
				looks, r.Stats.Depth, r.Stats.States, r.Stats.Transitions, r.DeadEnds, states, transitions, deadEnds)
		}
	}
}

// The report says how states were stored: exact keys, or fingerprints
// with the chance that two collided, never both.
func TestReport_SaysHowStatesWereStored(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	exact := checkOne(t, cfg, "trtllm", Limits{Exact: true}).text(TextOptions{})
	wantLine(t, exact, "  states stored as exact keys: no fingerprint collisions\n")
	wantNoLine(t, exact, "64-bit fingerprints")
	fps := checkOne(t, cfg, "trtllm", Limits{}).text(TextOptions{})
	wantLine(t, fps, "  64-bit fingerprints: probability that two states collided ≤ ")
	wantNoLine(t, fps, "exact keys")
}
