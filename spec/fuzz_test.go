package spec

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse feeds Parse arbitrary bytes. Parse reads files people and other
// tools write, so it must never panic (docs/cli.md: every reader gives
// file:line and never panics), and a spec it accepts must be valid and
// survive a round trip through Format. JSON cannot tell an omitted list
// from an empty one, so the comparison equates them.
//
// Run it longer with:
//
//	go test ./spec -run '^$' -fuzz FuzzParse -fuzztime 30s -fuzzminimizetime 2s
//
// The default seed is a whole spec (about 45 KB); with the default minute
// of minimization per new input the fuzzer spends most of its time
// shrinking, hence the short -fuzzminimizetime.
func FuzzParse(f *testing.F) {
	def, err := Default().Format()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(def)
	f.Add(def[:len(def)/2])
	f.Add(bytes.Replace(def, []byte(`"source-first"`), []byte(`"vllm-first"`), 1))
	f.Add(bytes.Replace(def, []byte(`"why": "`), []byte(`"why": "`+"\xff"), 1))
	f.Add(bytes.Replace(def, []byte(`"from": [`), []byte(`"from": null, "x": [`), 1))
	f.Add([]byte(""))
	f.Add([]byte("null"))
	f.Add([]byte("[]"))
	f.Add([]byte(`{"schema": "handoffcheck.spec/v1"}`))
	f.Add([]byte(`{"schema": "handoffcheck.spec/v1", "source": {"rows": [null, 1, {"from": ["Idle"]}]}}`))
	f.Add([]byte(`{"schema": "handoffcheck.spec/v1"} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.json", data)
		if err != nil {
			if s != nil {
				t.Fatalf("Parse returned a spec with its error %v", err)
			}
			return
		}
		if s == nil {
			t.Fatal("Parse returned neither a spec nor an error")
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted a spec that does not validate: %v", err)
		}
		out, err := s.Format()
		if err != nil {
			t.Fatalf("Format of a parsed spec: %v", err)
		}
		back, err := Parse("fuzz.json", out)
		if err != nil {
			t.Fatalf("Parse of a formatted spec: %v\n%s", err, out)
		}
		if diff := cmp.Diff(s, back, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the spec (-parsed +reparsed):\n%s", diff)
		}
	})
}
