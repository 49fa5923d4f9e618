package fuzz

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the fuzz seeds made from the counterexamples of testdata/ instead of comparing (make fuzz-seeds)")

// seedsConfig is the configuration the variants of testdata/variants are
// checked on to find their counterexamples.
const seedsConfig = "../testdata/configs/small.json"

// The corpora the counterexamples seed, each in its package's
// testdata/fuzz/<Target>, and the prefixes of the seed files they own:
// files named otherwise (inputs go test -fuzz found, kept by hand) are
// left alone.
var (
	traceCorpus = filepath.Join("..", "checker", "testdata", "fuzz", "FuzzParseTrace")
	moveCorpus  = filepath.Join("..", "checker", "testdata", "fuzz", "FuzzParseMove")
	stepCorpus  = filepath.Join("testdata", "fuzz", "FuzzStep")
	seedPrefix  = []string{"trace-", "variant-", "move-"}
)

// counterexample is one counterexample of testdata/: a trace file, or the
// one the checker finds for a variant on one run of seedsConfig.
type counterexample struct {
	name  string // trace-<file> or variant-<variant>-<run>
	trace []byte // the trace file
	cfg   *system.Config
	run   system.Run
	moves []system.Move // the trace's moves, a liveness loop included
}

// counterexamples gathers, in a fixed order, every trace file of
// testdata/traces that records a violation, then for every variant of
// testdata/variants that parses and every run of seedsConfig the
// counterexample exhaustive search finds (liveness included).
func counterexamples(t *testing.T) []counterexample {
	t.Helper()
	var out []counterexample
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := checker.ParseTrace(file, data)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Violation == "" {
			continue // not a counterexample
		}
		run, ok := runNamed(tr.Config, tr.Run)
		if !ok {
			t.Fatalf("%s: run %q not in its configuration", file, tr.Run)
		}
		out = append(out, counterexample{name: "trace-" + strings.TrimSuffix(filepath.Base(file), ".jsonl"),
			trace: data, cfg: tr.Config, run: run, moves: tr.Moves})
	}
	cfgJSON, err := os.ReadFile(seedsConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig(seedsConfig, cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	variants, err := filepath.Glob(filepath.Join("..", "testdata", "variants", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(variants)
	for _, file := range variants {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := spec.Parse(file, data)
		if err != nil {
			continue // a variant validate refuses has no counterexample
		}
		it, err := interp.New(s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := system.FromStepper(file, s, it)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range cfg.Runs {
			rep, err := checker.Check(context.Background(), p, cfg, []system.Run{run}, checker.Limits{Workers: 1, Liveness: true})
			if err != nil {
				t.Fatal(err)
			}
			c, ce := rep.Checker(0), rep.Runs[0].Violation
			if ce == nil {
				continue
			}
			var trace bytes.Buffer
			if err := checker.WriteTrace(&trace, cfgJSON, s, run.Name, c.Attempts(), ce); err != nil {
				t.Fatal(err)
			}
			var moves []system.Move
			for _, st := range append(append([]checker.TraceStep(nil), ce.Steps...), ce.Loop...) {
				moves = append(moves, st.Move)
			}
			out = append(out, counterexample{name: "variant-" + strings.TrimSuffix(filepath.Base(file), ".json") + "-" + run.Name,
				trace: trace.Bytes(), cfg: cfg, run: run, moves: moves})
		}
	}
	return out
}

func runNamed(cfg *system.Config, name string) (system.Run, bool) {
	for _, r := range cfg.Runs {
		if r.Name == name {
			return r, true
		}
	}
	return system.Run{}, false
}

// stepInput is a counterexample's moves as a FuzzStep input: the wide run
// of the same policy and engine, then per move the index of that move
// among those the state enables, with handoffs kept and workers mapped to
// the wide configuration's workers of the same role, in order. The
// correct tables of FuzzStep diverge from a broken variant's, so the
// input stops at the first move they do not enable: it leads the fuzzer
// to where the counterexample went. ok is false when no move maps.
func stepInput(t *testing.T, wideCfg *system.Config, ce counterexample) (in []byte, ok bool) {
	t.Helper()
	ri := slices.IndexFunc(wideCfg.Runs, func(r system.Run) bool {
		return r.Policy == ce.run.Policy && r.Engine == ce.run.Engine
	})
	if ri < 0 {
		return nil, false
	}
	c, err := checker.New(system.Generated(), wideCfg, wideCfg.Runs[ri])
	if err != nil {
		t.Fatal(err)
	}
	// The k-th worker of a role in the counterexample's configuration is
	// the k-th of that role in the wide one.
	ofRole := func(w *model.Config) map[model.WorkerRole][]int {
		m := map[model.WorkerRole][]int{}
		for i, wc := range w.Workers {
			m[wc.Role] = append(m[wc.Role], i)
		}
		return m
	}
	from, to := ofRole(&ce.cfg.World), ofRole(&wideCfg.World)
	worker := func(w int) (int, bool) {
		role := ce.cfg.World.Workers[w].Role
		k := slices.Index(from[role], w)
		if k < 0 || k >= len(to[role]) {
			return 0, false
		}
		return to[role][k], true
	}
	s := c.Initial()
	in = []byte{byte(ri)}
	for _, m := range ce.moves {
		if int(m.H) >= len(wideCfg.World.Handoffs) {
			break
		}
		if _, names, _, _ := m.Kind.Names(); names {
			w, ok := worker(int(m.Arg))
			if !ok {
				break
			}
			m.Arg = int8(w)
		}
		j := slices.Index(c.MovesInto(&s, nil), m)
		if j < 0 {
			break
		}
		r, err := c.Apply(&s, m)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, byte(j))
		if r.Violation != nil {
			t.Fatalf("%s: the correct tables break %s on the wide configuration after %d moves: %v", ce.name, r.Violation.Invariant, len(in)-1, r.Violation)
		}
	}
	return in, len(in) > 1
}

// corpusFile is one value in Go's fuzz corpus file format.
func corpusFile(v any) []byte {
	switch x := v.(type) {
	case []byte:
		return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", x)
	case string:
		return fmt.Appendf(nil, "go test fuzz v1\nstring(%q)\n", x)
	}
	panic(fmt.Sprintf("corpusFile: %T", v))
}

// seedFiles is every seed file the counterexamples make, by path.
func seedFiles(t *testing.T) map[string][]byte {
	t.Helper()
	wideCfg, err := system.ParseConfig("wide.json", []byte(wide))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	moves := map[string]bool{}
	for _, ce := range counterexamples(t) {
		files[filepath.Join(traceCorpus, ce.name)] = corpusFile(ce.trace)
		for _, m := range ce.moves {
			moves[m.String()] = true
		}
		if in, ok := stepInput(t, wideCfg, ce); ok {
			files[filepath.Join(stepCorpus, ce.name)] = corpusFile(in)
		}
	}
	for m := range moves {
		name := "move-" + strings.NewReplacer(" ", "-", "=", "-").Replace(m)
		files[filepath.Join(moveCorpus, name)] = corpusFile(m)
	}
	return files
}

// ownedSeeds lists the seed files on disk that the counterexamples own
// (by their prefix) in the three corpora.
func ownedSeeds(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{traceCorpus, moveCorpus, stepCorpus} {
		entries, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			if slices.ContainsFunc(seedPrefix, func(p string) bool { return strings.HasPrefix(e.Name(), p) }) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// The fuzz corpora hold a seed made from every counterexample of
// testdata/ (the trace files that record a violation, and what exhaustive
// search finds for each variant on the small configuration): the trace
// file for FuzzParseTrace, each of its moves for FuzzParseMove, and its
// moves as enabled-move indices on the wide configuration for FuzzStep.
// The seeds are committed, so that go test replays them; the test fails
// when one is missing, differs or no longer belongs to a counterexample.
// make fuzz-seeds (go test ./fuzz -run TestFuzzSeeds -rewrite) rewrites
// them.
func TestFuzzSeeds_Fresh(t *testing.T) {
	want := seedFiles(t)
	if *rewrite {
		for _, path := range ownedSeeds(t) {
			if _, ok := want[path]; !ok {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
		}
		for path, data := range want {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var stale []string
	for path, data := range want {
		got, err := os.ReadFile(path)
		switch {
		case err != nil:
			stale = append(stale, path+": missing")
		case !bytes.Equal(got, data):
			stale = append(stale, path+": differs from what its counterexample makes")
		}
	}
	for _, path := range ownedSeeds(t) {
		if _, ok := want[path]; !ok {
			stale = append(stale, path+": belongs to no counterexample any more")
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		t.Fatalf("the fuzz seeds made from counterexamples are stale (run make fuzz-seeds and commit):\n%s", strings.Join(stale, "\n"))
	}
	if len(want) == 0 {
		t.Fatal("no counterexample in testdata/ made a seed")
	}
}
