package sim

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// steady is n requests every gapUS, prompts cycling through a few lengths.
func steady(n int, gapUS int64) *SliceSource {
	src := &SliceSource{}
	for i := 0; i < n; i++ {
		src.Reqs = append(src.Reqs, cluster.Request{Index: i, ArrivalUS: int64(i) * gapUS, PromptTokens: model.Tokens(256 + 512*(i%4)),
			OutputTokens: model.Tokens(16 + 8*(i%5)), PrefixGroup: []string{"a", "b", ""}[i%3], PrefixTokens: model.Tokens(128 * (i % 3 % 2)), CancelUS: -1})
		if src.Reqs[i].PrefixGroup == "" {
			src.Reqs[i].PrefixTokens = 0
		}
	}
	return src
}

func TestRun_DefaultConfigDrains(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			cfg.Policy = pol
			_ = cfg.SetPolicy(pol)
			if pol == "destination-first" {
				cfg.Engine = model.SGLang
			}
			res, err := Run(context.Background(), cfg, steady(200, 20_000), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation != nil {
				t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
			}
			if res.Summary.Succeeded != 200 {
				t.Fatalf("succeeded %d of 200: %+v", res.Summary.Succeeded, res.Summary)
			}
			t.Logf("%+v", res.Summary)
		})
	}
}

func joinHistory(h []string) string {
	out := ""
	for _, l := range h {
		out += l + "\n"
	}
	return out
}

// run runs a workload with faults on the default configuration of a policy.
func runWith(t *testing.T, pol string, src cluster.Source, faults []cluster.Fault) *Result {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.Policy = pol
	_ = cfg.SetPolicy(pol)
	if pol == "destination-first" {
		cfg.Engine = model.SGLang
	}
	res, err := Run(context.Background(), cfg, src, Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRun_FaultsKeepInvariants(t *testing.T) {
	kinds := []cluster.Fault{
		{AtUS: 0, Kind: "loss", Request: 3, Worker: -1, To: "source"},
		{AtUS: 0, Kind: "loss", Request: 4, Worker: -1, To: "destination"},
		{AtUS: 0, Kind: "duplicate", Request: 5, Worker: -1},
		{AtUS: 0, Kind: "hang", Request: 6, Worker: -1},
		{AtUS: 0, Kind: "transfer_failure", Request: 7, Worker: -1},
		{AtUS: 0, Kind: "delay", Request: 8, Worker: -1, Side: "destination"},
		{AtUS: 200_000, Kind: "cancel", Request: 9, Worker: -1},
		{AtUS: 250_000, Kind: "abort", Request: 10, Worker: -1, Side: "source"},
		{AtUS: 400_000, Kind: "restart", Request: -1, Worker: 2},
		{AtUS: 900_000, Kind: "restart", Request: -1, Worker: 0},
	}
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			res := runWith(t, pol, steady(60, 30_000), kinds)
			if res.Violation != nil {
				t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
			}
			t.Logf("%+v", res.Summary)
		})
	}
}

// randomWorkload is n requests with seeded arrivals, lengths and cancels.
func randomWorkload(seed uint64, n int, meanGapUS int64, cancelShare float64) []cluster.Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []cluster.Request
	t := int64(0)
	for i := 0; i < n; i++ {
		t += rng.Int64N(2 * meanGapUS)
		r := cluster.Request{Index: i, ArrivalUS: t, PromptTokens: model.Tokens(32 + rng.IntN(4000)), OutputTokens: model.Tokens(1 + rng.IntN(200)), CancelUS: -1}
		if g := rng.IntN(6); g < 3 {
			r.PrefixGroup = string(rune('a' + g))
			r.PrefixTokens = min(r.PromptTokens, model.Tokens(256*(g+1)))
		}
		if rng.Float64() < cancelShare {
			r.CancelUS = t + rng.Int64N(500_000)
		}
		out = append(out, r)
	}
	return out
}

// TestScenarios_PassOnTheClock runs every named scenario under the
// checker's four runs with the generated machines: every invariant holds
// on every step, and BoundedReclaim holds, faults included. It also
// measures how many rows of the built-in tables the scenario set fires on
// the clock, and lists those it never fires.
func TestScenarios_PassOnTheClock(t *testing.T) {
	var fired [2][]uint64
	for _, sc := range Scenarios {
		for _, run := range timedRuns {
			cfg, reqs, faults, err := sc.Setup(run.policy)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Engine = run.engine
			pol := run.policy + "/" + run.engine.String()
			res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, FaultFree: sc.FaultFree})
			if err != nil {
				t.Fatalf("%s %s: %v", sc.Name, pol, err)
			}
			if res.Violation != nil {
				t.Fatalf("%s %s: %v\n%s", sc.Name, pol, res.Violation, joinHistory(res.Violation.History))
			}
			s := res.Summary
			if s.Succeeded+s.Failed+s.Cancelled != len(reqs) {
				t.Fatalf("%s %s: %d requests accounted of %d", sc.Name, pol, s.Succeeded+s.Failed+s.Cancelled, len(reqs))
			}
			t.Logf("%-22s %-17s ok=%d failed=%d cancelled=%d faults=%d/%d stranded=%.1f block-s reclaim-max=%.1fms", sc.Name, pol, s.Succeeded, s.Failed, s.Cancelled, s.FaultsStruck, s.FaultsStruck+s.FaultsMissed, s.StrandedBlockSeconds, s.ReclaimMaxMS)
			// The measured figures measure: nothing is stranded where no
			// fault strikes and every handoff can succeed; faults strand
			// blocks and strike; shared prefixes hit.
			reserves := run.engine.Traits().CanReserve
			switch {
			case sc.FaultFree && reserves && s.StrandedBlockSeconds != 0:
				t.Errorf("%s %s: %.1f stranded block-seconds without a fault", sc.Name, pol, s.StrandedBlockSeconds)
			case sc.Name == "failure-matrix" && reserves && (s.StrandedBlockSeconds == 0 || s.FaultsStruck == 0):
				t.Errorf("%s %s: faults struck %d, stranded %.1f block-seconds: want both above 0", sc.Name, pol, s.FaultsStruck, s.StrandedBlockSeconds)
			case sc.Name == "router-engine-parity" && reserves && s.PrefixHitTokens == 0:
				t.Errorf("%s %s: a shared prefix never hit", sc.Name, pol)
			}
			for r := range fired {
				if fired[r] == nil {
					fired[r] = make([]uint64, len(res.Rows[r]))
				}
				for i, n := range res.Rows[r] {
					fired[r][i] += n
				}
			}
		}
	}
	total, hit := 0, 0
	var never []string
	for r, rows := range fired {
		role := []string{"source", "destination"}[r]
		for i := 1; i < len(rows); i++ {
			total++
			if rows[i] > 0 {
				hit++
			} else {
				never = append(never, role+" row "+itoa(i))
			}
		}
	}
	t.Logf("rows fired on the clock: %d of %d", hit, total)
	t.Logf("never fired: %v", never)
	// A floor, not a goal. The rows the clock does not reach are, for the
	// most part, a timer that fires after it was stopped (the clock stops
	// a timer in the same instant, so it never fires stale), a health
	// check that would have to outrun a request's delivery, and facts a
	// policy never sends at that point (a reservation to a source-first
	// source).
	if hit < 88 {
		t.Fatalf("the scenario set fires %d of %d rows on the clock, fewer than the 88 it fired when this test was written", hit, total)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRetries_FailedRequestsTryAgain: with max_retries the frontend tries
// a failed request again as a new attempt; every request is counted once,
// by its last attempt, and fewer fail.
func TestRetries_FailedRequestsTryAgain(t *testing.T) {
	sc, _ := LookupScenario("failure-matrix")
	var failed [2]int
	for i, retries := range []int{0, 2} {
		cfg, reqs, faults, err := sc.Setup("source-first")
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxRetries = retries
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults})
		if err != nil || res.Violation != nil {
			t.Fatalf("retries %d: %v %v", retries, err, res.Violation)
		}
		s := res.Summary
		if s.Succeeded+s.Failed+s.Cancelled != len(reqs) {
			t.Fatalf("retries %d: %d+%d+%d requests accounted of %d", retries, s.Succeeded, s.Failed, s.Cancelled, len(reqs))
		}
		if (retries == 0) != (s.Retried == 0) {
			t.Fatalf("retries %d: %d retried", retries, s.Retried)
		}
		failed[i] = s.Failed
		t.Logf("max_retries %d: %d succeeded, %d failed, %d retried", retries, s.Succeeded, s.Failed, s.Retried)
	}
	if failed[1] >= failed[0] {
		t.Fatalf("retrying did not save a failed request: %d failed without, %d with", failed[0], failed[1])
	}
}

// TestQueuedReservationHasADeadline: under destination-first the
// destination arms its reservation deadline when it is routed, so a
// request for a reservation queued while decode stays full has one too.
// When the source gives up and its Cancelled is lost, the destination takes
// its queued request back on that deadline (destination row 70), which
// BoundedReclaim allows; without the deadline it would keep the request
// for as long as decode stays full.
func TestQueuedReservationHasADeadline(t *testing.T) {
	sc, _ := LookupScenario("waiting-faults")
	cfg, _, _, err := sc.Setup("destination-first")
	if err != nil {
		t.Fatal(err)
	}
	var reqs []cluster.Request
	for i := 0; i < 4; i++ {
		reqs = append(reqs, cluster.Request{Index: i, ArrivalUS: int64(i) * 150_000, PromptTokens: 4096, OutputTokens: 20_000, CancelUS: -1})
	}
	res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs},
		Options{Faults: []cluster.Fault{{AtUS: 300_000, Kind: "loss", Request: 3, Worker: -1, To: "destination", Msg: "Cancelled"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
	}
	if n := res.Rows[1][70]; n == 0 {
		t.Fatalf("destination row 70 (Reserving × ReservationExpired) never fired")
	}
	if s := res.Summary; s.Failed == 0 || s.Succeeded+s.Failed+s.Cancelled != len(reqs) {
		t.Fatalf("%d succeeded, %d failed, %d cancelled of %d: want the queued requests failed and every request accounted", s.Succeeded, s.Failed, s.Cancelled, len(reqs))
	}
}

// TestCancelledBeforeItsRequest: under destination-first the destination
// may give up before the request reaches the source, and with facts that
// overtake one another its Cancelled may arrive first. The source then
// remembers it (source row 57) and refuses the request when it comes (row
// 58), at once; forgetting it, the source would hold the request until its
// bootstrap deadline, and BoundedReclaim would fail.
func TestCancelledBeforeItsRequest(t *testing.T) {
	sc, _ := LookupScenario("reorder-sweep")
	cfg, reqs, faults, err := sc.Setup("destination-first")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
	}
	if res.Rows[0][57] == 0 || res.Rows[0][58] == 0 {
		t.Fatalf("source rows 57 and 58 fired %d and %d times: the scenario no longer has a Cancelled overtake its request", res.Rows[0][57], res.Rows[0][58])
	}
	// The same run with the old row (Idle × Cancelled ignored) fails.
	old := spec.Default()
	tb := old.Table(spec.Source)
	i := tb.Lookup(spec.DestinationFirst, "Idle", "Cancelled")
	tb.Rows[i].To, tb.Rows[i].Actions = "", nil
	it, err := interp.New(old)
	if err != nil {
		t.Fatal(err)
	}
	p, err := system.FromStepper("forgets an early Cancelled", old, it)
	if err != nil {
		t.Fatal(err)
	}
	res, err = Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, Protocol: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil || res.Violation.Invariant != cluster.NameBoundedReclaim {
		t.Fatalf("a source that forgets an early Cancelled: want BoundedReclaim, got %v", res.Violation)
	}
	t.Log(res.Violation)
}
