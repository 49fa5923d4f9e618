package obslog

import (
	"encoding/binary"
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
	i, n := 0, len(text)
	ws := func() {
		for i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
			i++
		}
	}
	str := func() (string, bool) {
		if i >= n || text[i] != '"' {
			return "", false
		}
		i++
		start := i
		// Eight bytes at a time while none of them ends the string or
		// needs a look (plain): most keys and values are plain
		// throughout, and the byte loop below settles the rest.
		for i+8 <= n && plain8(binary.LittleEndian.Uint64(text[i:])) {
			i += 8
		}
		for i < n && text[i] != '"' {
			if c := text[i]; c == '\\' || c < 0x20 || c >= 0x80 {
				return "", false
			}
			i++
		}
		if i >= n {
			return "", false
		}
		s := unsafe.String(unsafe.SliceData(text[start:i]), i-start)
		i++
		return s, true
	}
	num := func() (int64, bool) {
		neg := false
		if i < n && text[i] == '-' {
			neg = true
			i++
		}
		start := i
		var v int64
		for i < n && text[i] >= '0' && text[i] <= '9' {
			if i-start >= 18 {
				return 0, false
			}
			v = v*10 + int64(text[i]-'0')
			i++
		}
		if i == start || (text[start] == '0' && i-start > 1) {
			return 0, false
		}
		if i < n && (text[i] == '.' || text[i] == 'e' || text[i] == 'E') {
			return 0, false
		}
		if neg {
			v = -v
		}
		return v, true
	}
	ws()
	if i >= n || text[i] != '{' {
		return false
	}
	i++
	ws()
	if i < n && text[i] == '}' {
		i++
		ws()
		return i == n
	}
	si, ii := 0, 0
	for {
		ws()
		key, ok := str()
		if !ok {
			return false
		}
		ws()
		if i >= n || text[i] != ':' {
			return false
		}
		i++
		ws()
		var sp **string
		var ip **int64
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
		if sp != nil {
			v, ok := str()
			if !ok || *sp != nil || si == len(sv) {
				return false
			}
			sv[si] = v
			*sp = &sv[si]
			si++
		} else {
			v, ok := num()
			if !ok || *ip != nil || ii == len(iv) {
				return false
			}
			iv[ii] = v
			*ip = &iv[ii]
			ii++
		}
		ws()
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
		i++
		ws()
		return i == n
	}
}

// plain8 reports whether none of the eight bytes of x is a quote, a
// backslash, a control character or outside ASCII. Each test is the
// has-a-zero-byte test (v-0x01…)&^v&0x80…, which never misses one (it may
// see one that is not there, and then the bytes are looked at one by one).
func plain8(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return ((q-lo)&^q|(b-lo)&^b|(x-lo*0x20)&^x|x)&hi == 0
}
