package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The simulator's own log of its default run conforms: a run of the
// default configuration and workload, judged by conform. vLLM adopts
// canonical blocks at activation by default: the activated facts say what
// was adopted, and the judge's ledgers count the shared blocks once. So
// does the log of the same run with adoption turned off, which says
// nothing of adoption, and that of a workload whose every request shares
// one of two long prefixes, where adoption is heavy, and of runs with
// drawn faults that restart sharers' workers. With the adoptions
// taken out of its log, the default run is rejected for
// CapacityRespected: the judge needs them.
func TestSimulateLog_Conforms(t *testing.T) {
	dir := t.TempDir()
	conforms := func(log string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run([]string{"conform", log}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "verdict: explained") {
			t.Fatalf("conform of %s: exit %d\n%s%s", filepath.Base(log), code, out.String(), errOut.String())
		}
	}
	simulate := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append([]string{"simulate"}, args...), &out, &errOut); code != exitOK {
			t.Fatalf("simulate %v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
		return out.String()
	}
	alog := filepath.Join(dir, "default.jsonl")
	if out := simulate("--log", alog); !strings.Contains(out, "duplicate blocks adopted at activation") {
		t.Fatalf("the default run adopted nothing:\n%s", out)
	}
	conforms(alog)
	// Drawn faults restart decode workers while requests there share
	// canonical blocks: the shares end with the restart, after every
	// attempt there restarted (these two runs were rejected when the
	// judge ended them first).
	for _, run := range [][]string{{"--policy", "source-first", "--faults-seed", "4"}, {"--policy", "destination-first", "--engine", "vllm", "--faults-seed", "6"}} {
		flog := filepath.Join(dir, "faults.jsonl")
		if out := simulate(append(run, "--log", flog)...); !strings.Contains(out, "duplicate blocks adopted at activation") {
			t.Fatalf("simulate %v adopted nothing:\n%s", run, out)
		}
		conforms(flog)
	}
	olog := filepath.Join(dir, "off.jsonl")
	if out := simulate("--config", "../../testdata/sim/no-adopt.json", "--log", olog); strings.Contains(out, "adopted at activation") {
		t.Fatalf("the run with adopt_canonical_blocks false speaks of adoption:\n%s", out)
	}
	conforms(olog)
	if off, err := os.ReadFile(olog); err != nil || bytes.Contains(off, []byte(`"adopted_blocks":`)) {
		t.Fatalf("the log of the run with adoption off: %v, or it says something was adopted", err)
	}
	adopted, err := os.ReadFile(alog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(adopted, []byte(`"adopted_blocks":`)) {
		t.Fatal("the adopting run's log says nothing of what was adopted")
	}
	stripped := filepath.Join(dir, "stripped.jsonl")
	re := regexp.MustCompile(`,"adopted_blocks":[0-9]+,"canonical":"[^"]*"`)
	if err := os.WriteFile(stripped, re.ReplaceAll(adopted, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"conform", stripped}, &out, &errOut); code != exitViolation || !strings.Contains(out.String(), "CapacityRespected") {
		t.Fatalf("conform of the adopting log without its adoptions: exit %d, want %d and CapacityRespected\n%s%s", code, exitViolation, out.String(), errOut.String())
	}

	wl := filepath.Join(dir, "shared.jsonl")
	out.Reset()
	errOut.Reset()
	if code := run([]string{"workload", "gen", "--requests", "300", "--rate", "60", "--prefix-groups", "2", "--prefix-share", "1", "--prefix", "uniform:512-1536",
		"--prompt", "lognormal:mean=2048,sigma=0.4,min=1024,max=8192", "--output", "lognormal:mean=256,sigma=0.6,min=8,max=1024", "--seed", "3", "--out", wl}, &out, &errOut); code != exitOK {
		t.Fatalf("workload gen: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	slog := filepath.Join(dir, "shared-log.jsonl")
	if out := simulate("--workload", wl, "--log", slog); !regexp.MustCompile(`\n  canonical blocks: [1-9][0-9]{3,} duplicate blocks adopted at activation\n`).MatchString(out) {
		t.Fatalf("the heavily shared workload adopted fewer than a thousand blocks:\n%s", out)
	}
	conforms(slog)
}

// The shipped example logs (testdata/logs/valid, make examples) are the
// simulator's logs of testdata/logs' configuration, workload and faults:
// conform on each says the same built-in invariants were exercised as
// simulate says of that run, and first at the same virtual time, but for
// AttemptIsolation (conform's search never delivers a fact no row acts
// on) and Quiescence's time (the simulator judges a request when nothing
// more is scheduled for it, conform at the attempt's last fact).
func TestSimulateLog_ConformAgreesOnInvariantsExercised(t *testing.T) {
	type inv struct {
		Invariant string `json:"invariant"`
		Exercised bool   `json:"exercised"`
		First     *struct {
			AtUS int64 `json:"at_us"`
		} `json:"first"`
	}
	type report struct {
		Invariants *struct {
			Invariants []inv `json:"invariants"`
		} `json:"invariants"`
	}
	runJSON := func(args ...string) map[string]inv {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
		var r report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Invariants == nil {
			t.Fatalf("%v: %v, or no invariants in\n%s", args, err, out.String())
		}
		m := map[string]inv{}
		for _, x := range r.Invariants.Invariants {
			m[x.Invariant] = x
		}
		return m
	}
	for _, p := range []struct{ policy, engine string }{{"source-first", "vllm"}, {"destination-first", "sglang"}} {
		sim := runJSON("simulate", "--config", "../../testdata/logs/config.json", "--workload", "../../testdata/logs/workload.jsonl",
			"--faults", "../../testdata/logs/faults.jsonl", "--policy", p.policy, "--engine", p.engine, "--json")
		con := runJSON("conform", "--json", "../../testdata/logs/valid/"+p.policy+"-complete.jsonl")
		exercised := 0
		for name, s := range sim {
			c, ok := con[name]
			if !ok {
				if name != "FaultFreeCompletion" {
					t.Errorf("%s: conform does not report %s", p.policy, name)
				}
				continue
			}
			if name == "AttemptIsolation" {
				if c.Exercised {
					t.Errorf("%s: conform exercised AttemptIsolation, whose stale deliveries its search leaves in flight", p.policy)
				}
				continue
			}
			if s.Exercised != c.Exercised {
				t.Errorf("%s: %s: simulate exercised %v, conform %v", p.policy, name, s.Exercised, c.Exercised)
			}
			if s.Exercised {
				exercised++
			}
			if s.First != nil && name != "Quiescence" && (c.First == nil || c.First.AtUS != s.First.AtUS) {
				t.Errorf("%s: %s: first exercised at %+v us in simulate, %+v in conform", p.policy, name, s.First, c.First)
			}
		}
		if exercised < 15 {
			t.Errorf("%s: only %d invariants exercised: the example run should exercise most", p.policy, exercised)
		}
	}
}
