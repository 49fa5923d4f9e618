package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConform_MockerBookkeeping: conform --from mocker judges the mocker by
// its own bookkeeping rules. A wrong in_flight, a phase out of order and a
// Done while the source is held are rejections (exit 1) at the line, with
// the rule; an unknown phase is malformed input (exit 2) at its line; an
// aggregated replay, and a log that states priorities and
// counted_in_flight, conform.
func TestConform_MockerBookkeeping(t *testing.T) {
	dir := filepath.Join(logsDir, "mocker")
	for _, c := range []struct {
		name string
		code int
		want []string
	}{
		{"invalid-in-flight.jsonl", exitViolation, []string{"verdict: rejected at " + filepath.Join(dir, "invalid-in-flight.jsonl") + ":10",
			"decode-0 reports in_flight 5; by the rules of apply_command it is 1: it was 0 before this line, and ReserveDestination → DestinationAccepted counts +1"}},
		{"invalid-phase-out-of-order.jsonl", exitViolation, []string{"verdict: rejected at " + filepath.Join(dir, "invalid-phase-out-of-order.jsonl") + ":9",
			"phase RunningPrefill after TransferPending (line 8)"}},
		{"invalid-done-mid-lifecycle.jsonl", exitViolation, []string{"verdict: rejected at " + filepath.Join(dir, "invalid-done-mid-lifecycle.jsonl") + ":10",
			"Done while prefill-0 has not released or cancelled its source"}},
		{"invalid-unknown-phase.jsonl", exitUsage, []string{filepath.Join(dir, "invalid-unknown-phase.jsonl") + `:6: malformed mocker replay log: phase "Prefilling", want one of`}},
		{"aggregated.jsonl", exitOK, []string{"(aggregated on vllm)", "verdict: explained", "mocker bookkeeping: 0 handoffs, 3 aggregated requests", "its own rules hold"}},
		{"destination-first.jsonl", exitOK, []string{"verdict: explained", "its own rules hold"}},
	} {
		code, out, errOut := runCLI(t, "conform", "--from", "mocker", filepath.Join(dir, c.name))
		all := out + errOut
		ok := code == c.code
		for _, w := range c.want {
			ok = ok && strings.Contains(all, w)
		}
		if !ok {
			t.Errorf("%s: exit %d, want %d and %q\n%s", c.name, code, c.code, c.want, all)
		}
	}
	// The report's JSON carries the bookkeeping's rejection too.
	code, out, _ := runCLI(t, "conform", "--from", "mocker", "--json", filepath.Join(dir, "invalid-in-flight.jsonl"))
	if code != exitViolation || !strings.Contains(out, `"bookkeeping_rejections": 1`) || !strings.Contains(out, `"line": 10`) {
		t.Errorf("--json: exit %d\n%s", code, out)
	}
	// Aggregated and disaggregated replays are not judged together.
	code, _, errOut := runCLI(t, "conform", "--from", "mocker", filepath.Join(dir, "aggregated.jsonl"), filepath.Join(dir, "source-first.jsonl"))
	if code != exitUsage || !strings.Contains(errOut, "judged apart") {
		t.Errorf("aggregated beside disaggregated: exit %d: %s", code, errOut)
	}
}
