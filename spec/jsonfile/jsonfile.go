// Package jsonfile turns positions and decoding errors of JSON input into
// the file:line messages every reader of the toolkit gives (ARCHITECTURE.md:
// bad input names the file and line and says what was expected).
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Line is the 1-based line of a byte offset, clamped to the input.
func Line(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// LineOfKey is the line of the first occurrence of "key" (quoted) at or
// after from, or 1 when there is none.
func LineOfKey(data []byte, key string, from int) int {
	from = min(max(from, 0), len(data))
	i := bytes.Index(data[from:], []byte(`"`+key+`"`))
	if i < 0 {
		return 1
	}
	return Line(data, from+i)
}

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// DecodeError explains an encoding/json decoding error of a file as
// "file:line: sentinel: what went wrong", wrapping sentinel. empty says what
// an empty input should have held.
func DecodeError(file string, data []byte, err error, sentinel error, empty string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%d: %w: malformed JSON: %v", file, Line(data, int(se.Offset)), sentinel, se)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%d: %w: field %q: got JSON %s, want %s", file, Line(data, int(te.Offset)), sentinel, te.Field, te.Value, te.Type)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s:1: %w: empty input, want %s", file, sentinel, empty)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s:%d: %w: the JSON ends early", file, Line(data, len(data)), sentinel)
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s:%d: %w: unknown field %q", file, LineOfKey(data, m[1], 0), sentinel, m[1])
	}
	return fmt.Errorf("%s:1: %w: %s", file, sentinel, Clean(err))
}

// Clean is a decoding error's text without the "json: " prefix, or "the
// JSON ends early" for a truncated value.
func Clean(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the JSON ends early"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
