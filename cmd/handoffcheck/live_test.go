package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the worker processes that
// `live` starts (it starts its own binary with "worker").
func TestMain(m *testing.M) {
	// The test binary is the command when asked: a worker process of
	// live, or the CLI that a test runs as a process to kill.
	if len(os.Args) > 1 && (os.Args[1] == "worker" || os.Getenv("HANDOFFCHECK_CLI") == "1") {
		// As main does: signals reach the command as they would the
		// binary.
		os.Exit(runProcess(os.Args[1:]))
	}
	code := m.Run()
	if builtPath != "" {
		os.RemoveAll(filepath.Dir(builtPath))
	}
	os.Exit(code)
}

func liveWorkload(t *testing.T, n int, rate string) string {
	t.Helper()
	w := filepath.Join(t.TempDir(), "w.jsonl")
	if code, _, errOut := runCLI(t, "workload", "gen", "--requests", strings.TrimSpace(itoa(n)), "--rate", rate, "--prefix-groups", "0",
		"--cancel-fraction", "0", "--out", w); code != exitOK {
		t.Fatalf("workload gen: %s", errOut)
	}
	return w
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCLI_LiveJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 40, "200")
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", out, "--time-scale", "0.01", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, stdout)
	}
	var rep struct {
		Requests  int      `json:"requests"`
		Succeeded int      `json:"succeeded"`
		Clean     bool     `json:"clean"`
		Logs      []string `json:"logs"`
		Workers   []struct {
			Role string `json:"role"`
		} `json:"workers"`
		Conform struct {
			Verdict string `json:"verdict"`
		} `json:"conform"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Requests != 40 || rep.Succeeded != 40 || !rep.Clean || rep.Conform.Verdict != "explained" || len(rep.Workers) != 4 || len(rep.Logs) != 5 {
		t.Fatalf("report: %+v", rep)
	}
}

// TestCLI_LiveCutShort: --until-ms ends the run with handoffs
// unresolved; nothing is held, the logs conform, exit 0, and --json says
// how many attempts were cut.
func TestCLI_LiveCutShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 40, "20")
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", t.TempDir(), "--time-scale", "0.01", "--until-ms", "300", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, stdout)
	}
	var rep struct {
		Requests int  `json:"requests"`
		Clean    bool `json:"clean"`
		Teardown *struct {
			AtMS       float64 `json:"at_ms"`
			Cut        int     `json:"cut"`
			NotArrived int     `json:"not_arrived"`
		} `json:"teardown"`
		Conform struct {
			Verdict string `json:"verdict"`
		} `json:"conform"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if td := rep.Teardown; td == nil || td.AtMS != 300 || td.Cut == 0 || rep.Requests+td.NotArrived != 40 || !rep.Clean || rep.Conform.Verdict != "explained" {
		t.Fatalf("report: %+v teardown %+v", rep, rep.Teardown)
	}
}

func TestCLI_LiveBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"live", "--time-scale", "0"}, "--time-scale 0"},
		{[]string{"live", "--proxy-rate", "0.5"}, "need --proxy-seed"},
		{[]string{"live", "--workload", "/nonexistent"}, "/nonexistent"},
		{[]string{"live", "--policy", "disabled", "--proxy-seed", "1"}, "policy disabled runs no proxy faults"},
		{[]string{"live", "--compare", "--policy", "source-first"}, "--policy source-first would be ignored"},
		{[]string{"live", "--compare", "--faults", "x.jsonl"}, "--compare runs every policy on the same fault-free workload"},
		{[]string{"live", "--policy", "aggregated"}, `policy "aggregated" runs only in simulate`},
		{[]string{"live", "--until-ms", "0"}, "--until-ms 0: want a time after 0"},
		{[]string{"live", "--until-ms", "NaN"}, "--until-ms NaN: want a time after 0"},
		{[]string{"live", "--clock-error", "-1ms"}, "--clock-error -1ms: want a duration of 0 or more"},
		{[]string{"live", "--clock-error", "10ms", "--no-conform"}, "--clock-error: the clock orders the facts where conform judges the run's logs, which --no-conform turns off"},
		{[]string{"live", "--clock-error", "10ms", "--policy", "disabled"}, "--clock-error: the disabled policy's logs are not judged"},
		{[]string{"worker", "--coordinator", "10.0.0.1:9", "--worker", "0", "--config", "x"}, "127.0.0.1:PORT"},
		{[]string{"worker", "--worker", "0"}, "--coordinator is required"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestCLI_LiveInterrupted: an interrupt stops the run, exit 3, and no
// worker process outlives it.
func TestCLI_LiveInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 2000, "20")
	out := t.TempDir()
	// The interrupt comes once the run is under way (its workers
	// connected and a request was routed), however long a loaded machine
	// takes to get there: not after a fixed time.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code           int
		stdout, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, errOut := runCLIContext(ctx, "live", "--workload", w, "--out", out, "--time-scale", "0.01")
		done <- result{code, stdout, errOut}
	}()
	routed := func() bool {
		b, err := os.ReadFile(filepath.Join(out, "router.jsonl"))
		return err == nil && strings.Contains(string(b), `"kind":"routed"`)
	}
	var res result
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(2 * time.Minute)
wait:
	for {
		select {
		case <-giveUp:
			cancel()
			res = <-done
			t.Fatalf("no request was routed in two minutes: exit %d: %s\n%s", res.code, res.errOut, res.stdout)
		case res = <-done:
			t.Fatalf("the run ended by itself before a request was routed and the interrupt came: exit %d: %s\n%s", res.code, res.errOut, res.stdout)
		case <-tick.C:
			if routed() {
				cancel()
				res = <-done
				break wait
			}
		}
	}
	if res.code != exitInterrupted || !strings.Contains(res.stdout, "interrupted") {
		t.Fatalf("exit %d: %s\n%s", res.code, res.errOut, res.stdout)
	}
	if pids := workersOf(t, out); len(pids) > 0 {
		t.Fatalf("worker processes outlived the run: %v", pids)
	}
}

// workersOf lists the processes whose command line names the run's
// directory (every worker's does: its log is there).
func workersOf(t *testing.T, dir string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to look for processes in")
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCLI_LiveBrokenVariant: workers that run a broken variant's tables
// write logs the judge rejects, naming the invariant the run broke.
func TestCLI_LiveBrokenVariant(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 10, "100")
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", t.TempDir(), "--spec", "../../testdata/variants/decode-without-reservation.json")
	if code != exitViolation || !strings.Contains(stdout, "verdict: rejected") || !strings.Contains(stdout, "TransferNeedsReservation") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, stdout)
	}
}

// TestCLI_LiveCtrlC: a Ctrl-C at a terminal sends SIGINT to the whole
// foreground process group. The workers are in groups of their own, so
// only the coordinator gets it: it collects every worker's ledgers,
// reports what was held, exits 3, and leaves no process behind.
func TestCLI_LiveCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 2000, "20")
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "live", "--workload", w, "--out", out, "--time-scale", "0.01", "--no-conform")
	cmd.Env = append(os.Environ(), "HANDOFFCHECK_CLI=1")
	// The run is the foreground group of a terminal: a group of its own,
	// which the test signals as a terminal would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	// Interrupt once requests are being routed: every worker is up.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(out, "router.jsonl")); err == nil && strings.Count(string(b), `"kind":"routed"`) >= 20 {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatalf("no request routed within a minute: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if code != exitInterrupted {
		t.Fatalf("exit %d (%v), want %d\n%s\n%s", code, err, exitInterrupted, stdout.String(), stderr.String())
	}
	if s := stdout.String(); !strings.Contains(s, "interrupted") || strings.Contains(s, "sent no ledger") || strings.Count(s, " worker ") < 4 {
		t.Fatalf("the report lacks a worker's ledgers:\n%s\n%s", s, stderr.String())
	}
	if pids := workersOf(t, out); len(pids) > 0 {
		t.Fatalf("worker processes outlived the run: %v", pids)
	}
}

// TestCLI_LiveTinyTimeScale: at a thousandth of the configured time (a
// 30 s lease lasts 30 ms) the default run's processes lag far behind the
// clock, and their reports reach the coordinator late. The routers act
// on an attempt only with its workers held, and a restart lands between
// two steps of the worker, so the logs still conform.
func TestCLI_LiveTinyTimeScale(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// One run at that scale, however late: its logs are judged.
	code, stdout, errOut := runCLI(t, "live", "--time-scale", "0.001", "--adapt-scale=false", "--out", t.TempDir())
	if code != exitOK && (code != exitInconclusive || !strings.Contains(stdout, "TOO LATE: at time scale 0.001")) {
		t.Fatalf("exit %d: %s\n%s", code, errOut, stdout)
	}
	if !strings.Contains(stdout, "verdict: explained") || !strings.Contains(stdout, "2 restarts") {
		t.Fatalf("want the logs explained and both planned restarts:\n%s", stdout)
	}
}

// TestCLI_LiveTooLate: at the least time scale live accepts (a 5 s
// heartbeat lasts 1 ms, so the deadlines absorb 0.1 ms of lateness, and
// 0.8 ms at eight times that scale, below a process's timer and
// scheduling delay on any machine measured), every process takes its events later than
// the deadlines absorb. The run measures it, runs again at twice the
// time scale up to four times, and then stops: exit 4, the report naming
// the lateness and what the deadlines absorb, not a verdict on the
// workload.
func TestCLI_LiveTooLate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 40, "200")
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", t.TempDir(), "--time-scale", "0.0002")
	if code != exitInconclusive {
		t.Fatalf("exit %d, want %d: %s\n%s", code, exitInconclusive, errOut, stdout)
	}
	for _, want := range []string{"time scale 0.0016; lateness: events p99", "run 1 at time scale 0.0002 was too late", "run 3 at time scale 0.0008 was too late",
		"TOO LATE: at time scale 0.0016 the processes took 1 in 100 of their", "the run's deadlines absorb (a tenth of the heartbeat timer"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(errOut, "running again at time scale"); n != 3 {
		t.Errorf("%d runs again, want 3:\n%s", n, errOut)
	}
}

// live --policy disabled --compare: the legacy path, source-first and
// destination-first over real processes on one workload, each in its own
// directory, and a table of the three. Every run is clean; the legacy
// path strands nothing, and its logs name the policy disabled and are
// not judged (conform refuses them), the lifecycle's are.
func TestCLI_LiveCompareLegacy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	w := liveWorkload(t, 30, "100")
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "live", "--policy", "disabled", "--compare", "--workload", w, "--out", out, "--time-scale", "0.01", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, stdout)
	}
	var rep struct {
		Runs []struct {
			Policy    string   `json:"policy"`
			Succeeded int      `json:"succeeded"`
			Clean     bool     `json:"clean"`
			Stranded  float64  `json:"stranded_source_block_seconds"`
			Logs      []string `json:"logs"`
			Conform   *struct {
				Verdict string `json:"verdict"`
			} `json:"conform"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(rep.Runs) != 3 {
		t.Fatalf("%d runs, want the legacy path and both policies", len(rep.Runs))
	}
	for i, pol := range []string{"disabled", "source-first", "destination-first"} {
		r := rep.Runs[i]
		if r.Policy != pol || r.Succeeded != 30 || !r.Clean || len(r.Logs) != 5 || !strings.HasPrefix(r.Logs[0], filepath.Join(out, pol)+"/") {
			t.Fatalf("run %d: %+v; want %s, 30 clean successes, its logs in %s", i, r, pol, filepath.Join(out, pol))
		}
		if (r.Conform == nil) != (pol == "disabled") || (r.Conform != nil && r.Conform.Verdict != "explained") {
			t.Fatalf("%s: conform %+v; want the lifecycle's logs explained and the legacy path's not judged", pol, r.Conform)
		}
		head, err := os.ReadFile(r.Logs[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(head[:bytes.IndexByte(head, '\n')]), `"policy":"`+pol+`"`) {
			t.Fatalf("%s's log header: %.120s", pol, head)
		}
	}
	if rep.Runs[0].Stranded != 0 {
		t.Fatalf("the legacy path stranded %v block-seconds: it pins nothing", rep.Runs[0].Stranded)
	}
	// Without --json the three reports, then the table of them.
	code, stdout, errOut = runCLI(t, "live", "--policy", "disabled", "--compare", "--workload", w, "--out", t.TempDir(), "--time-scale", "0.01")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, stdout)
	}
	table := stdout[strings.LastIndex(stdout, "\n\n")+2:]
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "CPU µs/handoff") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "disabled ") {
		t.Fatalf("the table:\n%s", table)
	}
}

// TestCLI_LiveProps: workers that run release-before-activation's tables
// write logs that conform explains by the variant's tables, and rejects
// with the property that sees the bug, naming it. The run is ten
// requests with nothing timed asserted: small enough for -short.
func TestCLI_LiveProps(t *testing.T) {
	w := liveWorkload(t, 10, "100")
	file := propsDir + "release-before-activation.props"
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", t.TempDir(), "--spec", "../../testdata/variants/release-before-activation.json",
		"--props", file, "--json")
	var rep struct {
		Conform struct {
			Verdict   string `json:"verdict"`
			Rejection struct {
				Fact       string `json:"fact"`
				Property   string `json:"property"`
				PropertyAt string `json:"property_at"`
			} `json:"rejection"`
		} `json:"conform"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitViolation {
		t.Fatalf("exit %d, %v: %s\n%s", code, err, errOut, stdout)
	}
	r := rep.Conform.Rejection
	if rep.Conform.Verdict != "rejected" || r.Property != "AckAfterActivationApplied" || r.PropertyAt != file+":8" || !strings.HasSuffix(r.Fact, "transfer_done") {
		t.Fatalf("the run's verdict: %+v, want rejected at a transfer_done by AckAfterActivationApplied at %s:8", rep.Conform, file)
	}
}

// TestCLI_LivePropsRefused: --props goes only where conform judges a
// lifecycle, and takes always properties only; each refusal is exit 2
// before any process starts.
func TestCLI_LivePropsRefused(t *testing.T) {
	file := propsDir + "release-before-activation.props"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--props", file, "--no-conform"}, "--props: the properties are judged by conform on the run's logs, which --no-conform turns off"},
		{[]string{"--props", file, "--policy", "disabled"}, "--props: the disabled policy runs no handoff lifecycle"},
		{[]string{"--props", file, "--policy", "disabled", "--compare"}, "--props: the disabled policy runs no handoff lifecycle"},
		{[]string{"--props", file, "--policy", "aggregated"}, "--props: the aggregated policy runs no handoff lifecycle"},
		{[]string{"--props", propsDir + "typo.props"}, propsDir + "typo.props:3:66: undefined field 'sourceterminal'"},
	} {
		code, stdout, errOut := runCLI(t, append([]string{"live", "--out", t.TempDir()}, tc.args...)...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(errOut, "handoffcheck live: "+tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, errOut, tc.want)
		}
	}
}

// TestCLI_LiveRepro: a broken variant run live is rejected by conform,
// and --repro writes the rejection's reproduction: a trace that replay
// judges to the same invariant, and a plan on the clock that simulate
// judges to it too. Refusals come before any process starts.
func TestCLI_LiveRepro(t *testing.T) {
	w := liveWorkload(t, 10, "100")
	dir := t.TempDir()
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", t.TempDir(), "--spec", "../../testdata/variants/release-on-scheduler-finish.json", "--repro", dir)
	if code != exitViolation || !strings.Contains(stdout, "verdict: rejected") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	if !strings.Contains(errOut, "reproduction of SourcePinnedUntilRead written to "+dir) {
		t.Fatalf("stderr %q", errOut)
	}
	code, out, rerr := runCLI(t, "replay", filepath.Join(dir, "trace.jsonl"))
	if code != exitViolation || !strings.Contains(out, "VIOLATION SourcePinnedUntilRead") || !strings.Contains(out, "(the violation the trace records)") {
		t.Fatalf("replay of the reproduction: exit %d\n%s%s", code, out, rerr)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "handoffcheck simulate --config sim.json --workload workload.jsonl --faults faults.jsonl") {
		t.Errorf("the README gives no plan on the clock:\n%s", readme)
	}
	// The plan, under the tables the trace carries, breaks the same
	// invariant in simulate.
	spec := "../../testdata/variants/release-on-scheduler-finish.json"
	if _, err := os.Stat(filepath.Join(dir, "spec.json")); err == nil {
		spec = filepath.Join(dir, "spec.json")
	}
	code, out, rerr = runCLI(t, "simulate", "--config", filepath.Join(dir, "sim.json"), "--workload", filepath.Join(dir, "workload.jsonl"),
		"--faults", filepath.Join(dir, "faults.jsonl"), "--spec", spec)
	if code != exitViolation || !strings.Contains(out, "VIOLATION SourcePinnedUntilRead at ") {
		t.Fatalf("simulate on the reproduction's plan: exit %d\n%s%s", code, out, rerr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--repro", dir, "--compare"}, "--repro with --compare"},
		{[]string{"--repro", dir, "--no-conform"}, "--repro: a reproduction is of conform's rejection"},
		{[]string{"--repro", dir, "--policy", "disabled"}, "--repro: the disabled policy's logs are not judged"},
	} {
		code, stdout, errOut := runCLI(t, append([]string{"live", "--out", t.TempDir()}, tc.args...)...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(errOut, "handoffcheck live: "+tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, errOut, tc.want)
		}
	}
}

// TestCLI_LiveWithin: workers that run pin-ignores-ack-and-lease's tables
// hold a pin through an 80 s decode; the run's logs, judged on their
// clock divided by the run's time scale, break the clock question at its
// deadline, named in the run's verdict and in its properties.
func TestCLI_LiveWithin(t *testing.T) {
	if testing.Short() {
		t.Skip("a live run of an 80 s decode")
	}
	file := propsDir + "questions.clock.props"
	code, stdout, errOut := runCLI(t, "live", "--workload", "../../testdata/sim/long-decode.jsonl", "--out", t.TempDir(),
		"--spec", "../../testdata/variants/pin-ignores-ack-and-lease.json", "--props", file, "--json")
	var rep struct {
		Conform struct {
			Verdict   string `json:"verdict"`
			Rejection struct {
				Property string `json:"property"`
				Detail   string `json:"detail"`
			} `json:"rejection"`
			Properties struct {
				Properties []struct {
					Name    string `json:"name"`
					Verdict string `json:"verdict"`
				} `json:"properties"`
			} `json:"properties"`
		} `json:"conform"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitViolation {
		t.Fatalf("exit %d, %v: %s\n%s", code, err, errOut, stdout)
	}
	c := rep.Conform
	if c.Verdict != "rejected" || c.Rejection.Property != "PinnedSourceReleased" || !strings.Contains(c.Rejection.Detail, "leads_to PinnedSourceReleased within 60s: h.source_hold == \"pinned\" held at ") ||
		len(c.Properties.Properties) != 1 || c.Properties.Properties[0].Verdict != "violated" {
		t.Fatalf("the run's verdict: %+v", c)
	}
}
