package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

const (
	exploreTrace = "../../testdata/traces/release-on-heartbeat.jsonl"
	exploreLog   = "../../testdata/logs/invalid/stored-before-activation.jsonl"
	// exploreMocker is a dynamo mocker log conform --from mocker explains.
	exploreMocker = "../../testdata/logs/mocker/source-first.jsonl"
)

// explore refuses what it cannot serve, each with exit 2 and one line.
func TestExplore_RefusesBadUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "loopback interface only"},
		{[]string{"--addr", "8080"}, "want host:port on the loopback interface"},
		{[]string{"--config", "../../testdata/configs/small.json", exploreTrace}, "--config with a trace file"},
		{[]string{"--run", "nosuch"}, `--run "nosuch"`},
		{[]string{"nosuch.jsonl"}, "nosuch.jsonl"},
		{[]string{"../../testdata/configs/small.json"}, "small.json:1:"},
		{[]string{exploreTrace, exploreTrace}, "want one trace file or observation logs, got 2 files"},
		{[]string{"--run", "vllm", exploreLog}, "--run with logs"},
		{[]string{"--props", "../../testdata/props/questions.props", exploreLog}, "--props with logs"},
		{[]string{"--props", "../../testdata/props/typo.props"}, "typo.props:"},
		{[]string{exploreLog, "../../testdata/logs/invalid/expect.json"}, "expect.json:1:"},
		{[]string{exploreMocker}, "source-first.jsonl is a log of the dynamo mocker (dynamo.mocker.offline-replay/v1): add --from mocker"},
		{[]string{"--from", "vllm", exploreMocker}, `--from "vllm", want handoffcheck or mocker`},
		{[]string{"--from", "mocker"}, "--from mocker: want the mocker's logs"},
		{[]string{"--from", "mocker", "--run", "vllm", exploreMocker}, "--run with logs"},
		{[]string{"--from", "mocker", "../../testdata/logs/mocker/aggregated.jsonl"}, "aggregated.jsonl: an aggregated replay hands nothing off"},
		{[]string{"--from", "mocker", "../../testdata/logs/mocker/invalid-unknown-phase.jsonl"}, `invalid-unknown-phase.jsonl:6: malformed mocker replay log: phase "Prefilling"`},
	} {
		// One line: the error, and for usage errors where help is.
		var out, errOut bytes.Buffer
		code := run(append([]string{"explore"}, c.args...), &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), c.want) || strings.Count(strings.TrimSpace(errOut.String()), "\n") > 1 {
			t.Errorf("explore %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errOut.String(), c.want)
		}
	}
}

// explore serves its page and API on the loopback interface until an
// interrupt, then stops serving and exits 3.
func TestSignal_ExploreStopsServing(t *testing.T) {
	// Waits (a build, a process, a silence) with little CPU: beside the
	// other tests that do.
	t.Parallel()
	t.Run("trace", func(t *testing.T) {
		serveAndInterrupt(t, "api/state?path=0.0", `"deliver-request h=0"`, "explore", exploreTrace)
	})
	t.Run("logs", func(t *testing.T) {
		serveAndInterrupt(t, "api/logs", `"invariant": "NoStoredBeforeActivation"`, "explore", exploreLog)
	})
	t.Run("mocker", func(t *testing.T) {
		serveAndInterrupt(t, "api/logs", `"invariant": "ExactlyOnceRelease"`, "explore", "--from", "mocker", "../../testdata/logs/mocker/invalid-release-before-prefill-done.jsonl")
	})
}

func serveAndInterrupt(t *testing.T, path, want string, args ...string) {
	cmd := exec.Command(binary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	rd := bufio.NewReader(stdout)
	first, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v (stderr %q)", err, errOut.String())
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(first)
	if url == "" {
		t.Fatalf("the first line names no loopback URL: %q", first)
	}
	resp, err := http.Get(url + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		t.Fatalf("%s: %d %.300q, want %s", path, resp.StatusCode, body, want)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	if code := exitCode(t, cmd); code != exitInterrupted {
		t.Fatalf("exit %d after SIGINT, want 3 (stderr %q)", code, errOut.String())
	}
	if !strings.Contains(string(rest), "explore: interrupted, stopped serving") {
		t.Errorf("after SIGINT the output is %q", rest)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("%s still answers after the process exited", url)
	}
}
