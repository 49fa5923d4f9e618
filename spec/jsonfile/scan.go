package jsonfile

import (
	"bytes"
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

// Scan walks the first JSON value of data token by token. It records the
// line of every value (for a member of an object: the line of its key) and
// refuses an object that holds a key twice: encoding/json would keep the
// last silently, so the first value, which a reviewer may be reading, would
// be ignored. Errors read "file:line: sentinel: ...".
//
// Scan expects a document that already decoded; a syntax error is still
// reported, never panicked on.
func Scan(file string, data []byte, sentinel error) (*Positions, error) {
	return ScanAt(file, 1, data, sentinel)
}

// ScanAt is Scan of a value that starts on line first of file, such as
// one line of a JSON Lines file: its lines, and those of its errors, are
// lines of the file.
func ScanAt(file string, first int, data []byte, sentinel error) (*Positions, error) {
	s := &scanner{data: data, dec: json.NewDecoder(bytes.NewReader(data)), pos: &Positions{lines: map[string]int{}}, base: max(first, 1) - 1}
	s.dec.UseNumber() // a huge number is a value to skip, not an error
	if err := s.value("", "the document", true); err != nil {
		return nil, s.fail(file, err, sentinel)
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

type scanner struct {
	data []byte
	dec  *json.Decoder
	pos  *Positions
	base int // lines of the file before data
}

// duplicateKey is the refusal of a key given twice in one object.
type duplicateKey struct {
	line, first int
	key, where  string
}

func (d *duplicateKey) Error() string {
	return fmt.Sprintf("key %q appears twice in %s", d.key, d.where)
}

func (s *scanner) line() int { return s.base + Line(s.data, int(s.dec.InputOffset())-1) }

// value reads one value whose path is key (encoded) and whose name in
// messages is where; record says whether the value's own line is its
// position (array elements and the document) or its key's already is.
func (s *scanner) value(key, where string, record bool) error {
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	if record {
		s.pos.lines[key] = s.line()
	}
	switch tok {
	case json.Delim('{'):
		first := map[string]int{}
		for s.dec.More() {
			kt, err := s.dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			l := s.line()
			if prev, dup := first[k]; dup {
				return &duplicateKey{line: l, first: prev, key: k, where: where}
			}
			first[k] = l
			var b strings.Builder
			b.WriteString(key)
			appendElem(&b, k)
			s.pos.lines[b.String()] = l
			if err := s.value(b.String(), memberName(where, k), false); err != nil {
				return err
			}
		}
		_, err = s.dec.Token() // '}'
		return err
	case json.Delim('['):
		for i := 0; s.dec.More(); i++ {
			var b strings.Builder
			b.WriteString(key)
			appendElem(&b, i)
			if err := s.value(b.String(), fmt.Sprintf("%s[%d]", strings.TrimPrefix(where, "the document"), i), true); err != nil {
				return err
			}
		}
		_, err = s.dec.Token() // ']'
		return err
	}
	return nil
}

func memberName(where, key string) string {
	if where == "the document" {
		return key
	}
	return where + "." + key
}

func (s *scanner) fail(file string, err error, sentinel error) error {
	if d, ok := err.(*duplicateKey); ok {
		in := "the top-level object"
		if d.where != "the document" {
			in = d.where
		}
		return fmt.Errorf("%s:%d: %w: key %q appears twice in %s (first on line %d); want each key once",
			file, d.line, sentinel, d.key, in, d.first)
	}
	if s.base == 0 {
		return DecodeError(file, s.data, err, sentinel, "a JSON value")
	}
	return fmt.Errorf("%s:%d: %w: %s", file, s.line(), sentinel, Clean(err))
}
