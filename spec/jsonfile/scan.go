package jsonfile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Positions knows the line of every value of one JSON document, by path,
// so that a message can point at the entry it is about (the worker, the
// row, the key) instead of the array that holds it.
type Positions struct {
	lines map[string]int
}

// MaxPositions bounds the values whose lines Scan records: 1<<20 (about a
// million, some 100 MiB at most). Real inputs hold a few thousand values;
// past the bound a value's line is that of its nearest recorded ancestor,
// and duplicate keys are still refused.
const MaxPositions = 1 << 20

// Scan walks the first JSON value of data token by token. It records the
// line of every value (for a member of an object: the line of its key) and
// refuses an object that holds a key twice: encoding/json would keep the
// last silently, so the first value, which a reviewer may be reading, would
// be ignored. Errors read "file:line: sentinel: ...".
//
// Scan expects a document that already decoded (it does not judge
// numbers or literals again); a malformed one is still refused with its
// line, never panicked on. Only the first value is read.
func Scan(file string, data []byte, sentinel error) (*Positions, error) {
	return ScanAt(file, 1, data, sentinel)
}

// ScanAt is Scan of a value that starts on line first of file, such as
// one line of a JSON Lines file: its lines, and those of its errors, are
// lines of the file.
func ScanAt(file string, first int, data []byte, sentinel error) (*Positions, error) {
	s := &scanner{data: data, line: max(first, 1), pos: &Positions{lines: map[string]int{}}}
	if err := s.value("", true); err != nil {
		return nil, s.report(file, err, sentinel)
	}
	return s.pos, nil
}

// Line is the line where the value at path starts; path elements are
// object keys (string) and array indices (int). For a path absent from the
// document it is the line of the nearest present ancestor, and 1 for the
// document itself.
func (p *Positions) Line(path ...any) int {
	if p == nil {
		return 1
	}
	for n := len(path); n > 0; n-- {
		if l, ok := p.lines[pathKey(path[:n])]; ok {
			return l
		}
	}
	return 1
}

// Has reports whether the document holds a value at path.
func (p *Positions) Has(path ...any) bool {
	if p == nil {
		return false
	}
	_, ok := p.lines[pathKey(path)]
	return ok
}

func pathKey(path []any) string {
	var b strings.Builder
	for _, e := range path {
		appendElem(&b, e)
	}
	return b.String()
}

// appendElem encodes one path element so that a key "0" and an index 0
// stay apart.
func appendElem(b *strings.Builder, e any) {
	switch v := e.(type) {
	case string:
		b.WriteString("\x00k")
		b.WriteString(v)
	case int:
		b.WriteString("\x00i")
		b.WriteString(strconv.Itoa(v))
	default:
		b.WriteString("\x00?")
		fmt.Fprint(b, v)
	}
}

// scanner walks a document once, byte by byte, counting lines as it goes:
// one pass whatever the size of the input (up to MaxFileBytes), where a
// line count from the start for every value would be quadratic.
type scanner struct {
	data []byte
	i    int // the next byte
	line int // the line of data[i], in the file
	pos  *Positions
	// path is the path of the value being read, for messages only.
	path []any
}

// where names the value being read in messages: "the document",
// "workers[1]", "source.rows[3]".
func (s *scanner) where() string {
	if len(s.path) == 0 {
		return "the document"
	}
	var b strings.Builder
	for _, e := range s.path {
		switch v := e.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		}
	}
	return b.String()
}

// scanError is a defect found by the walk itself (a document that did not
// decode first): where it is and what was expected.
type scanError struct {
	line int
	what string
}

func (e *scanError) Error() string { return e.what }

// duplicateKey is the refusal of a key given twice in one object.
type duplicateKey struct {
	line, first int
	key, where  string
}

func (d *duplicateKey) Error() string {
	return fmt.Sprintf("key %q appears twice in %s", d.key, d.where)
}

// record notes the line of the value at key, up to MaxPositions values.
func (s *scanner) record(key string, line int) {
	if len(s.pos.lines) < MaxPositions {
		s.pos.lines[key] = line
	}
}

func (s *scanner) fail(what string) error { return &scanError{line: s.line, what: what} }

// space skips white space, counting newlines.
func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		s.i++
	}
}

// value reads one value whose path is key (encoded, s.path decoded);
// record says whether the value's own line is its position (array
// elements and the document) or its key's already is.
func (s *scanner) value(key string, record bool) error {
	s.space()
	if s.i >= len(s.data) {
		return s.fail("the JSON ends early")
	}
	if record {
		s.record(key, s.line)
	}
	switch s.data[s.i] {
	case '{':
		s.i++
		first := map[string]int{}
		s.space()
		if s.i < len(s.data) && s.data[s.i] == '}' {
			s.i++
			return nil
		}
		for {
			s.space()
			if s.i >= len(s.data) || s.data[s.i] != '"' {
				return s.fail("want a quoted key")
			}
			l := s.line
			k, err := s.str()
			if err != nil {
				return err
			}
			if prev, dup := first[k]; dup {
				return &duplicateKey{line: l, first: prev, key: k, where: s.where()}
			}
			first[k] = l
			s.space()
			if s.i >= len(s.data) || s.data[s.i] != ':' {
				return s.fail("want ':' after a key")
			}
			s.i++
			var b strings.Builder
			b.WriteString(key)
			appendElem(&b, k)
			s.record(b.String(), l)
			s.path = append(s.path, k)
			err = s.value(b.String(), false)
			s.path = s.path[:len(s.path)-1]
			if err != nil {
				return err
			}
			if done, err := s.next('}'); done || err != nil {
				return err
			}
		}
	case '[':
		s.i++
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ']' {
			s.i++
			return nil
		}
		for n := 0; ; n++ {
			var b strings.Builder
			b.WriteString(key)
			appendElem(&b, n)
			s.path = append(s.path, n)
			err := s.value(b.String(), true)
			s.path = s.path[:len(s.path)-1]
			if err != nil {
				return err
			}
			if done, err := s.next(']'); done || err != nil {
				return err
			}
		}
	case '"':
		_, err := s.str()
		return err
	}
	// A number, true, false or null: the decoder has judged it already.
	start := s.i
	for s.i < len(s.data) && !strings.ContainsRune(",]} \t\r\n", rune(s.data[s.i])) {
		s.i++
	}
	if s.i == start {
		return s.fail(fmt.Sprintf("unexpected %q", s.data[s.i]))
	}
	return nil
}

// next reads what follows a member or element: a comma (more follow) or
// the closing delimiter (done).
func (s *scanner) next(closing byte) (done bool, err error) {
	s.space()
	if s.i >= len(s.data) {
		return false, s.fail("the JSON ends early")
	}
	switch s.data[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return false, s.fail(fmt.Sprintf("want ',' or %q, got %q", closing, s.data[s.i]))
}

// str reads a quoted string and returns its value.
func (s *scanner) str() (string, error) {
	start := s.i
	s.i++ // the opening quote
	escaped := false
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '\\':
			escaped = true
			s.i++
		case '"':
			s.i++
			raw := s.data[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			// Keys compare by value: "a" and "\u0061" are one key.
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", s.fail("malformed string")
			}
			return v, nil
		case '\n':
			s.line++
		}
		s.i++
	}
	return "", s.fail("the JSON ends early")
}

func (s *scanner) report(file string, err error, sentinel error) error {
	if d, ok := err.(*duplicateKey); ok {
		in := "the top-level object"
		if d.where != "the document" {
			in = d.where
		}
		return fmt.Errorf("%s:%d: %w: key %q appears twice in %s (first on line %d); want each key once",
			file, d.line, sentinel, d.key, in, d.first)
	}
	line := s.line
	if se, ok := err.(*scanError); ok {
		line = se.line
	}
	return fmt.Errorf("%s:%d: %w: malformed JSON: %s", file, line, sentinel, err)
}
