package explore

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/diagram"
	"github.com/handoffcheck/handoffcheck/checker/internal/browser"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

var rewrite = flag.Bool("rewrite", false, "write the page's screenshots to docs/img")

// counterexample is a shipped variant's counterexample: the trace of
// release-on-heartbeat, whose source releases its pin on a heartbeat.
const counterexample = "../../testdata/traces/release-on-heartbeat.jsonl"

// openTrace builds the checker a trace file names and a server with the
// trace opened.
func openTrace(t testing.TB, file string) (*checker.Checker, *checker.Trace, *Server) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := checker.ParseTrace(file, data)
	if err != nil {
		t.Fatal(err)
	}
	proto := system.Generated()
	if tr.Spec != nil {
		proto = interpreted(t, tr.Spec)
	}
	runs, err := checker.SelectRuns(tr.Config, []string{tr.Run}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(proto, tr.Config, runs[0], Options{Title: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.OpenTrace(file, tr); err != nil {
		t.Fatal(err)
	}
	return s.Checker(), tr, s
}

func interpreted(t testing.TB, s *spec.Spec) *system.Protocol {
	return variant.Of(t, "variant", s)
}

// Every state the page shows along a trace, and every successor it
// offers there, is the one the checker's own session reaches with the
// same moves; the trace's last step carries the violation it records.
func TestState_FollowsTheChecker(t *testing.T) {
	c, tr, s := openTrace(t, counterexample)
	if tr.Violation == "" {
		t.Fatalf("%s records no violation", counterexample)
	}
	sess := c.Initial()
	for i := 0; i <= len(tr.Moves); i++ {
		v, err := s.State(s.trace.Path[:i])
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !slices.Equal(v.Lines, c.DescribeState(&sess)) {
			t.Fatalf("step %d: the page shows\n%s\nthe checker\n%s", i, strings.Join(v.Lines, "\n"), strings.Join(c.DescribeState(&sess), "\n"))
		}
		moves := c.MovesInto(&sess, nil)
		if len(v.Moves) != len(moves) {
			t.Fatalf("step %d: the page offers %d moves, the checker enables %d", i, len(v.Moves), len(moves))
		}
		for j, m := range moves {
			if v.Moves[j].Move != m.String() {
				t.Fatalf("step %d: move %d is %q on the page, %q in the checker", i, j, v.Moves[j].Move, m)
			}
			next := sess
			r, err := c.Apply(&next, m)
			if err != nil {
				t.Fatal(err)
			}
			if (r.Violation != nil) != (v.Moves[j].Breaks != nil) {
				t.Fatalf("step %d: move %s: the checker's violation %v, the page's mark %v", i, m, r.Violation, v.Moves[j].Breaks)
			}
		}
		if i == len(tr.Moves) {
			if v.Violation == nil || v.Violation.Invariant != tr.Violation || v.Violation.Step != len(tr.Moves) {
				t.Fatalf("the trace's end shows violation %+v, want %s at step %d", v.Violation, tr.Violation, len(tr.Moves))
			}
			found := false
			for _, vd := range v.Verdicts {
				if vd.Invariant == tr.Violation {
					found = vd.Verdict == "violated"
				}
			}
			if !found {
				t.Errorf("the verdicts at the trace's end do not mark %s violated: %+v", tr.Violation, v.Verdicts)
			}
			break
		}
		if _, err := c.Apply(&sess, tr.Moves[i]); err != nil {
			t.Fatal(err)
		}
		if v.Violation != nil {
			t.Fatalf("step %d: a violation before the trace's end: %+v", i, v.Violation)
		}
	}
}

// A search from a trace's state finds the shortest continuation to a
// violation and names it as a path the page opens: from step 3 of the
// counterexample, the trace's own violation three steps on; a search from
// a path that is not enabled is a 400.
func TestSearch_FromAState(t *testing.T) {
	_, tr, s := openTrace(t, counterexample)
	f, err := s.Search(context.Background(), s.trace.Path[:3], "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Violation == nil || f.Violation.Invariant != tr.Violation || len(f.Path) != len(tr.Moves) {
		t.Fatalf("found %+v", f)
	}
	if !slices.Equal(f.Path[:3], s.trace.Path[:3]) {
		t.Errorf("the found path %v does not begin with the start's %v", f.Path, s.trace.Path[:3])
	}
	v, err := s.State(f.Path)
	if err != nil || v.Violation == nil || v.Violation.Invariant != tr.Violation {
		t.Fatalf("the found path's state: %v, %+v", err, v)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/search?path=0.0.99")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a search from a move not enabled: %d", resp.StatusCode)
	}
}

// A malformed path, or one that chooses a move that is not enabled, is a
// 400 naming the step; the server keeps serving.
func TestServer_RefusesBadPaths(t *testing.T) {
	_, _, s := openTrace(t, counterexample)
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, c := range []struct{ path, want string }{
		{"/api/state?path=x", `step 1 is "x", want a move's index`},
		{"/api/state?path=0.-1", `step 2 is "-1"`},
		{"/api/state?path=0.0.99", "step 3 chooses move 99, but"},
		{"/api/state?path=" + strings.Repeat("0.", MaxPath) + "0", "at most 10000"},
	} {
		code, body := get(c.path)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %q, want 400 with %q", c.path, code, body, c.want)
		}
	}
	if code, body := get("/api/state?path=0.0"); code != http.StatusOK || !strings.Contains(body, `"lines"`) {
		t.Errorf("after the bad requests: %d %q", code, body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "handoffcheck explore") {
		t.Errorf("the page: %d %.80q", code, body)
	}
}

func TestLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", "127.0.0.1:8080", "[::1]:0", "localhost:0"} {
		if err := Loopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:0", ":8080", "192.168.1.2:80", "example.com:80", "127.0.0.1"} {
		if err := Loopback(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// A trace whose move is not enabled where it is taken is refused at its
// line.
func TestOpenTrace_RefusesAMoveNotEnabled(t *testing.T) {
	_, tr, s := openTrace(t, counterexample)
	bad := *tr
	bad.Moves = slices.Clone(tr.Moves)
	bad.Moves[0], bad.Moves[1] = bad.Moves[1], bad.Moves[0]
	err := s.OpenTrace("x.jsonl", &bad)
	if err == nil || !strings.Contains(err.Error(), "x.jsonl:"+strconv.Itoa(tr.Lines[0])+": step 1:") {
		t.Fatalf("got %v", err)
	}
}

// The page in a real browser: open a variant's counterexample, click to
// its violating step and read the invariant's name from the page; then
// branch off at step 3 by choosing another move and hold the page's
// state to the checker's own successor.
func TestExplorer_InChromium(t *testing.T) {
	ctx := browser.Tab(t)
	c, tr, s := openTrace(t, counterexample)
	srv := httptest.NewServer(s)
	defer srv.Close()

	// loaded waits until the page rendered the state its hash names.
	loaded := func(hash string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(`body[data-loaded="` + hash + `"]`)
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return v
	}
	last := len(tr.Moves)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`#trace li[data-step="`+strconv.Itoa(last)+`"]`),
		chromedp.Click(`#trace li[data-step="`+strconv.Itoa(last)+`"]`),
		loaded(hashOf(s.trace.Path)),
	); err != nil {
		t.Fatal(err)
	}
	if invariant := text(`#violation .invariant`); invariant != tr.Violation {
		t.Fatalf("the page names %q at the violating step, the trace records %q", invariant, tr.Violation)
	}
	t.Logf("violating step %d: %s: %s", last, tr.Violation, text(`#violation .detail`))
	screenshot(t, ctx, "explore-trace.png")
	// The machines' tables: the row the violating step fired is marked
	// fired; at the step before, the same row is marked as one an enabled
	// move would fire.
	at := s.trace
	v, err := s.State(at.Path)
	if err != nil || len(v.Fired) == 0 {
		t.Fatalf("the violating step fired no row: %v", err)
	}
	row := v.Fired[len(v.Fired)-1]
	sel := `#machine-` + row.Role + ` tr[data-row="` + strconv.Itoa(row.Row) + `"]`
	if cls := text(sel + `.fired td`); cls != strconv.Itoa(row.Row) {
		t.Fatalf("%s is not marked fired (%q)", sel, cls)
	}
	diagramAtLastStep(t, ctx, c, tr, s)
	// Every cell of the tables reads as machines/*.md writes it: a row
	// that stays, or does nothing, says so.
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table.machine td"), td => td.textContent).filter(t => t === "undefined")`))
	if err != nil || len(cells) != 0 {
		t.Fatalf("the machines' tables hold %d undefined cells (%v)", len(cells), err)
	}
	stays, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll("#machine-source td:nth-child(5)"), td => td.textContent).filter(t => t === "(stay)").length`))
	if err != nil || stays == 0 {
		t.Fatalf("no source row reads (stay) (%v)", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(`#trace li[data-step="`+strconv.Itoa(len(tr.Moves)-1)+`"]`),
		loaded(hashOf(at.Path[:len(at.Path)-1])),
		chromedp.WaitVisible(sel+`.next`),
	); err != nil {
		t.Fatal(err)
	}

	// Branch off after step 3: choose a move the trace does not take.
	sess := c.Initial()
	for _, m := range tr.Moves[:3] {
		if _, err := c.Apply(&sess, m); err != nil {
			t.Fatal(err)
		}
	}
	moves := c.MovesInto(&sess, nil)
	other := -1
	for i := range moves {
		if i != s.trace.Path[3] {
			other = i
			break
		}
	}
	if other < 0 {
		t.Fatalf("after step 3 only the trace's move is enabled; the test needs a branch")
	}
	if _, err := c.Apply(&sess, moves[other]); err != nil {
		t.Fatal(err)
	}
	branch := append(slices.Clone(s.trace.Path[:3]), other)
	if err := chromedp.Do(ctx,
		chromedp.Click(`#trace li[data-step="3"]`),
		loaded(hashOf(s.trace.Path[:3])),
		chromedp.Click(`#moves button[data-index="`+strconv.Itoa(other)+`"]`),
		loaded(hashOf(branch)),
	); err != nil {
		t.Fatal(err)
	}
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#lines li"), li => li.firstChild.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := c.DescribeState(&sess); !slices.Equal(lines, want) {
		t.Fatalf("after branching off with %s the page shows\n%s\nthe checker's successor is\n%s",
			moves[other], strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	screenshot(t, ctx, "explore-branch.png")
	// Search from the trace's step 3: the page offers the path to the
	// trace's violation, and opening it shows the violation.
	if err := chromedp.Do(ctx,
		chromedp.Click(`#trace li[data-step="3"]`),
		loaded(hashOf(s.trace.Path[:3])),
		chromedp.Click(`#search`),
		chromedp.WaitVisible(`#search-result[data-done="true"]`),
	); err != nil {
		t.Fatal(err)
	}
	if got := text(`#search-result .invariant`); got != tr.Violation {
		t.Fatalf("the search from step 3 names %q, want %q", got, tr.Violation)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#search-open`), loaded(hashOf(s.trace.Path))); err != nil {
		t.Fatal(err)
	}
	if got := text(`#violation .invariant`); got != tr.Violation {
		t.Fatalf("the found path's end shows %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.NavigateBack(), loaded(hashOf(s.trace.Path[:3])), chromedp.NavigateBack(), loaded(hashOf(branch))); err != nil {
		t.Fatal(err)
	}
	// The browser's back button returns to the trace's step 3.
	if err := chromedp.Do(ctx, chromedp.NavigateBack(), loaded(hashOf(s.trace.Path[:3]))); err != nil {
		t.Fatal(err)
	}
	back, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.path`))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmtPath(s.trace.Path[:3]); back != want {
		t.Fatalf("after back the page is at %q, want %q", back, want)
	}
	// A search for one chosen invariant from there names it, not the
	// first of the registry the same step breaks.
	const chosen = model.NameOutcomeTruthful
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#invariant`, chosen),
		chromedp.Click(`#search`),
		chromedp.WaitVisible(`#search-result[data-done="true"]`),
	); err != nil {
		t.Fatal(err)
	}
	if got := text(`#search-result .invariant`); got != chosen || got == tr.Violation {
		t.Fatalf("the search for %s names %q", chosen, got)
	}
	t.Logf("search for %s: %s", chosen, text(`#search-result`))
}

// diagramAtLastStep holds the machines' diagrams at a trace's last step
// to the checker: for the handoff whose row the step fired, chosen on the
// page, the node marked current in each role's diagram reads the state
// the checker's own session is in, and the edge of the row the step
// fired, out of the state the checker was in before it, is marked fired.
func diagramAtLastStep(t *testing.T, ctx context.Context, c *checker.Checker, tr *checker.Trace, s *Server) {
	t.Helper()
	sess := c.Initial()
	for _, m := range tr.Moves[:len(tr.Moves)-1] {
		if _, err := c.Apply(&sess, m); err != nil {
			t.Fatal(err)
		}
	}
	p := c.Protocol()
	stateOf := func(st *system.State, role spec.Role, h int) string {
		if role == spec.Source {
			return p.StateName(role, st.Src[h])
		}
		return p.StateName(role, st.Dst[h])
	}
	// The session's state changes in place: the names before the step
	// are read before it.
	var before [2][]string
	for h := range c.World().Handoffs {
		for _, role := range []spec.Role{spec.Source, spec.Destination} {
			before[role] = append(before[role], stateOf(&sess, role, h))
		}
	}
	r, err := c.Apply(&sess, tr.Moves[len(tr.Moves)-1])
	if err != nil || len(r.Fired) == 0 {
		t.Fatalf("the trace's last step fires no row: %v", err)
	}
	f := r.Fired[len(r.Fired)-1]
	h := f.Handoff
	from := before[f.Role][h]
	path := fmtPath(s.trace.Path)
	if _, err := chromedp.Run(ctx, chromedp.SetValue(`#diagram-handoff`, strconv.Itoa(h))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("diagram-handoff").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitReady(`body[data-diagram="`+path+`/h`+strconv.Itoa(h)+`"]`)); err != nil {
		t.Fatal(err)
	}
	for _, role := range []spec.Role{spec.Source, spec.Destination} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#diagram-`+role.String()+` g.node.current > text, #diagram-`+role.String()+` g.node.current a > text"), e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if want := stateOf(&sess, role, h); len(got) != 1 || got[0] != want {
			t.Fatalf("the %s diagram marks %q as h%d's state, the checker has %s", role, got, h, want)
		}
	}
	id := diagram.EdgeID(f.Role, f.Row, from)
	cls, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById(`+strconv.Quote(id)+`) || {getAttribute: () => "missing"}).getAttribute("class")`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(cls), "fired") {
		t.Fatalf("the edge %s of the row the last step fired has class %q, want it marked fired", id, cls)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".diagram g.edge.fired").length`)); err != nil || n != 1 {
		t.Fatalf("%d edges marked fired, want the one row's (%v)", n, err)
	}
	t.Logf("h%d: %s row %d fired from %s", h, f.Role, f.Row, from)
	shotOf(t, ctx, "#diagram-"+f.Role.String(), "explore-diagram.png")
}

// screenshot takes the page as the browser shows it; with -rewrite it
// becomes the picture of docs/img the explorer's page shows.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || cfg.Width < 800 || cfg.Height < 600 {
		t.Fatalf("screenshot %s: %v, %dx%d", name, err, cfg.Width, cfg.Height)
	}
	if *rewrite {
		if err := os.WriteFile("../../docs/img/"+name, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shotOf takes one element of the page, scrolled into view; with
// -rewrite it becomes a picture of docs/img.
func shotOf(t *testing.T, ctx context.Context, sel, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(sel))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || cfg.Width < 300 || cfg.Height < 150 {
		t.Fatalf("screenshot %s: %v, %dx%d", name, err, cfg.Width, cfg.Height)
	}
	if *rewrite {
		if err := os.WriteFile("../../docs/img/"+name, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func hashOf(path []int) string { return "#p=" + fmtPath(path) }

func fmtPath(path []int) string {
	parts := make([]string, len(path))
	for i, n := range path {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ".")
}

// Stepping on the embedded default configuration: the time to answer
// for a state along a walk of 40 moves, each request replaying its path
// from the initial state as the server does. p99-ms is the 99th
// percentile of the answers.
func BenchmarkState_DefaultConfig(b *testing.B) {
	cfg, err := system.ParseConfig("default.json", checker.ConfigJSON("default.json"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(system.Generated(), cfg, cfg.Runs[0], Options{Title: "default.json"})
	if err != nil {
		b.Fatal(err)
	}
	var path []int
	for i := 0; i < 40; i++ {
		v, err := s.State(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(v.Moves) == 0 {
			break
		}
		path = append(path, (i*7)%len(v.Moves))
	}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := s.State(path[:i%(len(path)+1)]); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// With a properties file, every state shows each property's judgement,
// and a search for a sometimes property finds the shortest path to where
// it holds, the one check --props reports as its witness.
func TestProps_JudgedAndSearchedFor(t *testing.T) {
	data, err := os.ReadFile("../../testdata/props/questions.props")
	if err != nil {
		t.Fatal(err)
	}
	set, err := props.Load("questions.props", data)
	if err != nil {
		t.Fatal(err)
	}
	cfgJSON, err := os.ReadFile("../../testdata/configs/small.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("small.json", cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(system.Generated(), cfg, cfg.Runs[0], Options{Title: "small.json", Props: set})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.State(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Properties) != len(set.Props) {
		t.Fatalf("%d properties shown, the file has %d", len(v.Properties), len(set.Props))
	}
	for _, p := range v.Properties {
		if p.Kind == "always" && !p.Holds {
			t.Errorf("%s does not hold at the initial state", p.Name)
		}
	}
	f, err := s.Search(context.Background(), nil, "PinnedAfterDecode")
	if err != nil {
		t.Fatal(err)
	}
	if f.Violation == nil || f.Violation.Invariant != "PinnedAfterDecode" {
		t.Fatalf("the search for PinnedAfterDecode found %+v", f)
	}
	at, err := s.State(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range at.Properties {
		if p.Name == "PinnedAfterDecode" && !p.Holds {
			t.Errorf("PinnedAfterDecode does not hold where the search ends")
		}
	}
	// check --props finds the same witness length.
	rep, err := checker.Check(context.Background(), system.Generated(), withJudge(cfg, props.Target{P: s.sometimes("PinnedAfterDecode")}), cfg.Runs[:1], checker.Limits{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ce := rep.Runs[0].Violation; ce == nil || len(ce.Steps) != len(f.Path) {
		t.Errorf("the witness search takes %v steps, the page's %d", ce, len(f.Path))
	}
	if _, err := s.Search(context.Background(), nil, "ActivatedKVKept"); err == nil || !strings.Contains(err.Error(), "no sometimes property") {
		t.Errorf("an always property as a target: %v", err)
	}
}

func withJudge(cfg *system.Config, j system.StateJudge) *system.Config {
	c := *cfg
	c.Judge = j
	c.Symmetry = false
	return &c
}

// The diagrams served are the run's own tables': the built-in tables'
// are the ones machines embeds, a variant's are laid out from the
// variant (release-on-heartbeat's edge from Pinned on LeaseRenewed goes
// to Released, the built-in one stays); an unknown role is a 400.
func TestDiagram_TheRunsTables(t *testing.T) {
	get := func(s *Server, query string) (int, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/diagram?"+query, nil))
		return rec.Code, rec.Body.String()
	}
	cfg, err := system.ParseConfig("default.json", checker.ConfigJSON("default.json"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := New(system.Generated(), cfg, cfg.Runs[0], Options{Title: "default.json"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := machines.Diagrams.ReadFile(diagram.File(spec.Destination, cfg.Runs[0].Policy))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(def, "role=destination"); code != http.StatusOK || body != string(want) {
		t.Errorf("the default run's destination diagram: %d, %d bytes, want the embedded %d", code, len(body), len(want))
	}
	_, _, variant := openTrace(t, counterexample)
	code, body := get(variant, "role=source")
	if code != http.StatusOK {
		t.Fatalf("the variant's source diagram: %d %s", code, body)
	}
	edge := func(doc string, from, to, event string) bool {
		// An edge's title is FROM->TO and its label the event.
		i := strings.Index(doc, "<title>"+from+"&#45;&gt;"+to+"</title>")
		return i >= 0 && strings.Contains(doc[i:min(len(doc), i+2000)], ">"+event+"</text>")
	}
	if !edge(body, "Pinned", "Released", "LeaseRenewed") {
		t.Errorf("the variant's diagram has no edge Pinned -> Released on LeaseRenewed")
	}
	_, builtin := get(def, "role=source")
	if edge(builtin, "Pinned", "Released", "LeaseRenewed") || !edge(builtin, "Pinned", "Pinned", "LeaseRenewed") {
		t.Errorf("the built-in diagram's LeaseRenewed edge out of Pinned is not the built-in table's")
	}
	if code, body := get(def, "role=router"); code != http.StatusBadRequest || !strings.Contains(body, `role "router": want source or destination`) {
		t.Errorf("an unknown role: %d %q", code, body)
	}
}

// A search for one chosen invariant finds where that one breaks: from
// step 3 of the counterexample, the search for any violation names
// SourcePinnedUntilRead (first in the registry of the three the trace's
// last step breaks), the search for OutcomeTruthful names OutcomeTruthful,
// and the checker's own session, replaying the path, finds nothing broken
// before its last step and OutcomeTruthful broken in the state it ends
// in. A search for an invariant that cannot break before another one does
// says which did, and unknown or unsearchable names are 400s.
func TestSearchInvariant_TheChosenOne(t *testing.T) {
	c, tr, s := openTrace(t, counterexample)
	from := s.trace.Path[:3]
	anyOne, err := s.Search(context.Background(), from, "")
	if err != nil {
		t.Fatal(err)
	}
	const chosen = model.NameOutcomeTruthful
	if anyOne.Violation == nil || anyOne.Violation.Invariant == chosen {
		t.Fatalf("the search for any violation found %+v: the test needs one other than %s", anyOne.Violation, chosen)
	}
	f, err := s.SearchInvariant(context.Background(), from, chosen)
	if err != nil {
		t.Fatal(err)
	}
	if f.Violation == nil || f.Violation.Invariant != chosen || f.Invariant != chosen {
		t.Fatalf("the search for %s found %+v", chosen, f)
	}
	if !slices.Equal(f.Path[:3], from) || len(f.Path) != len(tr.Moves) {
		t.Fatalf("the path %v does not start at %v or is not the trace's length %d", f.Path, from, len(tr.Moves))
	}
	sess := c.Initial()
	for i, idx := range f.Path {
		r, err := c.Apply(&sess, c.MovesInto(&sess, nil)[idx])
		if err != nil {
			t.Fatal(err)
		}
		if i < len(f.Path)-1 && r.Violation != nil {
			t.Fatalf("step %d of the found path breaks %s before its end", i+1, r.Violation.Invariant)
		}
	}
	rec := c.Records(&sess)
	broken := false
	for _, v := range model.StateViolations(&sess.W, &rec) {
		broken = broken || v.Invariant == chosen
	}
	if !broken {
		t.Fatalf("the checker does not find %s broken where the path ends", chosen)
	}
	if !slices.Contains(f.Also, anyOne.Violation.Invariant) {
		t.Errorf("the last step also breaks %s, the answer names %v", anyOne.Violation.Invariant, f.Also)
	}

	// ExactlyOnceRelease: every branch the bound lets the search see
	// breaks another invariant first or holds.
	defer func(n int) { SearchMaxStates = n }(SearchMaxStates)
	SearchMaxStates = 2000
	f, err = s.SearchInvariant(context.Background(), from, model.NameExactlyOnceRelease)
	if err != nil {
		t.Fatal(err)
	}
	if f.Violation != nil || len(f.Blocked) == 0 || f.Blocked[0].Invariant != anyOne.Violation.Invariant || f.Stopped == "" {
		t.Errorf("a search for ExactlyOnceRelease: %+v", f)
	}

	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, c := range []struct{ query, want string }{
		{"path=0.0.0&invariant=NoSuch", `invariant "NoSuch": no built-in invariant has that name (one of TransferNeedsReservation, `},
		{"path=0.0.0&invariant=EventuallyDrained", "check --liveness judges it"},
		{"path=0.0.99&invariant=" + chosen, "step 3 chooses move 99"},
		{"path=0.0.0&invariant=" + chosen + "&target=X", "search for one at a time"},
	} {
		resp, err := http.Get(srv.URL + "/api/search?" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %q, want 400 with %q", c.query, resp.StatusCode, body, c.want)
		}
	}
	resp, err := http.Get(srv.URL + "/api/search?path=" + fmtPath(from) + "&invariant=" + chosen)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"invariant": "`+chosen+`"`) {
		t.Errorf("the search over HTTP: %d %s", resp.StatusCode, body)
	}
}
