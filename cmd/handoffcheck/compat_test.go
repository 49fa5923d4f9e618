package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// verdict is what check says of one run, in the figures a change of
// meaning would move: the invariant broken ("" for none), the length of
// its trace, and the states and transitions explored.
type verdict struct {
	Run         string
	Invariant   string
	Steps       int
	States      int
	Transitions int
}

// specVerdict is what check says of a spec file on one configuration.
type specVerdict struct {
	file    string
	config  string
	runs    string   // the --run list, "" for every run
	refused []string // for a file validate refuses: the lines of its refusal
	want    []verdict
}

// specVerdicts are the verdicts of every spec file the repository ships,
// each on the configuration and runs its example uses. A file written
// before the vocabulary grew declares none of the events added later
// (spec.LaterEvents): it keeps loading, and those events never fire in it.
// testdata/specs/handoff-before-deferred.json is the built-in tables as
// the build before Deferred, TransferTimeout and the Stopped state
// exported them (handoffcheck spec). It loads, and the invariants checked
// since judge it too: its source never publishes its computed KV (the
// export predates the source's Stored), so its pinned blocks are not
// advertised, which IndexMatchesCache rejects at the first pin;
// its decode cancelled after activation reports a failure, which
// OutcomeTruthful rejects (the built-in tables now end in Stopped, a
// success state), but the search meets the pin first.
var specVerdicts = []specVerdict{
	{file: "../../testdata/specs/handoff-before-deferred.json", config: small, want: []verdict{
		{"vllm", "IndexMatchesCache", 3, 5, 6}, {"sglang", "IndexMatchesCache", 6, 49, 69}, {"trtllm", "IndexMatchesCache", 3, 5, 6}}},
	{file: "../../testdata/variants/release-on-heartbeat.json", config: small, want: []verdict{
		{"vllm", "SourcePinnedUntilRead", 6, 21, 35}, {"sglang", "", 0, 638, 1379}, {"trtllm", "SourcePinnedUntilRead", 6, 21, 34}}},
	{file: "../../testdata/variants/rearm-reservation.json", config: mutCfg, runs: "sglang", want: []verdict{
		{"sglang", "EventuallyDrained", 7, 34427, 118641}}},
	// The designs the lifecycle replaces, and the OutcomeTruthful blind spots.
	{file: "../../testdata/variants/bootstrap-as-readiness.json", config: small, want: []verdict{
		{"vllm", "", 0, 563, 1154}, {"sglang", "DestinationFirstGate", 4, 13, 19}, {"trtllm", "", 0, 137, 275}}},
	{file: "../../testdata/variants/decode-without-reservation.json", config: small, want: []verdict{
		{"vllm", "TransferNeedsReservation", 4, 7, 10}, {"sglang", "", 0, 638, 1379}, {"trtllm", "TransferNeedsReservation", 4, 7, 10}}},
	{file: "../../testdata/variants/expired-lease-reports-release.json", config: small, want: []verdict{
		{"vllm", "OutcomeTruthful", 4, 7, 10}, {"sglang", "OutcomeTruthful", 7, 93, 144}, {"trtllm", "OutcomeTruthful", 4, 7, 10}}},
	{file: "../../testdata/variants/ownership-at-terminal-token.json", config: small, want: []verdict{
		{"vllm", "RouterCleanup", 3, 5, 6}, {"sglang", "", 0, 638, 1379}, {"trtllm", "RouterCleanup", 3, 5, 6}}},
	{file: "../../testdata/variants/pull-failed-reports-success.json", config: small, want: []verdict{
		{"vllm", "OutcomeTruthful", 7, 41, 56}, {"sglang", "", 0, 638, 1379}, {"trtllm", "", 0, 137, 275}}},
	{file: "../../testdata/variants/release-on-scheduler-finish.json", config: small, want: []verdict{
		{"vllm", "SourcePinnedUntilRead", 3, 5, 6}, {"sglang", "", 0, 638, 1379}, {"trtllm", "SourcePinnedUntilRead", 3, 5, 6}}},
	// An index that advertises what the cache does not hold.
	{file: "../../testdata/variants/publish-before-compute.json", config: small, want: []verdict{
		{"vllm", "IndexMatchesCache", 2, 3, 4}, {"sglang", "", 0, 638, 1379}, {"trtllm", "IndexMatchesCache", 2, 3, 4}}},
	// Deadlines that reclaim without fencing: only a hung transfer shows them.
	{file: "../../testdata/variants/push-deadline-without-fence.json", config: "../../testdata/configs/hang.json", want: []verdict{
		{"vllm", "", 0, 306, 699}, {"sglang", "SourcePinnedUntilRead", 8, 68, 114}, {"trtllm", "", 0, 43, 73}}},
	{file: "../../testdata/variants/pull-deadline-without-fence.json", config: "../../testdata/configs/hang.json", want: []verdict{
		{"vllm", "DestinationHeldWhileWritten", 7, 22, 35}, {"sglang", "", 0, 273, 586}, {"trtllm", "", 0, 43, 73}}},
	// Reader completion before the activation was applied: only the
	// command path (commands.json) opens that gap.
	{file: "../../testdata/variants/release-before-activation.json", config: "../../testdata/configs/commands.json", want: []verdict{
		{"vllm", "ReleaseNeedsReaderAck", 7, 220, 381}, {"sglang", "", 0, 52217, 179954}, {"trtllm", "", 0, 7352, 24033}, {"trtllm-destination-first", "", 0, 3387, 9912}}},
	// The other gaps of the command path (commands.json): ownership
	// reported when the release is sent, not applied; a no-op answer to a
	// cancel or a withdrawal taken for success.
	{file: "../../testdata/variants/report-before-release-applied.json", config: "../../testdata/configs/commands.json", want: []verdict{
		{"vllm", "RouterCleanup", 8, 997, 2094}, {"sglang", "", 0, 454881, 2225915}, {"trtllm", "", 0, 46456, 237468}, {"trtllm-destination-first", "", 0, 11891, 47778}}},
	{file: "../../testdata/variants/cancel-noop-leaks-held-source.json", config: "../../testdata/configs/commands.json", want: []verdict{
		{"vllm", "RouterCleanup", 5, 43, 159}, {"sglang", "RouterCleanup", 8, 3533, 8041}, {"trtllm", "RouterCleanup", 5, 43, 159}, {"trtllm-destination-first", "", 0, 11891, 47778}}},
	{file: "../../testdata/variants/withdraw-noop-leaks-reservation.json", config: "../../testdata/configs/commands.json", want: []verdict{
		{"vllm", "InFlightAccounting", 7, 344, 1170}, {"sglang", "InFlightAccounting", 5, 106, 484}, {"trtllm", "", 0, 38866, 193838}, {"trtllm-destination-first", "", 0, 9921, 38524}}},
	// A pin that outlives the reads: the source ignores the reader's
	// acknowledgement and the destination renews its lease while it
	// decodes; the search sees the source never finish (Quiescence), the
	// simulator a pin held past two lease periods on a long decode
	// (docs/props.md).
	{file: "../../testdata/variants/pin-ignores-ack-and-lease.json", config: small, want: []verdict{
		{"vllm", "Quiescence", 10, 412, 754}, {"sglang", "", 0, 897, 2000}, {"trtllm", "", 0, 137, 275}}},
	// A late cancel or abort, written with a non-terminal stand-in for Done.
	{file: "../../testdata/variants/late-cancel-standin.json", config: small, want: []verdict{
		{"vllm", "ExactlyOnceRelease", 9, 152, 231}, {"sglang", "ExactlyOnceRelease", 11, 495, 928}, {"trtllm", "", 0, 137, 275}}},
	// Written with rows from terminal states and a deferred step.
	{file: "../../testdata/variants/late-cancel-finalizes-twice.json", config: small, want: []verdict{
		{"vllm", "ExactlyOnceRelease", 9, 151, 220}, {"sglang", "", 0, 638, 1379}, {"trtllm", "", 0, 137, 275}}},
	{file: "../../testdata/variants/late-peer-cancel-fails-done.json", config: small, want: []verdict{
		{"vllm", "AttemptIsolation", 9, 151, 215}, {"sglang", "", 0, 638, 1379}, {"trtllm", "", 0, 137, 275}}},
	{file: "../../testdata/variants/prefill-after-early-outcome.json", config: small, want: []verdict{
		{"vllm", "", 0, 563, 1154}, {"sglang", "ExactlyOnceRelease", 6, 49, 74}, {"trtllm", "", 0, 137, 275}}},
	{file: "../../testdata/variants/deferred-free-during-pull.json", config: small, want: []verdict{
		{"vllm", "DestinationHeldWhileWritten", 8, 79, 171}, {"sglang", "", 0, 638, 1379}, {"trtllm", "", 0, 137, 275}}},
	{file: "../../testdata/variants/broken-vocabulary.json", refused: []string{
		`broken-vocabulary.json:49: source table: state "Orphan" is refused: no row leads to it from the initial state Idle under any policy (remove it, or add the row that reaches it)`,
		`broken-vocabulary.json:1104: destination row 1 (Idle × DestinationRouted): unknown action "NoSuchAction" (not in the destination vocabulary)`}},
}

// Every spec file in testdata/variants has its verdict above, and every
// file above loads through validate and gives its verdict through check
// --json, as a user would run it.
func TestSpecFiles_KeepTheirVerdicts(t *testing.T) {
	// On the simulator's clock, never the wall's: it runs beside the
	// tests that wait (TestCLI_LiveStuckAttemptEnds's silence).
	t.Parallel()
	files, err := filepath.Glob("../../testdata/variants/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.ContainsFunc(specVerdicts, func(v specVerdict) bool { return v.file == f }) {
			t.Errorf("%s has no verdict here: add the one it gives", f)
		}
	}
	for _, tc := range specVerdicts {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			code, out, errOut := runCLI(t, "validate", tc.file)
			if tc.refused != nil {
				lines := strings.Split(strings.TrimSpace(errOut), "\n")
				for i := range lines {
					lines[i] = strings.TrimPrefix(lines[i], "../../testdata/variants/")
				}
				if code != exitUsage || len(lines) != len(tc.refused)+1 || !slices.Equal(lines[1:], tc.refused) {
					t.Fatalf("validate: exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, errOut, strings.Join(tc.refused, "\n"))
				}
				return
			}
			if code != exitOK {
				t.Fatalf("validate: exit %d: %s%s", code, out, errOut)
			}
			args := []string{"check", "--config", tc.config, "--spec", tc.file, "--json", "--timing=false"}
			if tc.runs != "" {
				args = append(args, "--run", tc.runs)
			}
			_, out, errOut = runCLI(t, args...)
			var rep struct {
				Runs []struct {
					Name        string `json:"name"`
					States      int    `json:"states"`
					Transitions int    `json:"transitions"`
					Violation   *struct {
						Invariant string            `json:"invariant"`
						Trace     []json.RawMessage `json:"trace"`
					} `json:"violation"`
				} `json:"runs"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %v\n%s%s", args, err, out, errOut)
			}
			var got []verdict
			for _, r := range rep.Runs {
				v := verdict{Run: r.Name, States: r.States, Transitions: r.Transitions}
				if r.Violation != nil {
					v.Invariant, v.Steps = r.Violation.Invariant, len(r.Violation.Trace)
				}
				got = append(got, v)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%v:\n got %+v\nwant %+v", args, got, tc.want)
			}
		})
	}
}

// A counterexample of a variant whose terminal state reacts, or that takes
// a deferred step, is written as a trace file and replays to the same
// violation: the trace header carries the variant, and the deferred move
// reads back from its step syntax.
func TestSpecFiles_ReactingAndDeferredTracesReplay(t *testing.T) {
	for _, tc := range []struct{ file, run, step, invariant string }{
		{"late-cancel-finalizes-twice.json", "vllm", "9. deliver-cancel h=0 side=destination", "ExactlyOnceRelease"},
		{"deferred-free-during-pull.json", "vllm", "8. deferred h=0 side=destination", "DestinationHeldWhileWritten"},
	} {
		trace := filepath.Join(t.TempDir(), "ce.jsonl")
		code, out, errOut := runCLI(t, "check", "--config", small, "--spec", "../../testdata/variants/"+tc.file, "--run", tc.run, "--trace-out", trace, "--timing=false")
		if code != exitViolation || !strings.Contains(out, tc.step+"   <-- "+tc.invariant) {
			t.Fatalf("%s: check exit %d:\n%s%s", tc.file, code, out, errOut)
		}
		code, out, errOut = runCLI(t, "replay", trace)
		if code != exitViolation || !strings.Contains(out, "  "+tc.step+"\n") ||
			!strings.Contains(out, "VIOLATION "+tc.invariant) || !strings.Contains(out, "(the violation the trace records)") {
			t.Errorf("%s: replay exit %d:\n%s%s", tc.file, code, out, errOut)
		}
	}
}
