package checker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// replacedWhy opens the why of each row that a variant of
// testdata/variants changed to reproduce a design the lifecycle replaces;
// brokenWhy the why of a row changed to show a bug shape.
const (
	replacedWhy = "broken on purpose, as in the replaced "
	brokenWhy   = "broken on purpose: "
)

// The designs the lifecycle replaces, and the bug shapes that once passed
// a complete exploration, ship as variants of the built-in tables, one row
// changed in each. Each is rejected on the small
// configuration with the invariant of docs/lifecycle.md section 4 that it
// breaks, by a short trace that passes through the changed row and ends on
// the violating step, and that a trace file carries back to the same
// violation on replay.
func TestVariants_RejectedWithTheirInvariant(t *testing.T) {
	cases := []struct {
		file      string
		run       string // a run whose policy the changed row belongs to
		invariant string
		maxSteps  int
		why       string // how the changed row's why opens; replacedWhy when empty
		config    string // in testdata/configs; small.json when empty
		needs     string // a fault kind, or "commands" (the command path), without which the run is clean
	}{
		// The destination tells the source it reserved as soon as it is
		// routed: the source dispatches prefill with no reservation.
		{"bootstrap-as-readiness.json", "sglang", "DestinationFirstGate", 4, "", "", ""},
		// The source gives its pinned blocks back when compute finishes,
		// while the registration is still open to the reader.
		{"release-on-scheduler-finish.json", "vllm", "SourcePinnedUntilRead", 3, "", "", ""},
		// The source reports its outcome to the prefill router when
		// compute finishes, while its KV is still pinned.
		{"ownership-at-terminal-token.json", "vllm", "RouterCleanup", 3, "", "", ""},
		// A source-first destination pulls as soon as it is routed,
		// without reserving.
		{"decode-without-reservation.json", "vllm", "TransferNeedsReservation", 4, "", "", ""},

		// Blind spots of RouterCleanup, which holds a report to the label
		// of the terminal state only: a failed pull that ends in Done and
		// says so, and a lease that ran out ending in Released.
		{"pull-failed-reports-success.json", "vllm", "OutcomeTruthful", 7, brokenWhy, "", ""},
		{"expired-lease-reports-release.json", "vllm", "OutcomeTruthful", 4, brokenWhy, "", ""},

		// The source advertises its prefix in the KV index when the
		// request arrives, before compute produced the KV.
		{"publish-before-compute.json", "vllm", "IndexMatchesCache", 2, brokenWhy, "", ""},

		// A deadline that reclaims without fencing what the hung transfer
		// still uses: only a hang (there is no early timer in hang.json)
		// makes the deadline fire while the transfer runs.
		{"push-deadline-without-fence.json", "sglang", "SourcePinnedUntilRead", 8, brokenWhy, "hang.json", "hang"},
		{"pull-deadline-without-fence.json", "vllm", "DestinationHeldWhileWritten", 7, brokenWhy, "hang.json", "hang"},

		// Reader completion sent before the scheduler core applied the
		// activation: the source releases while the activation waits. The
		// bug lives in the gap the command path opens; without it the
		// activation takes effect in the row that asks for it.
		{"release-before-activation.json", "vllm", "ReleaseNeedsReaderAck", 7, brokenWhy, "commands.json", "commands"},
		// The other gaps of the command path: a release reported to the
		// prefill router when its command is sent rather than when the
		// core applied it; a cancel or a withdrawal whose no-op answer
		// (the core finished compute, or reserved, first) is taken for
		// success, leaving what the core holds behind.
		{"report-before-release-applied.json", "vllm", "RouterCleanup", 8, brokenWhy, "commands.json", "commands"},
		{"cancel-noop-leaks-held-source.json", "vllm", "RouterCleanup", 5, brokenWhy, "commands.json", "commands"},
		{"withdraw-noop-leaks-reservation.json", "vllm", "InFlightAccounting", 7, brokenWhy, "commands.json", "commands"},
		// The delay fault opens one such gap at a time where commands are
		// otherwise applied at once (delay.json is small.json with it).
		{"release-before-activation.json", "vllm", "ReleaseNeedsReaderAck", 8, brokenWhy, "delay.json", "delay"},
		{"report-before-release-applied.json", "vllm", "RouterCleanup", 9, brokenWhy, "delay.json", "delay"},
		{"cancel-noop-leaks-held-source.json", "sglang", "RouterCleanup", 10, brokenWhy, "delay.json", "delay"},
		{"withdraw-noop-leaks-reservation.json", "sglang", "InFlightAccounting", 8, brokenWhy, "delay.json", "delay"},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.file, ".json")+"/"+strings.TrimSuffix(tc.config, ".json"), func(t *testing.T) {
			file := filepath.Join("..", "testdata", "variants", tc.file)
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := spec.Parse(file, data)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(tc.file, ".json"); s.Name != want {
				t.Errorf("the variant is named %q, want %q (its file's base name)", s.Name, want)
			}
			name := tc.config
			if name == "" {
				name = "small.json"
			}
			config := filepath.Join("..", "testdata", "configs", name)
			configJSON, err := os.ReadFile(config)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := system.ParseConfig(config, configJSON)
			if err != nil {
				t.Fatal(err)
			}
			if tc.needs != "" {
				without := *cfg
				if tc.needs == "commands" {
					without.Commands = 0
				} else if f, ok := system.ParseFault(tc.needs); ok {
					without.Budget[f] = 0
				} else {
					t.Fatalf("unknown fault %q", tc.needs)
				}
				r := checkerFor(t, interpreted(t, s), &without, tc.run).checkRun(context.Background(), Limits{Workers: 1}, nil)
				if r.Violation != nil || !r.Complete {
					t.Fatalf("run %s without %s: complete=%v violation %v; the bug should need that fault", tc.run, tc.needs, r.Complete, r.Violation)
				}
			}
			c := checkerFor(t, interpreted(t, s), cfg, tc.run)
			r := c.checkRun(context.Background(), Limits{Workers: 1}, nil)
			if r.Violation == nil || r.Violation.Violation == nil {
				t.Fatalf("run %s: no violation; the variant should break %s", tc.run, tc.invariant)
			}
			ce := r.Violation
			text := c.formatCounterexample(ce)
			if got := ce.Violation.Invariant; got != tc.invariant {
				t.Fatalf("run %s: first violation %s, want %s:\n%s", tc.run, got, tc.invariant, text)
			}
			if n := len(ce.Steps); n == 0 || n > tc.maxSteps {
				t.Fatalf("trace of %d steps, want 1 to %d:\n%s", n, tc.maxSteps, text)
			}
			for i, st := range ce.Steps {
				if last := i == len(ce.Steps)-1; st.Failed != last {
					t.Fatalf("step %d marked failing=%v; only the last step should be:\n%s", i+1, st.Failed, text)
				}
			}
			// The violation comes from the row that reproduces the old
			// design, not from some other row of the tables.
			marker := tc.why
			if marker == "" {
				marker = replacedWhy
			}
			changed := false
			for _, st := range ce.Steps {
				for _, f := range st.Fired {
					if strings.HasPrefix(s.Table(f.Role).Rows[f.Row-1].Why, marker) {
						changed = true
					}
				}
			}
			if !changed {
				t.Fatalf("no step of the trace fires the row marked %q:\n%s", marker, text)
			}

			// Written as a trace file and read back, the trace replays
			// step by step, as 'replay' does, to the same invariant on
			// its last step and to no violation before it.
			var buf bytes.Buffer
			if err := WriteTrace(&buf, configJSON, s, tc.run, c.Attempts(), ce); err != nil {
				t.Fatal(err)
			}
			tr, err := ParseTrace("ce.jsonl", buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if tr.Violation != tc.invariant || tr.Spec == nil || len(tr.Moves) != len(ce.Steps) {
				t.Fatalf("trace header: violation %q, spec kept %v, %d moves for %d steps", tr.Violation, tr.Spec != nil, len(tr.Moves), len(ce.Steps))
			}
			sess := newSession(checkerFor(t, interpreted(t, tr.Spec), tr.Config, tr.Run))
			for i, m := range tr.Moves {
				res, err := sess.Apply(m)
				if err != nil {
					t.Fatalf("step %d (%s) does not replay: %v\n%s", i+1, m, err, text)
				}
				last := i == len(tr.Moves)-1
				switch {
				case !last && res.Violation != nil:
					t.Fatalf("replay: step %d (%s) already violates %s:\n%s", i+1, m, res.Violation.Invariant, text)
				case last && (res.Violation == nil || res.Violation.Invariant != tc.invariant):
					t.Fatalf("replay: the last step (%s) gives %v, want %s:\n%s", m, res.Violation, tc.invariant, text)
				}
			}
		})
	}
}
