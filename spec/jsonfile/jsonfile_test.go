package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var errBad = errors.New("bad")

func decode(data string) error {
	var v struct {
		A int `json:"a"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(&v)
}

func TestDecodeError_NamesLine(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"syntax", "{\n  \"a\": 1,\n  ]\n}", "f.json:3: bad: malformed JSON"},
		{"type", "{\n\n  \"a\": \"x\"\n}", "f.json:3: bad: field \"a\": got JSON string, want an integer"},
		{"unknown-field", "{\n  \"a\": 1,\n  \"b\": 2\n}", "f.json:3: bad: unknown field \"b\""},
		{"empty", "", "f.json:1: bad: empty input, want an object"},
		{"truncated", "{\n  \"a\": 1,", "f.json:2: bad: the JSON ends early"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeError("f.json", []byte(tc.data), decode(tc.data), errBad, "an object")
			if !errors.Is(err, errBad) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	data := []byte("a\nb\n\"k\": 1\n")
	if got := Line(data, 0); got != 1 {
		t.Errorf("Line(0) = %d", got)
	}
	if got := Line(data, 4); got != 3 {
		t.Errorf("Line(4) = %d", got)
	}
	if got := Line(data, 1000); got != 4 {
		t.Errorf("Line past the end = %d", got)
	}
	if got := LineOfKey(data, "k", 0); got != 3 {
		t.Errorf("LineOfKey = %d", got)
	}
	if got := LineOfKey(data, "missing", 0); got != 1 {
		t.Errorf("LineOfKey of a missing key = %d", got)
	}
}
