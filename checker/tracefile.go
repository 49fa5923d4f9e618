package checker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// traceSchemaV1 names the trace file format: JSON Lines, a header line
// then one line per move.
//
//	{"schema": "handoffcheck.trace/v1", "run": "vllm", "attempts": ["h0=<uuid>"], "config": {...}, "spec": {...}, "violation": "SourcePinnedUntilRead"}
//	{"step": 1, "move": "route-prefill h=0 worker=0"}
//	{"step": 2, "move": "deliver-request h=0"}
//
// The header carries everything needed to replay: the configuration, the
// run, and the spec when it is not the built-in one. "violation" is what
// the trace is expected to end in ("" for none); "attempts" names each
// handoff's attempt id, for matching with engine logs. "loop_from", for a
// liveness counterexample, is the step after which the moves form a loop
// back to the state after that step. Steps are numbered from 1
// without gaps; the move syntax is that of scenario files.
const traceSchemaV1 = "handoffcheck.trace/v1"

// maxTraceLineBytes bounds one line of a trace file: 16 MiB. The header
// line, the longest, embeds a configuration and at most a whole spec
// (under 100 KB).
const maxTraceLineBytes = 16 << 20

// errTrace is wrapped by every refusal of a trace file.
var errTrace = errors.New("checker: bad trace")

type traceHeader struct {
	Schema    string          `json:"schema"`
	Run       string          `json:"run"`
	Attempts  []string        `json:"attempts,omitempty"`
	Config    json.RawMessage `json:"config"`
	Spec      json.RawMessage `json:"spec,omitempty"`
	Violation string          `json:"violation,omitempty"`
	// LoopFrom, for a liveness counterexample, is the step after which
	// the loop starts: the steps after it return to the state after it.
	LoopFrom int `json:"loop_from,omitempty"`
}

type traceLine struct {
	Step int    `json:"step"`
	Move string `json:"move"`
}

// Trace is a parsed trace file.
type Trace struct {
	Run    string
	Config *system.Config
	// ConfigJSON is the configuration as the header carries it, to write
	// into a trace that continues this one.
	ConfigJSON []byte
	Spec       *spec.Spec // nil: the built-in spec
	Violation  string
	// LoopFrom > 0 marks a liveness counterexample: the moves after the
	// first LoopFrom form a loop back to the state after them.
	LoopFrom int
	Moves    []system.Move
	Lines    []int // the file line of each move
}

// WriteTrace writes a counterexample of a run as a trace file.
func WriteTrace(w io.Writer, configJSON []byte, s *spec.Spec, run string, attempts []string, ce *Counterexample) error {
	h := traceHeader{Schema: traceSchemaV1, Run: run, Attempts: attempts}
	var compact bytes.Buffer
	if err := json.Compact(&compact, configJSON); err != nil {
		return fmt.Errorf("checker: configuration is not JSON: %w", err)
	}
	h.Config = compact.Bytes()
	if s != nil {
		raw, err := s.MarshalJSON()
		if err != nil {
			return err
		}
		h.Spec = raw
	}
	if ce.Violation != nil {
		h.Violation = ce.Violation.Invariant
	}
	if len(ce.Loop) > 0 {
		h.LoopFrom = len(ce.Steps)
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for i, st := range append(append([]TraceStep(nil), ce.Steps...), ce.Loop...) {
		if err := enc.Encode(traceLine{Step: i + 1, Move: st.Move.String()}); err != nil {
			return err
		}
	}
	return nil
}

// ParseTrace reads a trace file. Every error names the file and line and
// says what was expected; it never panics on bad input.
func ParseTrace(file string, data []byte) (*Trace, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), maxTraceLineBytes)
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %w: %s", file, line, errTrace, fmt.Sprintf(format, args...))
	}
	tr := &Trace{}
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if tr.Config == nil {
			var h traceHeader
			if err := dec.Decode(&h); err != nil {
				return nil, bad(line, "header: %s (want {\"schema\": %q, \"run\", \"config\", ...})", jsonfile.Clean(err), traceSchemaV1)
			}
			if dec.More() {
				return nil, bad(line, "more than one JSON value on the header line")
			}
			if _, err := jsonfile.ScanAt(file, line, text, errTrace); err != nil {
				return nil, err
			}
			if h.Schema != traceSchemaV1 {
				return nil, bad(line, "schema is %q, want %q", h.Schema, traceSchemaV1)
			}
			if len(h.Config) == 0 {
				return nil, bad(line, "the header has no config")
			}
			cfg, err := system.ParseConfig(fmt.Sprintf("%s:%d: config", file, line), h.Config)
			if err != nil {
				// Both sentinels stay visible to errors.Is: the trace is
				// refused because its configuration is.
				return nil, fmt.Errorf("%w: %w", errTrace, err)
			}
			found := false
			for _, r := range cfg.Runs {
				found = found || r.Name == h.Run
			}
			if !found {
				return nil, bad(line, "run %q is not a run of the configuration", h.Run)
			}
			if len(h.Spec) > 0 {
				s, err := spec.Parse(fmt.Sprintf("%s:%d: spec", file, line), h.Spec)
				if err != nil {
					return nil, fmt.Errorf("%w: %w", errTrace, err)
				}
				tr.Spec = s
			}
			tr.Run, tr.Config, tr.Violation, tr.LoopFrom = h.Run, cfg, h.Violation, h.LoopFrom
			tr.ConfigJSON = h.Config
			continue
		}
		var l traceLine
		if err := dec.Decode(&l); err != nil {
			return nil, bad(line, "%s (want {\"step\": N, \"move\": \"...\"})", jsonfile.Clean(err))
		}
		if dec.More() {
			return nil, bad(line, "more than one JSON value on the line")
		}
		if _, err := jsonfile.ScanAt(file, line, text, errTrace); err != nil {
			return nil, err
		}
		if l.Step != len(tr.Moves)+1 {
			return nil, bad(line, "step %d, want %d (steps count from 1 without gaps)", l.Step, len(tr.Moves)+1)
		}
		m, err := system.ParseMove(l.Move, &tr.Config.World)
		if err != nil {
			return nil, bad(line, "move %q: %v", l.Move, err)
		}
		tr.Moves = append(tr.Moves, m)
		tr.Lines = append(tr.Lines, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, bad(line+1, "the line is longer than %d MiB, the most a trace line may hold", maxTraceLineBytes>>20)
		}
		return nil, bad(line+1, "%v", err)
	}
	if tr.Config == nil {
		return nil, bad(1, "empty trace, want a header line with schema %q", traceSchemaV1)
	}
	if tr.LoopFrom < 0 || (tr.LoopFrom > 0 && tr.LoopFrom >= len(tr.Moves)) {
		return nil, bad(1, "loop_from %d: want a step before the last (the trace has %d steps)", tr.LoopFrom, len(tr.Moves))
	}
	return tr, nil
}
