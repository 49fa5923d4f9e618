package explore

import (
	"errors"
	"strings"
	"testing"
)

// A path from a request's URL never panics the server: it parses or is
// refused naming the step, and a parsed path is answered with a state or
// refused as a path the run does not allow (errPath), never another error.
func FuzzState(f *testing.F) {
	for _, seed := range []string{"", "0", "0.0.0", "1.2.3.4.5", "x", "0..1", "-1", "99999999999999999999", "0.0.99", strings.Repeat("0.", 50) + "0"} {
		f.Add(seed)
	}
	_, _, s := openTrace(f, counterexample)
	f.Fuzz(func(t *testing.T, text string) {
		path, err := ParsePath(text)
		if err != nil {
			if !errors.Is(err, errPath) {
				t.Fatalf("%q: %v is not errPath", text, err)
			}
			return
		}
		if _, err := s.State(path); err != nil && !errors.Is(err, errPath) {
			t.Fatalf("%q: %v", text, err)
		}
	})
}
