package jsonfile

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// Problems keep their paths through a join and through Under, and their
// text is what errors.Join of their messages would write, so a reader can
// place each without reading it.
func TestProblems_PathsSurviveJoinAndUnder(t *testing.T) {
	a := Problemf(errBad, []any{"groups", 1, "name"}, "group %q: declared twice", "attn")
	b := Problemf(errBad, []any{"vllm_version"}, "no rules")
	err := JoinProblems([]*Problem{a, b})
	if want := "bad: group \"attn\": declared twice\nbad: no rules"; err.Error() != want {
		t.Errorf("text %q, want %q", err, want)
	}
	if !errors.Is(err, errBad) {
		t.Errorf("%v does not wrap its sentinel", err)
	}
	// A join inside a join, as a configuration's check holds a profile's.
	outer := errors.Join(err, Problemf(errBad, nil, "the document"))
	ps, ok := ProblemsOf(outer)
	if !ok || len(ps) != 3 {
		t.Fatalf("ProblemsOf: %d problems, ok %v", len(ps), ok)
	}
	moved := ps[0].Under("transfer", "groups")
	if want := []any{"transfer", "groups", "groups", 1, "name"}; !slices.Equal(moved.Path, want) || moved.Msg != a.Msg {
		t.Errorf("Under: %v %q", moved.Path, moved.Msg)
	}
	if !slices.Equal(a.Path, []any{"groups", 1, "name"}) {
		t.Errorf("Under changed the original: %v", a.Path)
	}
	// An error that is not a located problem is said to be one.
	if _, ok := ProblemsOf(errors.Join(a, fmt.Errorf("plain"))); ok {
		t.Error("ProblemsOf: a plain error counted as located")
	}
	if ps, ok := ProblemsOf(nil); !ok || len(ps) != 0 || JoinProblems(nil) != nil {
		t.Error("no problems: want none, ok, and a nil error")
	}
}
