package repro

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Each shipped variant's counterexample on two-handoffs-faults.json (the
// first of its vllm and sglang runs that check finds one in) becomes a
// reproduction on the clock: the plan derived from the trace, whose
// files simulate reads and which breaks the same invariant, or else the
// first timed scenario that breaks it, or neither. The table holds
// which, so that a plan that stops reproducing fails the test. It holds
// too which plans' live runs are judged with a clock error (clockLive:
// those whose violation a live run's later facts hide, no pin keeping
// them out), and their README shows the command.
func TestWrite_OnTheClock(t *testing.T) {
	clocked := map[string]bool{"release-before-activation": true, "release-on-heartbeat": true}
	const plan, scenario, neither = "plan", "scenario", "neither"
	want := map[string]string{
		"bootstrap-as-readiness":          plan,
		"cancel-noop-leaks-held-source":   plan,
		"decode-without-reservation":      plan,
		"expired-lease-reports-release":   plan,
		"late-cancel-standin":             plan,
		"late-peer-cancel-fails-done":     plan,
		"ownership-at-terminal-token":     plan,
		"pin-ignores-ack-and-lease":       plan,
		"prefill-after-early-outcome":     plan,
		"publish-before-compute":          plan,
		"pull-deadline-without-fence":     plan,
		"pull-failed-reports-success":     plan,
		"push-deadline-without-fence":     plan,
		"rearm-reservation":               plan,
		"release-before-activation":       plan,
		"release-on-heartbeat":            plan,
		"release-on-scheduler-finish":     plan,
		"report-before-release-applied":   plan,
		"withdraw-noop-leaks-reservation": plan,
	}
	files, err := filepath.Glob("../../testdata/variants/*.json")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	seen := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if name == "broken-vocabulary" {
			continue // its tables do not parse: it has no counterexample
		}
		in, ok := firstFound(t, "../../testdata/configs/two-handoffs-faults.json", file, "vllm", "sglang")
		if !ok {
			if w, listed := want[name]; listed {
				t.Errorf("%s: no counterexample, want one reproduced by %s", name, w)
			}
			continue
		}
		seen++
		dir := t.TempDir()
		res, err := Write(dir, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := neither
		switch {
		case res.Plan.Result != nil:
			if inv := simulated(t, dir, in.Protocol, res.Plan.KeepGoing, res.Invariant); inv != res.Invariant {
				t.Errorf("%s: the plan's files break %q, not %s", name, inv, res.Invariant)
			}
			readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
			if err != nil {
				t.Fatal(err)
			}
			atScale(t, dir, in.Protocol, res.Scale, readme)
			got = plan
			flat := strings.Join(strings.Fields(string(readme)), " ")
			shows := strings.Contains(flat, " --clock-error "+LiveClockError.String()+" ") &&
				strings.Contains(flat, "A live run's processes share one host and so one clock")
			if res.Plan.LiveClock() != clocked[name] || shows != clocked[name] {
				t.Errorf("%s: the live plan judged with a clock error: %v, its README shows it: %v; want %v", name, res.Plan.LiveClock(), shows, clocked[name])
			}
		case res.Timed != nil && res.Timed.Scenario != "":
			got = scenario
		}
		counts[got]++
		t.Logf("%s (%s, %s): %s after %d runs of the simulator", name, in.Run.Name, res.Invariant, got, res.Plan.Runs)
		if got != want[name] {
			why := res.Plan.Why
			t.Errorf("%s (%s, %s): reproduced on the clock by %s, want %s (%s)", name, in.Run.Name, res.Invariant, got, want[name], why)
		}
	}
	if seen != len(want) {
		t.Errorf("%d variants have a counterexample, the table lists %d", seen, len(want))
	}
	t.Logf("of %d counterexamples: %d by the plan derived from the trace, %d by a named scenario, %d by neither", seen, counts[plan], counts[scenario], counts[neither])
}

// firstFound is the input of the first of the runs check finds a
// counterexample in.
func firstFound(t testing.TB, configFile, specFile string, runs ...string) (Input, bool) {
	t.Helper()
	for _, run := range runs {
		if in, ok := tryFound(t, configFile, specFile, run); ok {
			return in, true
		}
	}
	return Input{}, false
}

// simulated reads a reproduction's plan as simulate reads it and runs
// it: the invariant it breaks ("" for none). With keep, the run goes
// past its violations (simulate --keep-going), and the invariant is
// target when the run breaks it at all.
func simulated(t *testing.T, dir string, proto *system.Protocol, keep bool, target string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, SimFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ParseConfig(SimFile, raw)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := os.Open(filepath.Join(dir, WorkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	rd, err := workload.NewReader(wf, WorkloadFile)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []cluster.Request
	for {
		q, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, cluster.Request{Index: q.Index, ArrivalUS: q.ArrivalUS, PromptTokens: model.Tokens(q.PromptTokens), OutputTokens: model.Tokens(q.OutputTokens), CancelUS: -1})
	}
	ff, err := os.Open(filepath.Join(dir, FaultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	plan, err := faultplan.Parse(ff, FaultsFile)
	if err != nil {
		t.Fatal(err)
	}
	if keep {
		res, err := runKeptGoing(context.Background(), proto, cfg, reqs, plan.Faults)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.KeptGoing.First(target) != nil {
			return target
		}
		if res.Violation == nil {
			return ""
		}
		return res.Violation.Invariant
	}
	_, res, err := runPlan(context.Background(), proto, cfg, reqs, plan.Faults, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil {
		return ""
	}
	return res.Violation.Invariant
}

// The time to write a reproduction whose plan takes the most runs of the
// shipped variants' (a lease deadline found between a decode's end and a
// fact's delivery, in the second shape of the clock).
func BenchmarkWrite_PlanSearch(b *testing.B) {
	in := found(b, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/late-peer-cancel-fails-done.json", "vllm")
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Write(dir, in)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Plan.Runs), "sim-runs")
	}
}

// The time to find no plan: every candidate run, for an invariant no
// run breaks (the bound on the runs bounds it).
func BenchmarkDerivePlan_NoneReaches(b *testing.B) {
	in := found(b, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/late-peer-cancel-fails-done.json", "vllm")
	cfg, err := system.ParseConfig("config", in.ConfigJSON)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := DerivePlan(context.Background(), in.Protocol, cfg, in.Run, movesOf(in.Found), "NoSuchInvariant", false)
		if err != nil || p.Result != nil {
			b.Fatal(err, p.Result)
		}
		b.ReportMetric(float64(p.Runs), "sim-runs")
	}
}

// A restart in the trace is aimed at the phase of the handoff its
// worker's side last logged a fact at, the form of a plan line that
// simulate and live strike at the same point; the simulator strikes it.
func TestPlan_RestartAimedByPhase(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/configs/small.json")
	if err != nil {
		t.Fatal(err)
	}
	cfgJSON := strings.Replace(string(raw), `"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, `"faults": {"restart": 1}`, 1)
	cfg, err := system.ParseConfig("small.json", []byte(cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	proto := system.Generated()
	c, err := checker.New(proto, cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		moves       []string
		side, after string
		worker      int
	}{
		{[]string{"route-prefill h=0 worker=0", "deliver-request h=0", "compute h=0", "restart worker=0"}, "source", "stored", 0},
		{[]string{"route-prefill h=0 worker=0", "deliver-request h=0", "compute h=0", "route-decode h=0 worker=1", "reserve h=0", "restart worker=1"}, "destination", "transfer_started", 1},
	} {
		var moves []system.Move
		for _, s := range tc.moves {
			m, err := system.ParseMove(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			moves = append(moves, m)
		}
		steps, skipped, why := planSteps(c, cfg, moves)
		if why != "" || len(skipped) > 0 {
			t.Fatalf("%v: %s %v", tc.moves, why, skipped)
		}
		base, err := planConfig(cfg, cfg.Runs[0])
		if err != nil {
			t.Fatal(err)
		}
		reqs := []cluster.Request{{Index: 0, PromptTokens: 48, OutputTokens: 16, CancelUS: -1}}
		p := &Plan{}
		faults, res, err := p.aim(context.Background(), proto, base, reqs, steps, map[int]int{0: 0}, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := faultplan.Fault{Kind: "restart", Request: 0, Worker: -1, Side: tc.side, After: tc.after}
		if len(faults) != 1 || faults[0] != want {
			t.Fatalf("%v: the plan is %+v, want %+v", tc.moves, faults, want)
		}
		if res.Violation != nil || res.Summary.FaultsStruck != 1 {
			t.Fatalf("%v: the built-in tables' run: %+v, %d faults struck", tc.moves, res.Violation, res.Summary.FaultsStruck)
		}
	}
}

// atScale checks a reproduction's incident at the default workload's
// scale: its files, read as simulate reads them with the default
// workload, give the run the README's figures come from.
func atScale(t *testing.T, dir string, proto *system.Protocol, sc *Scale, readme []byte) {
	t.Helper()
	if sc == nil {
		t.Fatal("a plan without its incident at scale")
	}
	raw, err := os.ReadFile(filepath.Join(dir, ScaleSimFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ParseConfig(ScaleSimFile, raw)
	if err != nil {
		t.Fatal(err)
	}
	ff, err := os.Open(filepath.Join(dir, ScaleFaultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	plan, err := faultplan.Parse(ff, ScaleFaultsFile)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := defaultRequests()
	if err != nil {
		t.Fatal(err)
	}
	res, err := runKeptGoing(context.Background(), proto, cfg, reqs, plan.Faults)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sc.Result.Summary, res.Summary, cmpopts.IgnoreUnexported(sim.KeptGoing{})); diff != "" || (res.Violation == nil) != (sc.Result.Violation == nil) {
		t.Fatalf("the files at scale give another run than the README's (-README +files):\n%s", diff)
	}
	if sc.Struck == 0 || sc.Requests != len(reqs) || res.Summary.Requests != len(reqs) {
		t.Fatalf("the faults recur on %d of %d requests; the run had %d", sc.Struck, sc.Requests, res.Summary.Requests)
	}
	flat := strings.Join(strings.Fields(string(readme)), " ")
	_, para, _ := strings.Cut(flat, "**The cost at the default workload's scale.**")
	para, _, _ = strings.Cut(para, "**Live.**")
	runs := []*sim.Result{res}
	for _, r := range runs {
		u := &r.Summary
		want := fmt.Sprintf("%d requests, %d succeeded, %d failed, %d were cancelled", u.Requests, u.Succeeded, u.Failed, u.Cancelled)
		for _, w := range []string{want, fmt.Sprintf("throughput %.2f requests/s, TTFT p99 %.1f ms", u.ThroughputRPS, u.TTFT.P99),
			fmt.Sprintf("stranded source KV %.1f block-seconds", u.StrandedSourceBlockSeconds), fmt.Sprintf("%d blocks still in use at the end", u.KeptGoing.InUseBlocks)} {
			if !strings.Contains(para, w) {
				t.Fatalf("the README's cost at scale lacks %q:\n%s", w, readme)
			}
		}
	}
	if k := res.Summary.KeptGoing; res.Violation != nil && !strings.Contains(para, fmt.Sprintf("%d time", k.Total())) {
		t.Fatalf("the README's cost at scale lacks the count of violations (%d):\n%s", k.Total(), readme)
	}
	if !strings.Contains(para, fmt.Sprintf("on one request in %d (%d of them)", sc.Every, sc.Struck)) {
		t.Fatalf("the README's cost at scale lacks the share of requests struck:\n%s", readme)
	}
}

// A plan's own run, its log cut into one per process as live writes
// them, is judged as conform judges a live run: the README says what
// the judge names, the trace's invariant or another one before it.
func TestPlan_JudgedAsLive(t *testing.T) {
	for _, tc := range []struct {
		variant, run, names, says string
	}{
		{"cancel-noop-leaks-held-source", "vllm", "RouterCleanup", "is rejected naming RouterCleanup too"},
		// The destination's outcome alone would leave a finished side
		// holding its pages (Quiescence), but the step of the tables
		// that logs it breaks InFlightAccounting first, as check says.
		{"withdraw-noop-leaks-reservation", "vllm", "InFlightAccounting", "is rejected naming InFlightAccounting too"},
	} {
		in := found(t, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/"+tc.variant+".json", tc.run)
		dir := t.TempDir()
		res, err := Write(dir, in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan.Judged == nil || !res.Plan.Judged.Rejected || res.Plan.Judged.Names() != tc.names {
			t.Fatalf("%s: judged %+v, want a rejection naming %s", tc.variant, res.Plan.Judged, tc.names)
		}
		readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
		if err != nil {
			t.Fatal(err)
		}
		if flat := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(flat, tc.says) {
			t.Fatalf("%s: the README does not say %q:\n%s", tc.variant, tc.says, readme)
		}
	}
}

// A plan whose violating step takes a fact from a peer that goes on is
// pinned for live: bootstrap-as-readiness's destination is aborted right
// after it logs the fact of the step that sends DestinationReserved, so
// its reservation, never made, cannot be placed before the source's
// dispatch; the pinned run still breaks the invariant, and so does the
// judge on it. report-before-release-applied's destination is aborted
// right after it logs stored, the last of its facts before the source
// takes its ReaderCompleted, so that none of its later facts is placed
// before the source's step. release-before-activation's destination, its core
// slowed, waits in Activating for the activation the step that sends
// ReaderCompleted commanded: Activating has no row for an abort, so none
// keeps it from activating, and a restart of its worker there, tried
// next, forgets the pending activation before the source's release, so
// that the run breaks nothing: its plan is not pinned, and pinWhy says
// both; its live run is judged with a clock error instead (clockLive),
// at the time scale that puts the late activation 200 ms of wall clock
// after the release. A plan whose
// violating step is no delivery (cancel-noop-leaks-held-source's core
// applying a no-op) is left as it is.
func TestPlan_PinsThePeerForLive(t *testing.T) {
	for _, tc := range []struct {
		variant, run, pinned, after string
	}{
		{"bootstrap-as-readiness", "sglang", "an abort of the destination right after it logs request_accepted, the last of its facts before the source takes its DestinationReserved", "request_accepted"},
		{"report-before-release-applied", "vllm", "an abort of the destination right after it logs stored, the last of its facts before the source takes its ReaderCompleted", "stored"},
		{"release-before-activation", "vllm", "", ""},
		{"cancel-noop-leaks-held-source", "vllm", "", ""},
	} {
		in := found(t, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/"+tc.variant+".json", tc.run)
		dir := t.TempDir()
		res, err := Write(dir, in)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Plan
		if p.Pinned != tc.pinned {
			t.Fatalf("%s: pinned %q, want %q", tc.variant, p.Pinned, tc.pinned)
		}
		if tc.pinned == "" {
			if tc.variant == "release-before-activation" && !strings.Contains(p.pinWhy, "with a restart of the destination's worker right after it logs receive_completed, the last of its facts before the source takes its ReaderCompleted, the run on the clock breaks nothing") {
				t.Fatalf("%s: why no pin: %q", tc.variant, p.pinWhy)
			}
			// No pin keeps the destination's late activation out of a
			// live run's logs: the clock orders it after the release.
			if clocked := tc.variant == "release-before-activation"; p.LiveClock() != clocked || clocked && (p.LiveTimeScale() != "1.1" || p.Judged.Names() != res.Invariant) {
				t.Fatalf("%s: clocked %v at time scale %q, judged %+v", tc.variant, p.LiveClock(), p.LiveTimeScale(), p.Judged)
			}
			continue
		}
		if p.LiveClock() {
			t.Fatalf("%s: a pinned plan is judged with a clock error too", tc.variant)
		}
		pin := p.Faults[len(p.Faults)-1]
		if pin.Kind != "abort" || pin.Side != "destination" || pin.After != tc.after || pin.AfterSide != "" {
			t.Fatalf("%s: the pin is %+v", tc.variant, pin)
		}
		if p.Result.Violation == nil || p.Result.Violation.Invariant != res.Invariant || p.Judged.Names() != res.Invariant {
			t.Fatalf("%s: the pinned run breaks %v, judged %+v; want %s", tc.variant, p.Result.Violation, p.Judged, res.Invariant)
		}
		if got := simulated(t, dir, in.Protocol, false, res.Invariant); got != res.Invariant {
			t.Fatalf("%s: the pinned plan's files break %q", tc.variant, got)
		}
		readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
		if err != nil {
			t.Fatal(err)
		}
		if flat := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(flat, "and "+tc.pinned+": it ends as it was then") ||
			!strings.Contains(flat, "is rejected naming "+res.Invariant+" too, with "+tc.pinned) {
			t.Fatalf("%s: the README does not say what the pin is and why:\n%s", tc.variant, readme)
		}
	}
}

// A plan whose deadline live refuses to scale is searched again for one
// live keeps: expired-lease-reports-release's lease, fired before the
// transfer starts, at a deadline live accepts with facts slow enough to
// keep it there, and the README says so.
func TestPlan_FitsLive(t *testing.T) {
	in := found(t, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/expired-lease-reports-release.json", "vllm")
	dir := t.TempDir()
	res, err := Write(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plan
	if _, us := p.shortestTimer(); p.Result == nil || !p.fitsLive || us < liveMinDeadlineUS {
		t.Fatalf("the plan: reaches %v, fits live %v, shortest deadline %d µs", p.Result != nil, p.fitsLive, us)
	}
	readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
	if err != nil {
		t.Fatal(err)
	}
	if flat := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(flat, "Its deadlines are chosen for live") || strings.Contains(flat, "Live refuses this plan") {
		t.Fatalf("the README:\n%s", readme)
	}
}

// A plan whose deadline live refuses to scale, where no plan live keeps
// was found, says so: the deadline, and the --time-scale that would keep
// it; a plan fitted for live says how its deadlines were chosen instead.
func TestPlan_LiveNoteOnDeadlines(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.Timers.LeaseUS = 1
	p := &Plan{Config: cfg}
	note := p.LiveNote()
	if !strings.Contains(note, "Live refuses this plan at its default `--time-scale` 0.01: its lease deadline of 0.001 ms") || !strings.Contains(note, "at `--time-scale` 1000, which does") {
		t.Fatalf("a deadline live refuses: %s", note)
	}
	cfg.Timers.LeaseUS = liveMinDeadlineUS
	p = &Plan{Config: cfg, Timers: "lease 100 ms", fitsLive: true}
	note = p.LiveNote()
	if strings.Contains(note, "Live refuses") || !strings.Contains(note, "Its deadlines are chosen for live: none under 100 ms") {
		t.Fatalf("a plan fitted for live: %s", note)
	}
}

// Where the judge, on the plan's own run cut as a live run's logs are,
// names another invariant than the trace's, the README names both and
// says why a live run cannot show the trace's: by the fact's own
// invariant (which the judge names before any step's), or by the one a
// step of the tables that would explain the fact breaks. No shipped
// variant's plan is judged so (each names its own invariant, or is
// explained only past its violation), so the plans here are made: the
// trace's SourcePinnedUntilRead, the judge's ReleaseNeedsReaderAck, as
// release-on-heartbeat's live logs are judged when the hung transfer's
// failure is placed before the release.
func TestPlan_JudgedNoteNamesAnother(t *testing.T) {
	const detail = "pin released on other, not on reader completion, abort or expiry"
	res := &sim.Result{Violation: &sim.Violation{Invariant: model.NameSourcePinnedUntilRead}}
	for _, tc := range []struct {
		judged *LiveJudged
		want   string
	}{
		{&LiveJudged{Rejected: true, Invariant: model.NameReleaseNeedsReaderAck, Detail: detail},
			" is rejected naming ReleaseNeedsReaderAck, not SourcePinnedUntilRead: " + detail + ". The judge names what a fact breaks by itself before what a step of the tables that would explain it breaks, and a live run logs the same fact."},
		{&LiveJudged{Rejected: true, Broken: model.NameReleaseNeedsReaderAck, Detail: detail},
			" is rejected naming ReleaseNeedsReaderAck, not SourcePinnedUntilRead: " + detail + "."},
		{&LiveJudged{Rejected: true, Detail: "the logs end with the attempt unfinished"},
			" is rejected naming no invariant: the logs end with the attempt unfinished."},
		{&LiveJudged{},
			" is explained: the judge finds an order of the processes' facts in which every invariant holds, so a live run that logs the same facts shows it no SourcePinnedUntilRead."},
	} {
		p := &Plan{Result: res, Judged: tc.judged}
		note := p.judgedNote()
		const lead = " Judged as `conform` judges a live run's logs (each process's facts in their own order only), the plan's own run on the clock, whose log ends at its violation,"
		if !strings.HasPrefix(note, lead) || note[len(lead):] != tc.want {
			t.Errorf("judged %+v:\n got %q\nwant %q", tc.judged, note, lead+tc.want)
		}
		// The note ends the README's live paragraph, whatever the plan.
		if live := p.LiveNote(); !strings.HasSuffix(live, note) {
			t.Errorf("judged %+v: the live note does not end with the judged note:\n%s", tc.judged, live)
		}
	}
}

// A loop's plan caps its deadlines at loopCapUS, so that a live run of
// it, which ends only after silence of twelve times the longest deadline,
// ends in seconds; its run still breaks a bound on time first and
// EventuallyDrained going on past it, and its README gives the live
// command and says what the judge names (TestCheck_ReproOnTheClockAndLive
// runs it).
func TestPlan_LoopCapsItsDeadlinesForLive(t *testing.T) {
	in := found(t, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/rearm-reservation.json", "sglang")
	dir := t.TempDir()
	res, err := Write(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plan
	if !p.NeverDrains() || !p.KeepGoing || p.Target() == nil || p.Target().Invariant != model.NameEventuallyDrained {
		t.Fatalf("the loop's plan: never drains %v, keeps going %v, reaches %+v", p.NeverDrains(), p.KeepGoing, p.Target())
	}
	if p.LoopCaps == "" || !strings.Contains(p.LoopCaps, "reservation 300000 ms") {
		t.Fatalf("the caps: %q", p.LoopCaps)
	}
	if name, us := p.shortestTimer(); us > loopCapUS {
		t.Fatalf("%s deadline %d µs", name, us)
	}
	for tm := model.Timer(0); tm < model.NumTimers; tm++ {
		if us := p.Config.TimerUS(tm); us > loopCapUS {
			t.Fatalf("timer %v at %d µs, over the cap", tm, us)
		}
	}
	if got := simulated(t, dir, in.Protocol, true, res.Invariant); got != model.NameEventuallyDrained {
		t.Fatalf("the plan's files break %q", got)
	}
	readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(readme)), " ")
	for _, want := range []string{
		"every deadline longer than 5000 ms capped at it (" + p.LoopCaps + "), with which the run still loops",
		"handoffcheck live --config sim.json --workload workload.jsonl --faults faults.jsonl",
		"`conform` rejects the logs naming EventuallyDrained",
	} {
		if !strings.Contains(flat, want) {
			t.Fatalf("the README does not say %q:\n%s", want, readme)
		}
	}
	if strings.Contains(flat, "No live plan is derived") {
		t.Fatalf("the README says no live plan:\n%s", readme)
	}
}

// A trace's no-show, which only lets an untimed search reach a timer the
// clock fires at its deadline anyway, is left out of the plan (the fault
// table's LeftOut); a fault of another kind no plan schedules refuses it.
func TestPlan_LeavesOutANoShow(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/configs/small.json")
	if err != nil {
		t.Fatal(err)
	}
	cfgJSON := strings.Replace(string(raw), `"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, `"faults": {"no_show": 1, "background_load": 1}`, 1)
	cfgJSON = strings.Replace(cfgJSON, `"slots": 2,`, `"slots": 2, "background_blocks": 2, "background_at_start": false,`, 1)
	cfg, err := system.ParseConfig("small.json", []byte(cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	c, err := checker.New(system.Generated(), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	parse := func(steps ...string) []system.Move {
		var moves []system.Move
		for _, s := range steps {
			m, err := system.ParseMove(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			moves = append(moves, m)
		}
		return moves
	}
	steps, skipped, why := planSteps(c, cfg, parse("route-prefill h=0 worker=0", "deliver-request h=0", "compute h=0", "no-show h=0"))
	if why != "" || len(steps) != 3 || len(skipped) != 1 || !strings.Contains(skipped[0], "no-show h=0") {
		t.Errorf("a trace with a no-show: %d steps, skipped %q, refused %q; want 3 steps and the no-show skipped", len(steps), skipped, why)
	}
	_, _, why = planSteps(c, cfg, parse("occupy worker=1"))
	if !strings.Contains(why, "background_load fault, which no plan schedules") {
		t.Errorf("a trace with an occupy: refused %q, want it refused as a fault no plan schedules", why)
	}
}
