package obslog

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// An activated fact may say the destination adopted canonical blocks:
// it reads back with both fields, and a log without them reads as
// before. A line that gives one without the other, gives them on another
// kind, adopts no block or names its own attempt is refused at its line,
// saying what was expected.
func TestAdoptionFields(t *testing.T) {
	read := func(line string) (Fact, error) {
		r, err := NewReader(strings.NewReader(fuzzHeader+line+"\n"), "a.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		return r.Next()
	}
	f, err := read(`{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":32,"canonical":"a","t_us":5}`)
	if err != nil || f.AdoptedBlocks != 32 || f.Canonical != "a" {
		t.Fatalf("an adoption reads as %+v, %v; want 32 blocks of a", f, err)
	}
	var b strings.Builder
	w, _ := NewWriter(&b, &Header{Engine: 0, Processes: []Process{{Name: "router", Role: RoleRouter, Records: All}, {Name: "p0", Role: RolePrefill, Records: All}, {Name: "d0", Role: RoleDecode, Records: All}}})
	w.Write(&f)
	w.Flush()
	if want := `{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":32,"canonical":"a","t_us":5}`; !strings.Contains(b.String(), want+"\n") {
		t.Errorf("written as\n%s\nwant the line %s", b.String(), want)
	}
	if f, err := read(`{"proc":"d0","gen":0,"attempt":"b","kind":"activated"}`); err != nil || f.AdoptedBlocks != 0 || f.Canonical != "" {
		t.Errorf("an activation without adoption reads as %+v, %v", f, err)
	}
	for _, c := range []struct{ line, want string }{
		{`{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":32}`, `needs both "adopted_blocks"`},
		{`{"proc":"d0","gen":0,"attempt":"b","kind":"activated","canonical":"a"}`, `needs both "adopted_blocks"`},
		{`{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":0,"canonical":"a"}`, "adopted_blocks 0: want the blocks adopted at activation, from 1"},
		{`{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":3,"canonical":"b"}`, "canonical: want the id of another attempt"},
		{`{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":3,"canonical":""}`, "canonical: want the id of another attempt"},
		{`{"proc":"d0","gen":0,"attempt":"b","kind":"decode_released","blocks":64,"adopted_blocks":3,"canonical":"a"}`, "decode_released carries no adopted_blocks or canonical"},
	} {
		_, err := read(c.line)
		if err == nil || err == io.EOF || !errors.Is(err, ErrLog) || !strings.HasPrefix(err.Error(), "a.jsonl:2: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal at a.jsonl:2 saying %q", c.line, err, c.want)
		}
	}
}
