package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// grouped is n requests of prefix group g, gap apart, each decoding for
// out output tokens: at the default 20 ms a token, 50 tokens decode for
// 1 s, ten gaps of 100 ms. So every request after the first arrives
// while earlier ones of its group decode on the worker that published
// the group, and from the eleventh on the first has retired, leaving its
// prefix in that worker's cache.
func grouped(n int, gapUS int64, out int) []cluster.Request {
	rs := make([]cluster.Request, n)
	for i := range rs {
		rs[i] = cluster.Request{Index: i, ArrivalUS: int64(i) * gapUS, PromptTokens: 512, OutputTokens: model.Tokens(out),
			PrefixGroup: "g", PrefixTokens: 256, CancelUS: -1}
	}
	return rs
}

// route is where the decode router sent an attempt and its prefix hit.
type route struct {
	to  string
	hit int64
}

// decodeRoutes reads the decode router's routed facts of a run: for each
// attempt, the process it went to and its prefix hit.
func decodeRoutes(t *testing.T, rep *Report) map[string]route {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(rep.Config), "router.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]route{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Kind    string `json:"kind"`
			Attempt string `json:"attempt"`
			Stage   string `json:"stage"`
			To      string `json:"to"`
			Hit     int64  `json:"prefix_hit_tokens"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Kind != "routed" || l.Stage != "decode" {
			continue
		}
		out[l.Attempt] = route{l.To, l.Hit}
	}
	return out
}

// TestLiveKVAware_RoutesByThePublishedIndex: the workers publish their KV
// events (kv frames) and the kv-aware decode router reads the index they
// feed. Every request of the group after the first goes to the decode
// worker that published the group (from the third on); those routed
// after the first retired
// find its prefix cached there (prefix hits, their worlds priced with
// the hit); the logs conform. The run's deadlines are far from its
// gaps, so that only a machine too late for the run (which Run then runs
// again at a larger time scale) could route otherwise. The same workload under least-loaded
// finds no hit: that router reads no index.
func TestLiveKVAware_RoutesByThePublishedIndex(t *testing.T) {
	n := 16
	if testing.Short() {
		n = 14
	}
	rs := grouped(n, 100_000, 50)
	// The second request comes 500 ms after the first (400 ms more than
	// the gap), long after the first's received blocks are published
	// (some 40 ms into it), so that a loaded machine rarely routes it
	// before the index holds the group.
	for i := 1; i < n; i++ {
		rs[i].ArrivalUS += 400_000
	}
	for _, tc := range []struct {
		policy string
		router cluster.Router
	}{{"source-first", cluster.KVAware}, {"destination-first", cluster.KVAware}, {"source-first", cluster.LeastLoaded}} {
		router := tc.router
		t.Run(tc.policy+"/"+router.String(), func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			if tc.policy == "destination-first" {
				cfg.Engine = model.SGLang
			}
			if err := cfg.SetPolicy(tc.policy); err != nil {
				t.Fatal(err)
			}
			cfg.Prefill.Workers = 1
			cfg.DecodeRouter = router
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.1, Dir: dirFor(t), Spawn: &GoSpawner{}})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean || rep.Succeeded != n || len(rep.Findings) > 0 {
				rep.Write(os.Stderr)
				t.Fatalf("want %d clean successes", n)
			}
			judge(t, rep)
			routes := decodeRoutes(t, rep)
			if len(routes) != n {
				t.Fatalf("%d decode routes in the router's log, want %d", len(routes), n)
			}
			var hits int64
			for _, r := range routes {
				hits += r.hit
			}
			if rep.PrefixShortBlocks != 0 {
				t.Errorf("%d blocks of prefix hits held beyond capacity on workers far from full", rep.PrefixShortBlocks)
			}
			if hits != rep.PrefixHitTokens || rep.PrefixRequests != n {
				t.Errorf("the report gives %d hit tokens of %d prefix requests; the router's log %d of %d", rep.PrefixHitTokens, rep.PrefixRequests, hits, n)
			}
			if router == cluster.LeastLoaded {
				if hits != 0 || rep.PrefixHits != 0 {
					t.Errorf("least-loaded found %d prefix hits (%d tokens): it reads no index", rep.PrefixHits, hits)
				}
				return
			}
			// From the third on every request goes to a worker that
			// published the group: the first's, and the second's when the
			// second was routed before the first's blocks reached the
			// index (a machine far behind the run); among those the
			// router takes the least loaded, as the simulator's does.
			first, second := routes[cluster.AttemptName(&rs[0], 0)].to, routes[cluster.AttemptName(&rs[1], 0)].to
			if second != first {
				t.Logf("the second request went to %s before the first's blocks on %s reached the index", second, first)
			}
			for i := 2; i < n; i++ {
				name := cluster.AttemptName(&rs[i], 0)
				if r := routes[name]; r.to != first && r.to != second {
					t.Errorf("%s went to %s; only %s and %s published the group", name, r.to, first, second)
				}
			}
			if rep.PrefixHits == 0 || rep.PrefixHitTokens != int64(rep.PrefixHits)*256 {
				rep.Write(os.Stderr)
				t.Errorf("%d prefix hits of %d tokens, want some, 256 tokens each", rep.PrefixHits, rep.PrefixHitTokens)
			}
		})
	}
}

type idleProc struct{}

func (idleProc) Kill() error { return nil }
func (idleProc) Wait() error { return nil }

// idleSpawner starts nothing: a coordinator under test restarts workers
// whose frames the test writes itself.
type idleSpawner struct{}

func (idleSpawner) Start(context.Context, WorkerArgs) (Proc, error) { return idleProc{}, nil }

// TestCoord_RestartClearsKVIndex: a decode worker's restart drops what it
// published from the index, as its worker_restarted tells a KV router's
// indexer. Before it, the kv-aware router sends a request of the group
// the worker published there, with a prefix hit; after it, a request of
// the group finds no worker advertising it and no hit, and a KV event
// of the old generation arriving late changes nothing; once the new
// generation publishes the group, its requests go there again, with a
// hit.
func TestCoord_RestartClearsKVIndex(t *testing.T) {
	c, d, kv, routeNext := kvCoord(t)
	kv(1, "stored", 64, 0)
	if a := routeNext(); a.d != d || a.hit != 256 {
		t.Fatalf("with g published on worker %d: routed to %d with a hit of %d tokens, want %d with 256", d, a.d, a.hit, d)
	}
	c.restart(d)
	if c.index.Holds(d, "g") || c.cacheOf(d) != 0 {
		t.Fatalf("after the restart the index still advertises g on worker %d (cache %d)", d, c.cacheOf(d))
	}
	kv(1, "stored", 64, 0) // the old generation's, late
	for range 2 {
		if a := routeNext(); a.hit != 0 || c.index.Holds(d, "g") {
			t.Fatalf("after the restart a request of g went to worker %d with a hit of %d tokens; g advertised on %d: %v", a.d, a.hit, d, c.index.Holds(d, "g"))
		}
	}
	kv(2, "stored", 64, 0)
	if a := routeNext(); a.d != d || a.hit != 256 {
		t.Fatalf("with g published again on worker %d: routed to %d with a hit of %d tokens, want %d with 256", d, a.d, a.hit, d)
	}
	if c.rep.PrefixHits != 2 || c.rep.PrefixHitTokens != 512 || c.rep.PrefixRequests != 4 || len(c.rep.Findings) > 0 {
		t.Errorf("report: %d hits of %d tokens in %d prefix requests, findings %v; want 2, 512, 4, none", c.rep.PrefixHits, c.rep.PrefixHitTokens, c.rep.PrefixRequests, c.rep.Findings)
	}
}

// TestCoord_CacheCountsHitsNotYetTaken: the router's view of a worker's
// cache is what the worker last reported less the hits routed there that
// it had not taken then. A cache of 24 blocks holds one 16-block prefix:
// after one hit, a report the worker sent before it took that hit (24
// cached, 0 taken) leaves no room for a second; its report after (8
// cached, 16 taken) neither; once a retiring request returns 16 blocks
// (24 cached, 16 taken) the next request hits again.
func TestCoord_CacheCountsHitsNotYetTaken(t *testing.T) {
	c, d, kv, routeNext := kvCoord(t)
	kv(1, "stored", 24, 0)
	for i, want := range []model.Tokens{256, 0, 0, 256} {
		switch i {
		case 1:
			kv(1, "none", 24, 0)
		case 2:
			kv(1, "none", 8, 16)
		case 3:
			kv(1, "none", 24, 16)
		}
		if a := routeNext(); a.hit != want {
			t.Errorf("request %d: a hit of %d tokens with the cache seen as %d blocks; want %d", i, a.hit, c.cacheOf(d), want)
		}
	}
}

// kvCoord is a coordinator of the default configuration whose workers
// are the test's: kv(gen, msg, cached, taken) is a KV event of group g
// (16 blocks) from decode worker d, routeNext routes a request of g (a
// prefix of 256 tokens, 16 blocks) to prefill and decode.
func kvCoord(t *testing.T) (c *coord, d int, kv func(gen int64, msg string, cached, taken int64), routeNext func() *catt) {
	cfg := cluster.DefaultConfig()
	if cfg.DecodeRouter != cluster.KVAware {
		t.Fatalf("the default decode router is %s", cfg.DecodeRouter)
	}
	st, err := newStepper(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	n := cfg.NumWorkers()
	var logBuf bytes.Buffer
	log, err := obslog.NewWriter(&logBuf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	c = &coord{cfg: cfg, stepper: st, epoch: time.Now(), errs: io.Discard, atts: map[string]*catt{}, marks: map[int]*marks{},
		ctx: context.Background(), ln: ln, log: log, opt: Options{Spawn: idleSpawner{}, Dir: t.TempDir(), Workload: &slice{}},
		rng: rand.New(rand.NewPCG(1, 2)), index: cluster.NewKVIndex(n), cache: make([]model.Blocks, n), hitBlocks: make([]int64, n), taken: make([]int64, n)}
	c.wk = make([]model.Worker, n)
	c.sums = make([]model.Holdings, n)
	c.booked = make([]workerGauges, n)
	for w := range n {
		c.ws = append(c.ws, &cworker{w: w, gen: 1, starting: true})
	}
	// decode-1: the load alone would send a request to decode-0.
	d = cfg.Prefill.Workers + 1
	kv = func(gen int64, msg string, cached, taken int64) {
		c.inbound(inbound{c: &wconn{w: d}, f: Frame{Kind: KKV, Gen: gen, Attempt: "x", Msg: msg, Group: "g", Blocks: 16, Cached: cached, HitBlocks: taken}})
	}
	i := 0
	routeNext = func() *catt {
		r := cluster.Request{Index: i, PromptTokens: 512, OutputTokens: 8, PrefixGroup: "g", PrefixTokens: 256, CancelUS: -1}
		i++
		c.next = &r
		if err := c.arrive(); err != nil {
			t.Fatal(err)
		}
		a := c.atts[cluster.AttemptName(&r, 0)]
		a.st.W.H[0].Announced = true // the source's announce came
		c.routeDecode(a)
		return a
	}
	return c, d, kv, routeNext
}

// TestLiveReplayParity_PrefixHits: a group's requests a second apart,
// each decoding for 1.3 s, through the simulator and through live
// processes with the kv-aware router: the same transitions, every
// request routed to the same worker with the same prefix hit. In the
// simulator the first request's received blocks are published some
// 800 ms before the second is routed, and it retires (its prefix kept
// in the cache) some 500 ms from the routes before and after: margins
// that dwarf the scheduling noise at the parity time scale (source-first;
// destination-first routes each request's decode earlier, its own
// timeline shifted alike). Under both policies.
func TestLiveReplayParity_PrefixHits(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick look runs TestLiveKVAware_RoutesByThePublishedIndex")
	}
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) { prefixParity(t, policy) })
	}
}

func prefixParity(t *testing.T, policy string) {
	cfg := parityConfig(t, policy)
	cfg.Prefill.Workers = 1
	rs := grouped(8, 1_000_000, 65)
	var buf bytes.Buffer
	lw, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &slice{rs: rs}, sim.Options{Log: lw})
	if err != nil || res.Violation != nil {
		t.Fatalf("the simulator: %v %v", err, res.Violation)
	}
	lw.Flush()
	simLog := buf.Bytes()
	want, err := ReadTransitions(map[string]io.Reader{"sim": bytes.NewReader(simLog)}, []string{"sim"})
	if err != nil {
		t.Fatal(err)
	}
	wantRoutes := routesOf(t, map[string][]byte{"sim": simLog})
	if res.Summary.PrefixHitTokens == 0 {
		t.Fatalf("the simulator found no prefix hit: the workload does not show what it should")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: parityScale, Dir: dirFor(t), Spawn: &GoSpawner{Errors: io.Discard}, Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TooLate {
		t.Skipf("the machine is too loaded to compare: %s", rep.LateWhy)
	}
	if !rep.Clean || len(rep.Findings) > 0 {
		rep.Write(os.Stderr)
		t.Fatal("want a clean run")
	}
	logs := map[string][]byte{}
	for _, f := range rep.Logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs[f] = b
	}
	if d := cmp.Diff(wantRoutes, routesOf(t, logs)); d != "" {
		t.Errorf("decode routes (process, prefix hit) differ (-simulate +live):\n%s", d)
	}
	if d := cmp.Diff(want, runTransitions(t, rep)); d != "" {
		t.Errorf("live differs from the simulator (-simulate +live):\n%s", d)
	}
	if rep.PrefixHitTokens != res.Summary.PrefixHitTokens {
		t.Errorf("live found %d prefix hit tokens, the simulator %d", rep.PrefixHitTokens, res.Summary.PrefixHitTokens)
	}
	judge(t, rep)
}

// routesOf reads the decode router's routed facts from logs: for each
// attempt, the process it went to and its prefix hit.
func routesOf(t *testing.T, logs map[string][]byte) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	for name, b := range logs {
		r, err := obslog.NewReader(bytes.NewReader(b), name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			f, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind == obslog.Routed && f.Stage == model.DestinationSide {
				out[f.Attempt] = [2]int64{int64(f.To), f.PrefixHitTokens}
			}
		}
	}
	return out
}
