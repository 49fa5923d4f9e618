package obslog

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// fastLine reads a fact line of the plain form every writer writes (one
// flat object, string values without escapes, integers) without the
// reflection of encoding/json: a long log is mostly that. It reports
// false for anything else (escapes, numbers with a fraction, unknown or
// repeated keys, wrong types, trailing text), and the reader then decodes
// the line the slow, exact way, with its exact error.
//
// The strings it gives alias text, without a copy: they are read before
// the next line is (Reader.fact), and what a Fact keeps of them is copied
// there (Reader.intern).
func fastLine(text []byte, l *factLine, sv *[8]string, iv *[10]int64) bool {
	*l = factLine{}
	// The cursor i is a local the helpers take and give back (not one
	// closures share): it stays in a register.
	n := len(text)
	i := skipWS(text, 0)
	if i >= n || text[i] != '{' {
		return false
	}
	i = skipWS(text, i+1)
	if i < n && text[i] == '}' {
		return skipWS(text, i+1) == n
	}
	si, ii := 0, 0
	// A writer writes the keys proc, gen, attempt and kind first, in that
	// order and without blanks: those are compared whole, not read, and
	// the loop below reads what follows (or, from where the line leaves
	// that form, all of it).
	if lit(text, i, `"proc":`) {
		v, j, ok := scanStr(text, i+len(`"proc":`))
		if !ok {
			return false
		}
		sv[si], l.Proc, si, i = v, &sv[si], si+1, j
		if lit(text, i, `,"gen":`) {
			v, j, ok := scanNum(text, i+len(`,"gen":`))
			if !ok {
				return false
			}
			iv[ii], l.Gen, ii, i = v, &iv[ii], ii+1, j
			if lit(text, i, `,"attempt":`) {
				v, j, ok := scanStr(text, i+len(`,"attempt":`))
				if !ok {
					return false
				}
				sv[si], l.Attempt, si, i = v, &sv[si], si+1, j
				if lit(text, i, `,"kind":`) {
					v, j, ok := scanStr(text, i+len(`,"kind":`))
					if !ok {
						return false
					}
					sv[si], l.Kind, si, i = v, &sv[si], si+1, j
				}
			}
		}
		// After a value: the next key, or the end.
		i = skipWS(text, i)
		if i >= n {
			return false
		}
		if text[i] == '}' {
			return skipWS(text, i+1) == n
		}
		if text[i] != ',' {
			return false
		}
		i++
	}
	for {
		i = skipWS(text, i)
		var sp **string
		var ip **int64
		// The time stamp, last on every line a writer writes, is
		// compared whole too.
		if lit(text, i, `"t_us":`) {
			ip, i = &l.TUS, skipWS(text, i+len(`"t_us":`))
		} else if s, p, j := knownKey(text, i, l); s != nil || p != nil {
			// A key a writer writes, its colon right after it: found by
			// its first letter and compared whole, not read and then
			// looked for among the names.
			sp, ip, i = s, p, skipWS(text, j)
		} else {
			key, j, ok := scanStr(text, i)
			if !ok {
				return false
			}
			i = skipWS(text, j)
			if i >= n || text[i] != ':' {
				return false
			}
			i = skipWS(text, i+1)
			switch key {
			case "proc":
				sp = &l.Proc
			case "attempt":
				sp = &l.Attempt
			case "kind":
				sp = &l.Kind
			case "stage":
				sp = &l.Stage
			case "to":
				sp = &l.To
			case "outcome":
				sp = &l.Outcome
			case "timer":
				sp = &l.Timer
			case "canonical":
				sp = &l.Canonical
			case "gen":
				ip = &l.Gen
			case "t_us":
				ip = &l.TUS
			case "blocks":
				ip = &l.Blocks
			case "pages":
				ip = &l.Pages
			case "slot":
				ip = &l.Slot
			case "headroom":
				ip = &l.Headroom
			case "tokens":
				ip = &l.Tokens
			case "prompt_tokens":
				ip = &l.PromptTokens
			case "prefix_hit_tokens":
				ip = &l.PrefixHitTokens
			case "adopted_blocks":
				ip = &l.AdoptedBlocks
			default:
				return false
			}
		}
		if sp != nil {
			v, j, ok := scanStr(text, i)
			if !ok || *sp != nil || si == len(sv) {
				return false
			}
			i = j
			sv[si] = v
			*sp = &sv[si]
			si++
		} else {
			v, j, ok := scanNum(text, i)
			if !ok || *ip != nil || ii == len(iv) {
				return false
			}
			i = j
			iv[ii] = v
			*ip = &iv[ii]
			ii++
		}
		i = skipWS(text, i)
		if i >= n {
			return false
		}
		if text[i] == ',' {
			i++
			continue
		}
		if text[i] != '}' {
			return false
		}
		return skipWS(text, i+1) == n
	}
}

// knownKey is the field of l that the key at i names, and where its
// colon ends, when the key is written as a writer writes it (a known
// name in quotes, the colon right after); nil and nil otherwise, and the
// key is read the general way (blanks before the colon, an unknown name).
func knownKey(text []byte, i int, l *factLine) (*(*string), *(*int64), int) {
	if i+2 >= len(text) || text[i] != '"' {
		return nil, nil, i
	}
	key := func(s string) bool { return lit(text, i, s) }
	switch text[i+1] {
	case 'a':
		switch {
		case key(`"attempt":`):
			return &l.Attempt, nil, i + len(`"attempt":`)
		case key(`"adopted_blocks":`):
			return nil, &l.AdoptedBlocks, i + len(`"adopted_blocks":`)
		}
	case 'b':
		if key(`"blocks":`) {
			return nil, &l.Blocks, i + len(`"blocks":`)
		}
	case 'c':
		if key(`"canonical":`) {
			return &l.Canonical, nil, i + len(`"canonical":`)
		}
	case 'g':
		if key(`"gen":`) {
			return nil, &l.Gen, i + len(`"gen":`)
		}
	case 'h':
		if key(`"headroom":`) {
			return nil, &l.Headroom, i + len(`"headroom":`)
		}
	case 'k':
		if key(`"kind":`) {
			return &l.Kind, nil, i + len(`"kind":`)
		}
	case 'o':
		if key(`"outcome":`) {
			return &l.Outcome, nil, i + len(`"outcome":`)
		}
	case 'p':
		switch {
		case key(`"pages":`):
			return nil, &l.Pages, i + len(`"pages":`)
		case key(`"prompt_tokens":`):
			return nil, &l.PromptTokens, i + len(`"prompt_tokens":`)
		case key(`"prefix_hit_tokens":`):
			return nil, &l.PrefixHitTokens, i + len(`"prefix_hit_tokens":`)
		case key(`"proc":`):
			return &l.Proc, nil, i + len(`"proc":`)
		}
	case 's':
		switch {
		case key(`"stage":`):
			return &l.Stage, nil, i + len(`"stage":`)
		case key(`"slot":`):
			return nil, &l.Slot, i + len(`"slot":`)
		}
	case 't':
		switch {
		case key(`"to":`):
			return &l.To, nil, i + len(`"to":`)
		case key(`"tokens":`):
			return nil, &l.Tokens, i + len(`"tokens":`)
		case key(`"timer":`):
			return &l.Timer, nil, i + len(`"timer":`)
		}
	}
	return nil, nil, i
}

// lit reports whether text holds s at i.
func lit(text []byte, i int, s string) bool {
	return i+len(s) <= len(text) && string(text[i:i+len(s)]) == s
}

// skipWS is where the blanks (spaces, tabs, carriage returns) from i end.
func skipWS(text []byte, i int) int {
	// Most calls find no blank: one comparison says so.
	for i < len(text) && text[i] <= ' ' && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
		i++
	}
	return i
}

// scanStr reads the plain string at i (no escapes, ASCII, no control
// characters), and where it ends; false for anything else.
func scanStr(text []byte, i int) (string, int, bool) {
	n := len(text)
	if i >= n || text[i] != '"' {
		return "", i, false
	}
	i++
	start := i
	// Eight bytes at a time: the first byte of them that ends the string
	// or needs a look (special8) is where the string ends, if it is a
	// quote, or where the fast path gives up. Most strings end in their
	// first eight bytes, without a loop over the bytes.
	for i+8 <= n {
		m := special8(binary.LittleEndian.Uint64(text[i:]))
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		if text[i] != '"' {
			return "", i, false
		}
		return unsafe.String(unsafe.SliceData(text[start:]), i-start), i + 1, true
	}
	for ; i < n; i++ {
		c := text[i]
		if c == '"' {
			return unsafe.String(unsafe.SliceData(text[start:]), i-start), i + 1, true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return "", i, false
		}
	}
	return "", i, false
}

// scanNum reads the integer at i (an optional minus, then at most 18
// digits, no leading zero, no fraction or exponent), and where it ends;
// false for anything else.
func scanNum(text []byte, i int) (int64, int, bool) {
	n := len(text)
	neg := false
	if i < n && text[i] == '-' {
		neg = true
		i++
	}
	start := i
	// At most 18 digits are read; a digit after them is refused below,
	// as a fraction or an exponent is: the loop checks one bound.
	end := min(n, start+18)
	var v int64
	for i < end {
		c := text[i] - '0'
		if c > 9 {
			break
		}
		v = v*10 + int64(c)
		i++
	}
	if i == start || (text[start] == '0' && i-start > 1) {
		return 0, i, false
	}
	if i < n {
		if c := text[i]; c-'0' <= 9 || c == '.' || c == 'e' || c == 'E' {
			return 0, i, false
		}
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// special8 marks, by the top bit of its byte, each of the eight bytes of
// x (little-endian) that is a quote, a backslash, a control character or
// outside ASCII, exactly up to the first one so marked: each test is the
// has-a-zero-byte test (v-0x01…)&^v&0x80…, whose borrow can mark a byte
// that is not one only above a byte that is, so the lowest mark is always
// the first such byte (bytes outside ASCII are marked by their own top
// bit, and masked out of the other tests). Zero: none of them is one.
func special8(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return ((q-lo)&^q | (b-lo)&^b | (x-lo*0x20)&^x | x) & hi
}

// plain8 reports whether none of the eight bytes of x is a quote, a
// backslash, a control character or outside ASCII.
func plain8(x uint64) bool { return special8(x) == 0 }
