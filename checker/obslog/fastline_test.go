package obslog

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plainByte is plain8's question for one byte.
func plainByte(c byte) bool { return c != '"' && c != '\\' && c >= 0x20 && c < 0x80 }

// TestPlain8 holds plain8, and the first byte special8 marks, to the
// byte-by-byte answer: every byte value at every place among plain bytes,
// and random words (mostly plain ones, where a miss would hide).
func TestPlain8(t *testing.T) {
	check := func(w [8]byte) {
		want := true
		first := 8 // the first byte that is not plain
		for k, c := range w {
			want = want && plainByte(c)
			if !plainByte(c) && first == 8 {
				first = k
			}
		}
		x := binary.LittleEndian.Uint64(w[:])
		if got := plain8(x); got != want {
			t.Fatalf("plain8(%q) = %v, want %v", w[:], got, want)
		}
		// special8's lowest mark is that byte: scanStr ends a string there.
		if m := special8(x); m != 0 && bits.TrailingZeros64(m)>>3 != first {
			t.Fatalf("special8(%q) marks byte %d first, want %d", w[:], bits.TrailingZeros64(m)>>3, first)
		}
	}
	for v := 0; v < 256; v++ {
		for at := 0; at < 8; at++ {
			w := [8]byte{'a', 'Z', '0', '-', ' ', '~', '!', '#'}
			w[at] = byte(v)
			check(w)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var w [8]byte
		for k := range w {
			w[k] = byte(0x20 + r.IntN(0x60))
			if r.IntN(16) == 0 {
				w[k] = byte(r.IntN(256))
			}
		}
		check(w)
	}
}

// everyKey is a line of every key a fact line may hold, each with its own
// value, in the writer's form: the fast path finds each key by its first
// letter (knownKey), and a key sent to another's field shows here.
const everyKey = `{"proc":"p","gen":1,"attempt":"a","kind":"k","stage":"s","to":"t","outcome":"o","timer":"x","canonical":"c","blocks":2,"pages":3,"slot":4,"headroom":5,"tokens":6,"prompt_tokens":7,"prefix_hit_tokens":8,"adopted_blocks":9,"t_us":10}`

// The fast path takes a line of every key, in the writer's form and with
// blanks around each colon (the general reading), and reads it as the
// decoder does.
func TestFastLine_EveryKey(t *testing.T) {
	spaced := strings.ReplaceAll(strings.ReplaceAll(everyKey, `":`, `" : `), `,"`, ` , "`)
	for _, line := range []string{everyKey, spaced} {
		var fast, slow factLine
		var sv [8]string
		var iv [10]int64
		if !fastLine([]byte(line), &fast, &sv, &iv) {
			t.Fatalf("the fast path refuses %s", line)
		}
		if err := decodeLine([]byte(line), &slow); err != nil {
			t.Fatal(err)
		}
		if !sameLine(&slow, &fast) {
			t.Fatalf("the fast path and the decoder disagree on %s:\n%s", line, cmp.Diff(slow, fast))
		}
	}
}

// FuzzFastLine: a line the fast path takes, encoding/json (the exact
// decoder) takes too, and reads the same; lines of the writer's form are
// mutated from, where the fast path's literal keys end at every byte.
func FuzzFastLine(f *testing.F) {
	for _, line := range []string{
		everyKey,
		`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":3582,"prompt_tokens":3582,"t_us":4121}`,
		`{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":4716}`,
		`{"proc":"decode-1","gen":3,"attempt":"r246","kind":"activated","adopted_blocks":32,"canonical":"r18","t_us":788333}`,
		`{"proc":"decode-0","gen":0,"attempt":"a","kind":"deadline_expired","timer":"bootstrap"}`,
		`{"proc":"p0","gen":0,"kind":"worker_restarted"}`,
		`{"proc":"p0"}`,
		`{"proc":"p0","gen":0}`,
		`{"proc":"p0","gen":0,"attempt":"a"}`,
		`{"proc":"p0","proc":"p1","gen":0,"attempt":"a","kind":"pinned","blocks":3}`,
		`{"proc":"p0","gen":0,"attempt":"a","kind":"pinned","kind":"stored","blocks":3}`,
		`{"proc":"p0","gen":-0,"attempt":"a","kind":"pinned","blocks":3}`,
		`{"proc":"p0","gen":01,"attempt":"a","kind":"pinned","blocks":3}`,
		`{"proc":"p0","gen":0,"attempt":"a\u00e9","kind":"pinned","blocks":3.0}`,
		`{ "proc" : "p0" , "gen" : 0 , "attempt" : "a" , "kind" : "pinned" }`,
		`{"kind":"pinned","proc":"p0","gen":0,"attempt":"a","blocks":3}`,
		`{"PROC":"p0","gen":0,"attempt":"a","kind":"pinned"}`,
		`{"proc":"p0","gen":0,"attempt":"a","kind":"pinned"} x`,
		`{}`,
	} {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast, slow factLine
		var sv [8]string
		var iv [10]int64
		if !fastLine(line, &fast, &sv, &iv) {
			return
		}
		if err := decodeLine(line, &slow); err != nil {
			t.Fatalf("the fast path takes %q, the decoder refuses it: %v", line, err)
		}
		if !sameLine(&slow, &fast) {
			t.Fatalf("the fast path and the decoder disagree on %q:\n%s", line, cmp.Diff(slow, fast))
		}
	})
}

// TestScanNum holds scanNum to its grammar (an optional minus, then 1 to
// 18 digits without a leading zero, and no fraction or exponent after),
// read by strconv, at every length to 20 digits and with each kind of
// text after.
func TestScanNum(t *testing.T) {
	var cases []string
	for k := 1; k <= 20; k++ {
		digits := strings.Repeat("9", k)
		for _, s := range []string{digits, "1" + strings.Repeat("0", k-1), "0" + digits, "-" + digits} {
			for _, after := range []string{"", ",", "}", " ", ".5", "e3", "E3", "x"} {
				cases = append(cases, s+after)
			}
		}
	}
	cases = append(cases, "", "-", "0", "-0", "00", "-01", "0.", "7")
	for _, c := range cases {
		v, end, ok := scanNum([]byte(c), 0)
		num := strings.TrimLeft(c, "-")
		digits := len(num) - len(strings.TrimLeft(num, "0123456789"))
		rest := num[digits:]
		want := digits >= 1 && digits <= 18 && (num[0] != '0' || digits == 1) &&
			!strings.HasPrefix(rest, ".") && !strings.HasPrefix(rest, "e") && !strings.HasPrefix(rest, "E")
		if ok != want {
			t.Errorf("scanNum(%q) ok = %v, want %v", c, ok, want)
			continue
		}
		if !ok {
			continue
		}
		lit := c[:len(c)-len(rest)]
		w, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || v != w || end != len(lit) {
			t.Errorf("scanNum(%q) = %d, %d; want %d, %d", c, v, end, w, len(lit))
		}
	}
}
