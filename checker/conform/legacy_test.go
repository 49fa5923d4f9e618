package conform

import (
	"errors"
	"strings"
	"testing"
)

// TestJudge_RefusesLegacyLog: a log of the legacy disaggregated path
// (header policy disabled) is refused at its first line, naming why,
// before a fact is read: judged against the lifecycle it would be
// rejected for what the old path is, or explained by accident. One of
// several logs is enough to refuse them all.
func TestJudge_RefusesLegacyLog(t *testing.T) {
	const procs = `"processes":[{"name":"router","role":"router"},{"name":"prefill-0","role":"prefill"},{"name":"decode-0","role":"decode"}]`
	legacy := `{"schema":"handoffcheck.log/v1","policy":"disabled","engine":"vllm",` + procs + "}\n" +
		`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":512,"t_us":0}` + "\n"
	lifecycle := `{"schema":"handoffcheck.log/v1","policy":"source-first","engine":"vllm",` + procs + "}\n"
	for _, c := range []struct {
		name string
		in   []Input
	}{
		{"alone", []Input{{Name: "legacy.jsonl", R: strings.NewReader(legacy)}}},
		{"second", []Input{{Name: "a.jsonl", R: strings.NewReader(lifecycle)}, {Name: "legacy.jsonl", R: strings.NewReader(legacy)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Judge(c.in, Options{})
			if rep != nil || !errors.Is(err, ErrInput) || !strings.HasPrefix(err.Error(), "legacy.jsonl:1: ") ||
				!strings.Contains(err.Error(), "policy is disabled") || !strings.Contains(err.Error(), "contract does not apply") {
				t.Fatalf("Judge: report %v, error %v; want ErrInput at legacy.jsonl:1 saying the contract does not apply", rep, err)
			}
		})
	}
}
