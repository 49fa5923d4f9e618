package model

import "fmt"

// Tokens counts prompt or output tokens.
type Tokens int32

// Blocks counts KV blocks (pages) of a worker's pool. A grouped profile
// counts blocks per cache group; a linear one counts tokens. The two are
// distinct types so that a block count can never be added to a token count
// by accident (docs/lifecycle.md section 6: units are part of the type).
type Blocks int32

// Bytes counts transfer payload bytes.
type Bytes int64

// Generation is a worker process incarnation. A restart increases it, and a
// fact addressed to an older generation is stale (AttemptIsolation).
type Generation uint8

func (t Tokens) String() string { return fmt.Sprintf("%dtok", int64(t)) }
func (b Blocks) String() string { return fmt.Sprintf("%dblk", int64(b)) }
func (b Bytes) String() string  { return fmt.Sprintf("%dB", int64(b)) }

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// floorDiv is ⌊a/b⌋ for b > 0, rounding towards −∞ for negative a.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// BlocksFor is the number of blocks of size bs that hold n tokens, a partly
// filled last block included.
func BlocksFor(n, bs Tokens) Blocks { return Blocks(ceilDiv(int64(n), int64(bs))) }

// WholeBlocks is the number of completely filled blocks of size bs in n
// tokens: the part of a prefix hit that can be reused.
func WholeBlocks(n, bs Tokens) Blocks { return Blocks(floorDiv(int64(n), int64(bs))) }
