package jsonfile

import (
	"errors"
	"fmt"
	"slices"
)

// Problem is one defect of an input, located by the path of the value it
// is about rather than by its wording: a reader maps Path to a line with
// Positions.Line, so a message can be reworded without moving the line it
// is reported at.
type Problem struct {
	// Path leads from the document's root to the value at fault: object
	// keys (string) and array indices (int), as Positions.Line takes them.
	// A path the document lacks (a key left out) falls back to its
	// nearest present ancestor; an empty path is the document itself.
	Path []any
	// Msg says what is wrong and what was expected, without the sentinel.
	Msg string
	// Err is the sentinel the problem wraps, named first in Error.
	Err error
}

// Problemf is a problem at path wrapping sentinel, its message formatted
// as by fmt.Sprintf.
func Problemf(sentinel error, path []any, format string, args ...any) *Problem {
	return &Problem{Path: path, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

func (p *Problem) Error() string {
	if p.Err == nil {
		return p.Msg
	}
	return p.Err.Error() + ": " + p.Msg
}

func (p *Problem) Unwrap() error { return p.Err }

// Under is the problem as seen from a document that holds this one's at
// prefix: the same message at prefix + Path.
func (p *Problem) Under(prefix ...any) *Problem {
	q := *p
	q.Path = append(slices.Clip(prefix), p.Path...)
	return &q
}

// ProblemsOf lists the problems err carries, in order: err itself when it
// is a *Problem, those of every error it joins (errors.Join) otherwise.
// ok is false when some error it carries is not a located problem: the
// caller must then place it itself, since no path says where it belongs.
func ProblemsOf(err error) (ps []*Problem, ok bool) {
	ok = true
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *Problem:
			ps = append(ps, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			ok = false
		}
	}
	walk(err)
	return ps, ok
}

// JoinProblems is the problems as one error (nil for none), whose text is
// one problem a line, as errors.Join writes it.
func JoinProblems(ps []*Problem) error {
	if len(ps) == 0 {
		return nil
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}
