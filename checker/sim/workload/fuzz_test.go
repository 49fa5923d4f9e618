package workload

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzParseWorkload: no input panics the reader; every refusal names the
// file and a line and wraps ErrWorkload; and what is read, written again
// in canonical form, reads back the same.
func FuzzParseWorkload(f *testing.F) {
	f.Add(DefaultJSONL())
	f.Add([]byte(example))
	f.Add([]byte(exampleCanonical))
	f.Add([]byte(strings.ReplaceAll(example, "\n", "\r\n")))
	f.Add([]byte(header))
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Add([]byte(`{"format":"handoffcheck.workload/v1","generator":{"requests":3,"rate_per_sec":1,"arrival":"bursty","prompt":"fixed:3","output":"uniform:1-9"}}`))
	f.Add([]byte(header + `{"arrival_ms":10,"prompt_tokens":2,"output_tokens":3}` + "\n" + `{"arrival_ms":9,"prompt_tokens":2,"output_tokens":3}`))
	f.Add([]byte(header + `{"arrival_ms":1e400,"prompt_tokens":2.5,"output_tokens":"3"}`))
	f.Add([]byte(header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"prefix_tokens":1}`))
	f.Add([]byte(header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"cancel_ms":0.5}`))
	f.Add([]byte(header + `{"arrival_ms":1,"prompt_tokens":2,"prompt_tokens":2,"output_tokens":3}`))
	f.Add([]byte(header + `{"arrival_ms":null,"prompt_tokens":2,"output_tokens":3}}`))
	f.Add([]byte(header + "\n"))
	f.Add([]byte(header + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"id":"a"}` + "\n" + `{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3,"id":"a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, reqs, err := readAll("fuzz.jsonl", data)
		if err != nil {
			if !errors.Is(err, ErrWorkload) || !strings.HasPrefix(err.Error(), "fuzz.jsonl:") {
				t.Fatalf("error does not name the file and line, or is not an ErrWorkload: %v", err)
			}
			if len(reqs) == 0 {
				return
			}
		}
		// What was read before any error is a valid workload prefix.
		var b bytes.Buffer
		w, werr := NewWriter(&b, h)
		if werr != nil {
			t.Fatalf("header read from the input is refused by the writer: %v", werr)
		}
		for _, r := range reqs {
			if werr := w.Write(r); werr != nil {
				t.Fatalf("request read from the input is refused by the writer: %v", werr)
			}
		}
		h2, back, rerr := readAll("again.jsonl", b.Bytes())
		if rerr != nil {
			t.Fatalf("canonical form refused: %v\n%s", rerr, b.Bytes())
		}
		if len(back) != len(reqs) || h2.Name != h.Name || h2.Seed != h.Seed || h2.HasSeed != h.HasSeed ||
			(h2.Generator == nil) != (h.Generator == nil) || (h.Generator != nil && *h2.Generator != *h.Generator) {
			t.Fatalf("canonical form reads back otherwise:\n%s", b.Bytes())
		}
		for i := range back {
			if back[i] != reqs[i] {
				t.Fatalf("request %d reads back as %+v, was %+v", i, back[i], reqs[i])
			}
		}
		var again bytes.Buffer
		w2, _ := NewWriter(&again, h2)
		for _, r := range back {
			_ = w2.Write(r)
		}
		if !bytes.Equal(again.Bytes(), b.Bytes()) {
			t.Fatalf("canonical form is not stable:\n%s\n%s", b.Bytes(), again.Bytes())
		}
	})
}
