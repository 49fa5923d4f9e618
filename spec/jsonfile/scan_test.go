package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScan_LinesByPath(t *testing.T) {
	data := []byte(`{
  "workers": [
    {"role": "prefill",
     "capacity_blocks": 8},
    {
      "role": "decode"
    }
  ],
  "0": {"1": 2}
}`)
	p, err := Scan("f.json", data, errBad)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []any
		want int
	}{
		{nil, 1},
		{[]any{"workers"}, 2},
		{[]any{"workers", 0}, 3},
		{[]any{"workers", 0, "capacity_blocks"}, 4},
		{[]any{"workers", 1}, 5},
		{[]any{"workers", 1, "role"}, 6},
		// Absent: the nearest present ancestor.
		{[]any{"workers", 1, "slots"}, 5},
		{[]any{"workers", 7}, 2},
		{[]any{"0", "1"}, 9},
		// A key "0" is not an index 0.
		{[]any{0}, 1},
	} {
		if got := p.Line(tc.path...); got != tc.want {
			t.Errorf("Line(%v) = %d, want %d", tc.path, got, tc.want)
		}
	}
	if !p.Has("workers", 1, "role") || p.Has("workers", 1, "slots") {
		t.Error("Has does not tell present from absent paths")
	}
	var none *Positions
	if none.Line("x") != 1 || none.Has("x") {
		t.Error("a nil Positions is not the empty document")
	}
}

func TestScan_RefusesDuplicateKeys(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"top", "{\n\"a\": 1,\n\"a\": 2\n}", `f.json:3: bad: key "a" appears twice in the top-level object (first on line 2); want each key once`},
		{"nested", "{\"w\": [{},\n {\"slots\": 1,\n  \"slots\": 2}]}", `f.json:3: bad: key "slots" appears twice in w[1] (first on line 2); want each key once`},
		// The same key in two objects is no duplicate.
		{"siblings", `[{"a": 1}, {"a": 2}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Scan("f.json", []byte(tc.data), errBad)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, errBad) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

// Scan never panics on what did not decode, and a huge number is a value.
func TestScan_BadInput(t *testing.T) {
	for _, data := range []string{"", "{", `{"a" 1}`, "[1, 2", `{"a": 1e999}`, "{} {}", `"\`, `{"a": 1,}`, "}", `{"a"`, `"abc`, `[1 2]`, `{"\u00": 1}`} {
		_, err := Scan("f.json", []byte(data), errBad)
		if data == `{"a": 1e999}` || data == "{} {}" {
			if err != nil {
				t.Errorf("%q: %v", data, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "f.json:") || !errors.Is(err, errBad) {
			t.Errorf("%q: got %v, want a file:line refusal wrapping bad", data, err)
		}
	}
}

// Decoding errors name what the file should hold in JSON terms, never by
// a Go type name.
func TestDecodeError_NoGoTypeNames(t *testing.T) {
	type blocks int32
	type entry struct {
		Capacity blocks `json:"capacity_blocks"`
	}
	var v struct {
		Entries []entry `json:"entries"`
		Budget  uint8   `json:"budget"`
	}
	for _, tc := range []struct{ data, want string }{
		{`{"entries": {}}`, `f.json:1: bad: field "entries": got JSON object, want an array`},
		{`{"entries": [{"capacity_blocks": "8"}]}`, `f.json:1: bad: field "entries.capacity_blocks": got JSON string, want an integer from -2147483648 to 2147483647`},
		{`{"budget": 300}`, `f.json:1: bad: field "budget": got JSON number 300, want an integer from 0 to 255`},
		{`[]`, `f.json:1: bad: the document: got JSON array, want an object`},
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(tc.data)))
		err := DecodeError("f.json", []byte(tc.data), dec.Decode(&v), errBad, "an object")
		if err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.data, err, tc.want)
		}
		if c := Clean(dec.Decode(&v)); strings.Contains(c, "Go ") {
			t.Errorf("Clean names a Go type: %s", c)
		}
	}
}

func TestReadFile_Bounded(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte("{}"), 0o644)
	if data, err := ReadFile(small); err != nil || string(data) != "{}" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	// A file beyond the limit is refused by its size, unread (a sparse
	// file: it takes no disk).
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err == nil {
		f.Truncate(MaxFileBytes + 1)
		f.Close()
		_, err := ReadFile(huge)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), huge+": ") || !strings.Contains(err.Error(), "16 MiB") {
			t.Fatalf("%s: got %v, want a refusal naming the file and the 16 MiB limit", huge, err)
		}
	}
	// An endless input stops at the limit.
	if f, err := os.Open("/dev/zero"); err == nil {
		_, err := readLimited("/dev/zero", f, 1<<20)
		f.Close()
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/dev/zero: ") || !strings.Contains(err.Error(), "1 MiB") {
			t.Fatalf("/dev/zero: got %v, want a refusal naming the file and the limit", err)
		}
	}
	if _, err := readLimited("x", strings.NewReader("12345"), 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("5 bytes under a 4-byte limit: %v", err)
	}
	if data, err := readLimited("x", strings.NewReader("1234"), 4); err != nil || string(data) != "1234" {
		t.Fatalf("4 bytes under a 4-byte limit: %q, %v", data, err)
	}
}

// ScanAt counts lines from the line its value starts on.
func TestScanAt_LinesOfTheFile(t *testing.T) {
	p, err := ScanAt("t.jsonl", 7, []byte(`{"step": 1, "move": "x"}`), errBad)
	if err != nil || p.Line("move") != 7 {
		t.Fatalf("Line(move) = %d, %v; want 7", p.Line("move"), err)
	}
	_, err = ScanAt("t.jsonl", 7, []byte(`{"step": 1, "step": 2}`), errBad)
	if want := `t.jsonl:7: bad: key "step" appears twice in the top-level object (first on line 7); want each key once`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if _, err = ScanAt("t.jsonl", 7, []byte(`{"step": `), errBad); err == nil || !strings.HasPrefix(err.Error(), "t.jsonl:7: bad: ") {
		t.Fatalf("truncated: %v", err)
	}
}
