package obslog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const fuzzHeader = `{"schema":"handoffcheck.log/v1","policy":"source-first","engine":"vllm","processes":[{"name":"router","role":"router"},{"name":"p0","role":"prefill"},{"name":"d0","role":"decode"}]}` + "\n"

// FuzzParseLog: no input panics the reader; every refusal names the file
// and a line and wraps ErrLog; a fact the fast path reads, the exact
// decoder reads the same; and what is read, written again, reads back the
// same.
func FuzzParseLog(f *testing.F) {
	for _, p := range examples(f) {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Add([]byte(fuzzHeader + `{"proc":"p0","gen":0,"attempt":"a","kind":"pinned","blocks":3}` + "\n"))
	f.Add([]byte(fuzzHeader + `{"proc":"p0","gen":0,"attempt":"a\u00e9","kind":"pinned","blocks":3.0}` + "\n"))
	f.Add([]byte(fuzzHeader + `{"proc":"p0","gen":0,"attempt":"a","kind":"pinned","blocks":3,"blocks":4}` + "\n"))
	f.Add([]byte(fuzzHeader + `{"proc":"router","gen":0,"attempt":"a","kind":"routed","stage":"decode","to":"d0","prefix_hit_tokens":1}`))
	f.Add([]byte(strings.Replace(fuzzHeader, `"engine":"vllm",`, `"engine":"vllm","records":"milestones",`, 1) + `{"proc":"p0","gen":0,"attempt":"a","kind":"pinned","blocks":3}` + "\n"))
	f.Add([]byte(strings.Replace(fuzzHeader, `"role":"decode"}`, `"role":"decode","records":"all"}`, 1)))
	f.Add([]byte(strings.Replace(fuzzHeader, `]}`, `],"config":{"policy":"destination-first","engine":"vllm"}}`, 1)))
	f.Add([]byte(strings.Replace(fuzzHeader, `]}`, `],"config":{"policy":"source-first","engine":"trtllm"}}`, 1)))
	// The legacy path's header, with a configuration that agrees and one
	// that does not.
	f.Add([]byte(strings.Replace(fuzzHeader, `"source-first"`, `"disabled"`, 1) + `{"proc":"p0","gen":0,"attempt":"a","kind":"request_accepted"}` + "\n"))
	f.Add([]byte(strings.Replace(strings.Replace(fuzzHeader, `"source-first"`, `"disabled"`, 1), `]}`, `],"config":{"policy":"source-first"}}`, 1)))
	// An adoption at activation, one with a canonical id to escape, and
	// one on a kind that carries none.
	f.Add([]byte(fuzzHeader + `{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":32,"canonical":"a"}` + "\n"))
	f.Add([]byte(fuzzHeader + `{"proc":"d0","gen":0,"attempt":"b","kind":"activated","adopted_blocks":2,"canonical":"a\u00e9\"x"}` + "\n"))
	f.Add([]byte(fuzzHeader + `{"proc":"d0","gen":0,"attempt":"b","kind":"decode_released","blocks":3,"adopted_blocks":2,"canonical":"a"}` + "\n"))
	f.Add([]byte(fuzzHeader + "\n"))
	f.Add([]byte(""))
	f.Fuzz(checkLog)
}

var where = regexp.MustCompile(`^fuzz\.jsonl:[0-9]+: `)

func checkLog(t *testing.T, data []byte) {
	if len(data) > 64<<10 {
		return // longer inputs test nothing shorter ones do not, and slowly
	}
	{
		r, err := NewReader(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			if !errors.Is(err, ErrLog) || !where.MatchString(err.Error()) {
				t.Fatalf("the error does not name the file and line, or is not an ErrLog: %v", err)
			}
			return
		}
		var facts []Fact
		for {
			f, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, ErrLog) || !where.MatchString(err.Error()) {
					t.Fatalf("the error does not name the file and line, or is not an ErrLog: %v", err)
				}
				break
			}
			facts = append(facts, f)
		}
		// The fast path agrees with the exact decoder on every line it
		// takes, and plainFact with the general way.
		for _, line := range strings.Split(string(data), "\n") {
			plainAgrees(t, r, []byte(line))
			var fast, slow factLine
			var sv [8]string
			var iv [10]int64
			if fastLine([]byte(line), &fast, &sv, &iv) {
				if err := decodeLine([]byte(line), &slow); err != nil {
					t.Fatalf("the fast path takes %q, the decoder refuses it: %v", line, err)
				}
				if !sameLine(&slow, &fast) {
					t.Fatalf("the fast path and the decoder disagree on %q:\n%s", line, cmp.Diff(slow, fast))
				}
			}
		}
		// Written again, the facts read back the same.
		var b bytes.Buffer
		w, err := NewWriter(&b, r.Header())
		if err != nil {
			t.Fatal(err)
		}
		for i := range facts {
			w.Write(&facts[i])
		}
		w.Flush()
		r2, err := NewReader(&b, "again.jsonl")
		if err != nil {
			t.Fatalf("what was written does not read back: %v\n%s", err, b.String())
		}
		for i := range facts {
			g, err := r2.Next()
			if err != nil {
				t.Fatalf("fact %d does not read back: %v", i, err)
			}
			want := facts[i]
			want.File, want.Line, g.File, g.Line, want.Seq, g.Seq = "", 0, "", 0, 0, 0
			if want != g {
				t.Fatalf("fact %d reads back otherwise (-want +got):\n%s", i, cmp.Diff(want, g))
			}
		}
	}
}

func examples(f *testing.F) []string {
	var out []string
	for _, dir := range []string{"valid", "invalid"} {
		ps, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "logs", dir, "*.jsonl"))
		out = append(out, ps...)
	}
	if len(out) == 0 {
		f.Fatal("no example logs in testdata/logs")
	}
	return out
}

func sameLine(a, b *factLine) bool {
	str := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	num := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return str(a.Proc, b.Proc) && num(a.Gen, b.Gen) && str(a.Attempt, b.Attempt) && str(a.Kind, b.Kind) && num(a.TUS, b.TUS) &&
		str(a.Stage, b.Stage) && str(a.To, b.To) && num(a.Blocks, b.Blocks) && num(a.Pages, b.Pages) && num(a.Slot, b.Slot) &&
		num(a.Headroom, b.Headroom) && num(a.Tokens, b.Tokens) && str(a.Outcome, b.Outcome) && str(a.Timer, b.Timer) &&
		num(a.PromptTokens, b.PromptTokens) && num(a.PrefixHitTokens, b.PrefixHitTokens) &&
		num(a.AdoptedBlocks, b.AdoptedBlocks) && str(a.Canonical, b.Canonical)
}
