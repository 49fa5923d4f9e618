// Package jsonfile turns positions and decoding errors of JSON input into
// the file:line messages every reader of the toolkit gives (docs/cli.md:
// bad input names the file and line and says what was expected).
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
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
// an empty input should have held. Types are named in JSON terms ("an
// integer from 1 to 255"), never by their Go names, which mean nothing to
// the person who wrote the file.
func DecodeError(file string, data []byte, err error, sentinel error, empty string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%d: %w: malformed JSON: %v", file, Line(data, int(se.Offset)), sentinel, se)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%d: %w: %s", file, Line(data, int(te.Offset)), sentinel, describeType(te))
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

// Clean is a decoding error's text without the "json: " prefix and without
// Go type names, or "the JSON ends early" for a truncated value.
func Clean(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the JSON ends early"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return describeType(te)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// describeType says which field got which JSON value and what it should
// have been, in the vocabulary of the file.
func describeType(te *json.UnmarshalTypeError) string {
	field := "the document"
	if te.Field != "" {
		field = fmt.Sprintf("field %q", te.Field)
	}
	return fmt.Sprintf("%s: got JSON %s, want %s", field, te.Value, JSONType(te.Type))
}

// JSONType names what a Go type accepts in JSON terms: "a string", "an
// integer from 0 to 255", "an array", "an object".
func JSONType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if bits := t.Bits(); bits < 64 {
			return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
		}
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if bits := t.Bits(); bits < 64 {
			return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<bits-1)
		}
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a value"
}

// DecodeLine decodes one line of a JSON Lines file into v, refusing
// unknown fields and anything after the object. Its error is the problem
// alone, without the file and line, which the reader adds.
func DecodeLine(text []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("malformed JSON: %s", Clean(err))
		}
		return errors.New(Clean(err))
	}
	if rest := bytes.TrimSpace(text[dec.InputOffset():]); len(rest) > 0 {
		s := string(rest)
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return fmt.Errorf("%s after the JSON object", strconv.Quote(s))
	}
	return nil
}
