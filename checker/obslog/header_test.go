package obslog

import (
	"errors"
	"strings"
	"testing"
)

const headProcs = `"processes":[{"name":"router","role":"router"},{"name":"prefill-0","role":"prefill"},{"name":"decode-0","role":"decode"%s}]`

func readHeader(line string) (*Header, error) {
	r, err := NewReader(strings.NewReader(line+"\n"), "h.jsonl")
	if err != nil {
		return nil, err
	}
	return r.Header(), nil
}

// records is what docs/conform.md writes, "milestones" as a string, for
// the whole log or one process; the string and the one-item list mean
// the same; a string that is not "all" or "milestones" is refused at the
// header's line.
func TestHeaderRecordsString(t *testing.T) {
	ms := Of(Milestones()...) | Of(WorkerRestarted)
	for _, c := range []struct {
		records, proc string
		want          [3]KindSet
	}{
		{`"records":"milestones",`, "", [3]KindSet{ms, ms, ms}},
		{`"records":["milestones"],`, "", [3]KindSet{ms, ms, ms}},
		{`"records":"all",`, "", [3]KindSet{All, All, All}},
		{`"records":"milestones",`, `,"records":"all"`, [3]KindSet{ms, ms, All}},
		{``, `,"records":"milestones"`, [3]KindSet{All, All, ms}},
	} {
		line := `{"schema":"handoffcheck.log/v1","policy":"source-first","engine":"vllm",` + c.records + strings.Replace(headProcs, "%s", c.proc, 1) + `}`
		h, err := readHeader(line)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		for i, p := range h.Processes {
			if p.Records != c.want[i] {
				t.Errorf("%s: %s records %v, want %v", line, p.Name, p.Records, c.want[i])
			}
		}
	}
	for _, bad := range []string{`"records":"routed",`, `"records":5,`, `"records":{"a":1},`} {
		line := `{"schema":"handoffcheck.log/v1","policy":"source-first","engine":"vllm",` + bad + strings.Replace(headProcs, "%s", "", 1) + `}`
		if _, err := readHeader(line); err == nil || !errors.Is(err, ErrLog) || !strings.HasPrefix(err.Error(), "h.jsonl:1: ") || !strings.Contains(err.Error(), "records") {
			t.Errorf("%s: %v, want a refusal at h.jsonl:1 about records", bad, err)
		}
	}
}

// A header whose configuration names another policy or engine than the
// header is refused at its line, saying which and what was expected; a
// configuration that agrees, or names neither, is taken.
func TestHeaderConfigAgrees(t *testing.T) {
	line := func(policy, engine, config string) string {
		return `{"schema":"handoffcheck.log/v1","policy":"` + policy + `","engine":"` + engine + `",` + strings.Replace(headProcs, "%s", "", 1) + `,"config":` + config + `}`
	}
	for _, c := range []struct{ policy, engine, config, want string }{
		{"source-first", "vllm", `{"schema":"handoffcheck.sim/v1","policy":"destination-first","engine":"vllm"}`, `the configuration's policy is "destination-first" and the header's "source-first"`},
		{"destination-first", "vllm", `{"schema":"handoffcheck.sim/v1","policy":"disabled","engine":"vllm"}`, `the configuration's policy is "disabled"`},
		{"disabled", "vllm", `{"schema":"handoffcheck.sim/v1","policy":"source-first","engine":"vllm"}`, `the configuration's policy is "source-first" and the header's "disabled"`},
		{"source-first", "vllm", `{"schema":"handoffcheck.sim/v1","policy":"source-first","engine":"sglang"}`, `the configuration's engine is "sglang" and the header's "vllm"`},
	} {
		_, err := readHeader(line(c.policy, c.engine, c.config))
		if err == nil || !errors.Is(err, ErrLog) || !strings.HasPrefix(err.Error(), "h.jsonl:1: ") || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "want the") {
			t.Errorf("%s: %v, want a refusal at h.jsonl:1 saying %s", c.config, err, c.want)
		}
	}
	for _, ok := range []string{
		`{"schema":"handoffcheck.sim/v1","policy":"source-first","engine":"vllm"}`,
		`{"schema":"handoffcheck.sim/v1"}`,
		`null`,
	} {
		if _, err := readHeader(line("source-first", "vllm", ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A log of the legacy path names the policy disabled: it reads (Legacy,
// no lifecycle policy), with a configuration of that policy, and writes
// back the same header line.
func TestHeaderLegacy(t *testing.T) {
	line := `{"schema":"handoffcheck.log/v1","policy":"disabled","engine":"vllm",` + strings.Replace(headProcs, "%s", "", 1) + `,"config":{"schema":"handoffcheck.sim/v1","policy":"disabled"}}`
	h, err := readHeader(line)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Legacy || h.PolicyName() != LegacyPolicy {
		t.Fatalf("legacy %v, policy %q; want a legacy header of policy %q", h.Legacy, h.PolicyName(), LegacyPolicy)
	}
	var b strings.Builder
	w, err := NewWriter(&b, h)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	back, err := readHeader(strings.TrimSuffix(b.String(), "\n"))
	if err != nil || !back.Legacy {
		t.Fatalf("the written header %q reads back as legacy %v (%v)", b.String(), back != nil && back.Legacy, err)
	}
	if _, err := readHeader(strings.Replace(line, `"policy":"disabled","engine"`, `"policy":"legacy","engine"`, 1)); err == nil || !strings.Contains(err.Error(), "want source-first, destination-first or disabled") {
		t.Fatalf("an unknown policy: %v", err)
	}
}
