package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// readAll reads a whole workload.
func readAll(name string, data []byte) (Header, []Request, error) {
	r, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		return Header{}, nil, err
	}
	var reqs []Request
	for {
		req, err := r.Next()
		if err == io.EOF {
			return r.Header(), reqs, nil
		}
		if err != nil {
			return r.Header(), reqs, err
		}
		reqs = append(reqs, req)
	}
}

// writeAll writes a whole workload.
func writeAll(t fataler, h Header, reqs []Request) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

const example = `{"format":"handoffcheck.workload/v1","name":"example","seed":7}
{"arrival_ms":0,"prompt_tokens":100,"output_tokens":10}
{"id":"r17","cancel_ms":40.0,"prefix_tokens":1024,"prefix_group":"g3","output_tokens":128,"prompt_tokens":2048,"arrival_ms":12.5}
{"arrival_ms": 12.5, "prompt_tokens": 1, "output_tokens": 1, "prefix_group": "g3", "prefix_tokens": 0}
{"arrival_ms":12.5004,"prompt_tokens":1048576,"output_tokens":1048576,"cancel_ms":12.5004}
`

// The canonical form of example: fields in their fixed order, times as
// the shortest decimal of the microsecond they round to.
const exampleCanonical = `{"format":"handoffcheck.workload/v1","name":"example","seed":7}
{"arrival_ms":0,"prompt_tokens":100,"output_tokens":10}
{"arrival_ms":12.5,"prompt_tokens":2048,"output_tokens":128,"prefix_group":"g3","prefix_tokens":1024,"cancel_ms":40,"id":"r17"}
{"arrival_ms":12.5,"prompt_tokens":1,"output_tokens":1,"prefix_group":"g3","prefix_tokens":0}
{"arrival_ms":12.5,"prompt_tokens":1048576,"output_tokens":1048576,"cancel_ms":12.5}
`

func TestRead_Example(t *testing.T) {
	h, reqs, err := readAll("w.jsonl", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Header{Format: FormatV1, Name: "example", Seed: 7, HasSeed: true}, h); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	want := []Request{
		{Index: 0, ArrivalUS: 0, PromptTokens: 100, OutputTokens: 10},
		{Index: 1, ID: "r17", ArrivalUS: 12500, PromptTokens: 2048, OutputTokens: 128, PrefixGroup: "g3", PrefixTokens: 1024, CancelUS: 40000, HasCancel: true},
		{Index: 2, ArrivalUS: 12500, PromptTokens: 1, OutputTokens: 1, PrefixGroup: "g3"},
		{Index: 3, ArrivalUS: 12500, PromptTokens: MaxTokens, OutputTokens: MaxTokens, CancelUS: 12500, HasCancel: true},
	}
	if d := cmp.Diff(want, reqs); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	if got := string(writeAll(t, h, reqs)); got != exampleCanonical {
		t.Errorf("canonical form:\n%s\nwant:\n%s", got, exampleCanonical)
	}
}

func TestReader_EOFIsSticky(t *testing.T) {
	r, err := NewReader(strings.NewReader(`{"format":"handoffcheck.workload/v1"}`), "w.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("Next of a workload without requests: %v, want io.EOF", err)
		}
	}
	// An error is sticky too.
	r, err = NewReader(strings.NewReader("{\"format\":\"handoffcheck.workload/v1\"}\n{}\n{\"arrival_ms\":0,\"prompt_tokens\":1,\"output_tokens\":1}\n"), "w.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	_, first := r.Next()
	_, again := r.Next()
	if first == nil || again != first {
		t.Fatalf("errors %v then %v, want the same error twice", first, again)
	}
}

const header = `{"format":"handoffcheck.workload/v1"}` + "\n"

// TestReader_Refusals: each refusal names the file and the line, says
// what is wrong and what was expected, and wraps ErrWorkload.
func TestReader_Refusals(t *testing.T) {
	ok := `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3}` + "\n"
	cases := []struct{ name, data, want string }{
		{"empty", "", `w.jsonl:1: workload: bad workload: empty workload, want a header line {"format": "handoffcheck.workload/v1"}`},
		{"no header", ok, `w.jsonl:1: workload: bad workload: header: unknown field "arrival_ms"; want {"format": "handoffcheck.workload/v1"} first`},
		{"header without format", `{"name":"x"}`, `w.jsonl:1: workload: bad workload: the header has no format`},
		{"other format", `{"format":"handoffcheck.workload/v2"}`, `w.jsonl:1: workload: bad workload: format "handoffcheck.workload/v2", want "handoffcheck.workload/v1"`},
		{"header unknown field", `{"format":"handoffcheck.workload/v1","seeds":1}`, `w.jsonl:1: workload: bad workload: header: unknown field "seeds"`},
		{"header seed", `{"format":"handoffcheck.workload/v1","seed":-1}`, `w.jsonl:1: workload: bad workload: header: seed -1, want an integer from 0 to 18446744073709551615`},
		{"header name null", `{"format":"handoffcheck.workload/v1","name":null}`, `w.jsonl:1: workload: bad workload: header: name is null, want a string of 1 to 128 bytes`},
		{"header generator", `{"format":"handoffcheck.workload/v1","generator":{"requests":0}}`, `w.jsonl:1: workload: bad workload: header: generator: requests 0, want 1 or more`},
		{"header generator unknown", `{"format":"handoffcheck.workload/v1","generator":{"rate":1}}`, `w.jsonl:1: workload: bad workload: header: generator: unknown field "rate"`},
		{"header generator dist", `{"format":"handoffcheck.workload/v1","generator":{"prompt":"normal:5"}}`, `w.jsonl:1: workload: bad workload: header: generator: distribution "normal:5": kind "normal", want fixed:V`},
		{"header twice", header + header, `w.jsonl:2: workload: bad workload: unknown field "format"; want a request such as`},
		{"blank line", header + ok + "\n" + ok, `w.jsonl:3: workload: bad workload: blank line; want one JSON object per line, without blank lines`},
		{"blank line of spaces", header + "  \t\n", `w.jsonl:2: workload: bad workload: blank line`},
		{"malformed", header + ok + `{"arrival_ms":1,`, `w.jsonl:3: workload: bad workload: the JSON ends early; want a request such as {"arrival_ms": 12.5`},
		{"malformed character", header + `{"arrival_ms":x}`, `w.jsonl:2: workload: bad workload: malformed JSON: invalid character 'x' looking for beginning of value; want a request such as`},
		{"not an object", header + `[1]`, `w.jsonl:2: workload: bad workload: the document: got JSON array, want an object`},
		{"trailing", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3}}`, `w.jsonl:2: workload: bad workload: "}" after the JSON object`},
		{"two objects", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3} {}`, `w.jsonl:2: workload: bad workload: "{}" after the JSON object`},
		{"unknown field", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3,"prompt":"hi"}`, `w.jsonl:2: workload: bad workload: unknown field "prompt"`},
		{"duplicate key", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3,"prompt_tokens":4}`, `w.jsonl:2: workload: bad workload: key "prompt_tokens" appears twice`},
		{"missing arrival", header + `{"prompt_tokens":2,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: no arrival_ms; want a number of milliseconds from 0 to 100000000000`},
		{"missing prompt", header + `{"arrival_ms":1,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: no prompt_tokens; want an integer from 1 to 1048576`},
		{"missing output", header + `{"arrival_ms":1,"prompt_tokens":3}`, `w.jsonl:2: workload: bad workload: no output_tokens`},
		{"prompt zero", header + ok + ok + ok + ok + ok + `{"arrival_ms":10,"prompt_tokens":0,"output_tokens":3}`, `w.jsonl:7: workload: bad workload: prompt_tokens 0, want 1 to 1048576`},
		{"prompt too long", header + `{"arrival_ms":10,"prompt_tokens":1048577,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: prompt_tokens 1048577, want 1 to 1048576`},
		{"prompt fraction", header + `{"arrival_ms":10,"prompt_tokens":2.5,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: prompt_tokens 2.5, want an integer from 1 to 1048576`},
		{"prompt exponent", header + `{"arrival_ms":10,"prompt_tokens":1e3,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: prompt_tokens 1e3, want an integer from 1 to 1048576`},
		{"prompt string", header + `{"arrival_ms":10,"prompt_tokens":"12","output_tokens":3}`, `w.jsonl:2: workload: bad workload: prompt_tokens "12", want an integer from 1 to 1048576`},
		{"prompt huge", header + `{"arrival_ms":10,"prompt_tokens":123456789012345678901234567890,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: prompt_tokens 123456789012345678901234567890, want an integer from 1 to 1048576`},
		{"long number shown short", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":` + strings.Repeat("9", 100) + `}`, `w.jsonl:2: workload: bad workload: output_tokens 9999999999999999999999999999999999999999..., want an integer`},
		{"output null", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":null}`, `w.jsonl:2: workload: bad workload: output_tokens is null, want an integer from 1 to 1048576`},
		{"output zero", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":0}`, `w.jsonl:2: workload: bad workload: output_tokens 0, want 1 to 1048576`},
		{"arrival negative", header + `{"arrival_ms":-1,"prompt_tokens":2,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: arrival_ms -1, want 0 to 100000000000`},
		{"arrival not finite", header + `{"arrival_ms":1e400,"prompt_tokens":2,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: arrival_ms 1e400 is not a finite number`},
		{"arrival too late", header + `{"arrival_ms":1e12,"prompt_tokens":2,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: arrival_ms 1e12, want 0 to 100000000000`},
		{"arrival string", header + `{"arrival_ms":"1","prompt_tokens":2,"output_tokens":3}`, `w.jsonl:2: workload: bad workload: arrival_ms "1", want a number of milliseconds`},
		{"arrival decreases", header + ok + `{"arrival_ms":9.5,"prompt_tokens":2,"output_tokens":3}`, `w.jsonl:3: workload: bad workload: arrival_ms 9.5 is before the previous request's arrival_ms 10; want arrival times that never decrease`},
		{"prefix above prompt", header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"prefix_group":"g","prefix_tokens":3}`, `w.jsonl:2: workload: bad workload: prefix_tokens 3, want 0 to prompt_tokens (2)`},
		{"prefix negative", header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"prefix_group":"g","prefix_tokens":-1}`, `w.jsonl:2: workload: bad workload: prefix_tokens -1, want 0 to 1048576`},
		{"prefix without group", header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"prefix_tokens":1}`, `w.jsonl:2: workload: bad workload: prefix_tokens 1 without a prefix_group`},
		{"group empty", header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"prefix_group":""}`, `w.jsonl:2: workload: bad workload: prefix_group is empty, want a string of 1 to 128 bytes (or no prefix_group)`},
		{"group number", header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"prefix_group":3}`, `w.jsonl:2: workload: bad workload: prefix_group 3, want a string of 1 to 128 bytes`},
		{"id too long", header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"id":"` + strings.Repeat("x", 129) + `"}`, `w.jsonl:2: workload: bad workload: id of 129 bytes, want at most 128`},
		{"cancel before arrival", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3,"cancel_ms":9.999}`, `w.jsonl:2: workload: bad workload: cancel_ms 9.999 is before arrival_ms 10; want a cancel at or after the arrival`},
		{"cancel negative", header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3,"cancel_ms":-0.5}`, `w.jsonl:2: workload: bad workload: cancel_ms -0.5, want 0 to 100000000000`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readAll("w.jsonl", []byte(tc.data))
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			if !errors.Is(err, ErrWorkload) {
				t.Errorf("%v does not wrap ErrWorkload", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s...", err, tc.want)
			}
		})
	}
}

// TestReader_DuplicateID: two requests under one id are refused at the
// second, naming the first's line; the writer refuses to write them, so it
// never writes what the reader refuses. Requests without an id stay
// anonymous however many there are.
func TestReader_DuplicateID(t *testing.T) {
	r := func(ms int, id string) string {
		l := `{"arrival_ms":` + itoaTest(ms) + `,"prompt_tokens":2,"output_tokens":3`
		if id != "" {
			l += `,"id":"` + id + `"`
		}
		return l + "}\n"
	}
	data := header + r(1, "a") + r(2, "") + r(3, "") + r(4, "b") + r(5, "a")
	_, reqs, err := readAll("w.jsonl", []byte(data))
	want := `w.jsonl:6: workload: bad workload: id "a" is already the id of the request on line 2; want each id once`
	if err == nil || err.Error() != want || !errors.Is(err, ErrWorkload) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if len(reqs) != 4 {
		t.Fatalf("read %d requests before the refusal, want 4", len(reqs))
	}
	var b bytes.Buffer
	w, err := NewWriter(&b, Header{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range reqs {
		if err := w.Write(q); err != nil {
			t.Fatal(err)
		}
	}
	err = w.Write(Request{ArrivalUS: 5000, PromptTokens: 2, OutputTokens: 3, ID: "b"})
	if err == nil || !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), `id "b" is already the id of request 3`) {
		t.Fatalf("the writer wrote a second request with id b: %v", err)
	}
}

func itoaTest(n int) string { return fmt.Sprint(n) }

// TestReader_LineLimit: a line of MaxLineBytes is read, a longer one is
// refused with its line, without reading it whole.
func TestReader_LineLimit(t *testing.T) {
	line := `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3}`
	fits := line[:len(line)-1] + strings.Repeat(" ", MaxLineBytes-len(line)) + "}"
	if len(fits) != MaxLineBytes {
		t.Fatalf("test line of %d bytes", len(fits))
	}
	for _, end := range []string{"", "\n", "\r\n"} {
		if _, reqs, err := readAll("w.jsonl", []byte(header+fits+end)); err != nil || len(reqs) != 1 {
			t.Fatalf("a line of %d bytes (ending %q): %v", MaxLineBytes, end, err)
		}
	}
	for _, long := range []string{fits + " ", strings.Repeat("x", 1<<20)} {
		_, _, err := readAll("w.jsonl", []byte(header+long+"\n"+line))
		want := "w.jsonl:2: workload: bad workload: the line is longer than 64 KiB, the most a workload line may hold"
		if err == nil || err.Error() != want || !errors.Is(err, ErrWorkload) {
			t.Errorf("a line of %d bytes: %v, want %s", len(long), err, want)
		}
	}
	_, _, err := readAll("w.jsonl", []byte(strings.Repeat(" ", MaxLineBytes+1)))
	if err == nil || !strings.HasPrefix(err.Error(), "w.jsonl:1: workload: bad workload: the line is longer than 64 KiB") {
		t.Errorf("a long header line: %v", err)
	}
}

// TestReader_CRLF: lines may end in CR LF.
func TestReader_CRLF(t *testing.T) {
	data := strings.ReplaceAll(example, "\n", "\r\n")
	_, reqs, err := readAll("w.jsonl", []byte(data))
	if err != nil || len(reqs) != 4 {
		t.Fatalf("%d requests, %v", len(reqs), err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReader_ReadErrorNamesLine(t *testing.T) {
	_, err := NewReader(io.MultiReader(strings.NewReader(header), failingReader{}), "w.jsonl")
	if err != nil {
		// The header is read line by line: the failure comes later.
		t.Fatalf("header: %v", err)
	}
	r, _ := NewReader(io.MultiReader(strings.NewReader(header), failingReader{}), "w.jsonl")
	_, err = r.Next()
	if err == nil || !errors.Is(err, ErrWorkload) || !strings.HasPrefix(err.Error(), "w.jsonl:2: ") || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("got %v", err)
	}
}

// TestWriter_RefusesWhatTheReaderRefuses: the writer never writes a file
// the reader would refuse.
func TestWriter_Refuses(t *testing.T) {
	ok := Request{ArrivalUS: 10, PromptTokens: 2, OutputTokens: 3}
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"before the previous", Request{ArrivalUS: 9, PromptTokens: 2, OutputTokens: 3}, "arrival_ms 0.009 is before the previous request's arrival_ms 0.01"},
		{"negative arrival", Request{ArrivalUS: -1, PromptTokens: 2, OutputTokens: 3}, "arrival_ms -0.001, want 0 to 100000000000"},
		{"late arrival", Request{ArrivalUS: MaxMicros + 1, PromptTokens: 2, OutputTokens: 3}, "arrival_ms 100000000000.001, want"},
		{"no prompt", Request{ArrivalUS: 10, OutputTokens: 3}, "prompt_tokens 0, want 1 to 1048576"},
		{"no output", Request{ArrivalUS: 10, PromptTokens: 3}, "output_tokens 0, want 1 to 1048576"},
		{"prefix without group", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, PrefixTokens: 1}, "prefix_tokens 1 without a prefix_group"},
		{"prefix above prompt", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, PrefixGroup: "g", PrefixTokens: 4}, "prefix_tokens 4, want 0 to prompt_tokens (3)"},
		{"cancel unflagged", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, CancelUS: 20}, "a cancel time (0.02 ms) without HasCancel"},
		{"cancel early", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, CancelUS: 5, HasCancel: true}, "cancel_ms 0.005 is before arrival_ms 0.01"},
		{"long id", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, ID: strings.Repeat("x", 200)}, "id of 200 bytes, want at most 128"},
		{"long group", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, PrefixGroup: strings.Repeat("x", 200)}, "prefix_group of 200 bytes, want at most 128"},
		{"id not UTF-8", Request{ArrivalUS: 10, PromptTokens: 3, OutputTokens: 1, ID: "r\xff"}, "prefix_group or id is not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			w, err := NewWriter(&b, Header{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(ok); err != nil {
				t.Fatal(err)
			}
			before := b.Len()
			err = w.Write(tc.req)
			if err == nil || !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), "request 1: "+tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if b.Len() != before {
				t.Errorf("a refused request was written")
			}
		})
	}
	if _, err := NewWriter(io.Discard, Header{Format: "handoffcheck.workload/v0"}); err == nil || !errors.Is(err, ErrWorkload) {
		t.Errorf("another format: %v", err)
	}
	if _, err := NewWriter(io.Discard, Header{Name: strings.Repeat("n", 129)}); err == nil || !errors.Is(err, ErrWorkload) {
		t.Errorf("a long name: %v", err)
	}
	if _, err := NewWriter(io.Discard, Header{Generator: &GenConfig{}}); err == nil || !errors.Is(err, ErrWorkload) {
		t.Errorf("a bad generator: %v", err)
	}
}

// genRequests draws a valid sequence of requests, with every optional
// field sometimes given and sometimes not, and times that are not whole
// milliseconds.
func genRequests(t *rapid.T) []Request {
	n := rapid.IntRange(0, 20).Draw(t, "n")
	var reqs []Request
	var at int64
	text := rapid.StringOfN(rapid.Rune(), 1, 30, MaxTextBytes)
	ids := map[string]bool{}
	for i := range n {
		at += rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, 5_000_000)).Draw(t, "gap")
		at = min(at, MaxMicros)
		if rapid.Bool().Draw(t, "far") {
			at = rapid.Int64Range(at, MaxMicros).Draw(t, "at")
		}
		r := Request{
			Index:        i,
			ArrivalUS:    at,
			PromptTokens: rapid.IntRange(1, MaxTokens).Draw(t, "prompt"),
			OutputTokens: rapid.IntRange(1, MaxTokens).Draw(t, "output"),
		}
		if rapid.Bool().Draw(t, "grouped") {
			r.PrefixGroup = text.Draw(t, "group")
			r.PrefixTokens = rapid.IntRange(0, r.PromptTokens).Draw(t, "prefix")
		}
		if rapid.Bool().Draw(t, "cancelled") {
			r.HasCancel = true
			r.CancelUS = rapid.Int64Range(at, MaxMicros).Draw(t, "cancel")
		}
		if rapid.Bool().Draw(t, "named") {
			// An id names one request: one drawn again stays unused.
			if id := text.Draw(t, "id"); !ids[id] {
				r.ID, ids[id] = id, true
			}
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// TestRoundTrip_Rapid: reading what the writer wrote gives the same
// header and requests, and writing them again gives the same bytes.
func TestRoundTrip_Rapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := Header{Format: FormatV1}
		if rapid.Bool().Draw(t, "named") {
			h.Name = rapid.StringOfN(rapid.Rune(), 1, 20, MaxTextBytes).Draw(t, "name")
		}
		if rapid.Bool().Draw(t, "seeded") {
			h.Seed, h.HasSeed = rapid.Uint64().Draw(t, "seed"), true
		}
		if rapid.Bool().Draw(t, "generated") {
			g := genConfig(t)
			g.Seed = h.Seed
			g = g.withDefaults()
			h.Generator = &g
		}
		reqs := genRequests(t)
		data := writeAll(t, h, reqs)
		gotH, got, err := readAll("w.jsonl", data)
		if err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		if d := cmp.Diff(h, gotH); d != "" {
			t.Fatalf("header (-want +got):\n%s", d)
		}
		if d := cmp.Diff(reqs, got); d != "" && len(reqs)+len(got) > 0 {
			t.Fatalf("requests (-want +got):\n%s\n%s", d, data)
		}
		if again := writeAll(t, gotH, got); !bytes.Equal(again, data) {
			t.Fatalf("written again:\n%s\nfirst:\n%s", again, data)
		}
	})
}

// TestMillis_RoundTrip: every whole microsecond up to MaxMicros is
// written as milliseconds and read back exactly.
func TestMillis_RoundTrip(t *testing.T) {
	for _, us := range []int64{0, 1, 999, 1000, 1001, 12345, 1<<53/1000 - 1, MaxMicros - 1, MaxMicros} {
		checkMillis(t, us)
	}
	rapid.Check(t, func(t *rapid.T) {
		checkMillis(t, rapid.Int64Range(0, MaxMicros).Draw(t, "us"))
	})
}

func checkMillis(t fataler, us int64) {
	s := FormatMillis(us)
	var ms float64
	if _, err := fmt.Sscan(s, &ms); err != nil {
		t.Fatalf("%d: %q: %v", us, s, err)
	}
	if back, ok := MillisToMicros(ms); !ok || back != us {
		t.Fatalf("%d us is written %q and read back as %d", us, s, back)
	}
	if strings.ContainsAny(s, "eE") {
		t.Fatalf("%d us is written %q, with an exponent", us, s)
	}
}
