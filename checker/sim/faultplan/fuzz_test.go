package faultplan

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseFaultPlan: no input panics the parser; every refusal names the
// file and a line and wraps ErrFaultPlan; and an accepted plan, written in
// canonical form, parses back the same.
func FuzzParseFaultPlan(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(exampleCanonical))
	f.Add([]byte(header))
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Add([]byte(header + `{"at_ms":0,"kind":"reorder","request":4}`))
	f.Add([]byte(header + `{"at_ms":5,"kind":"hang","request":4}` + "\n" + `{"at_ms":4.5,"kind":"hang","request":3}`))
	f.Add([]byte(header + `{"at_ms":0,"kind":"restart","worker":0,"request":1}`))
	f.Add([]byte(header + `{"at_ms":1e999,"kind":"loss","request":1.5,"to":"both","msg":""}`))
	f.Add([]byte(header + `{"at_ms":0,"kind":"hang","request":4,"request":5}`))
	f.Add([]byte(header + `{"at_ms":0,"kind":"hang","request":4}}`))
	f.Add([]byte(strings.ReplaceAll(example, "\n", "\r\n")))
	f.Add([]byte(header + `{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"reserved","after_side":"destination"}`))
	f.Add([]byte(header + `{"at_ms":0,"kind":"delay","request":0,"side":"source","after_side":"both"}`))
	f.Add([]byte(header + `{"at_ms":0,"kind":"restart","request":0,"side":"source","after":"pinned","after_side":"source"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			if !errors.Is(err, ErrFaultPlan) || !strings.HasPrefix(err.Error(), "fuzz.jsonl:") {
				t.Fatalf("error does not name the file and line, or is not an ErrFaultPlan: %v", err)
			}
			return
		}
		var b bytes.Buffer
		if err := Write(&b, p); err != nil {
			t.Fatalf("an accepted plan is refused by Write: %v", err)
		}
		back, err := Parse(bytes.NewReader(b.Bytes()), "again.jsonl")
		if err != nil {
			t.Fatalf("canonical form refused: %v\n%s", err, b.Bytes())
		}
		ignoreLine := cmpopts.IgnoreFields(Fault{}, "Line")
		if d := cmp.Diff(p, back, ignoreLine, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("canonical form reads back otherwise (-first +again):\n%s", d)
		}
	})
}
