package obslog

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
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
