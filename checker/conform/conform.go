// Package conform judges what a running system logged (observation logs,
// package checker/obslog) against the spec and the model: it decides
// whether some behavior of the composed system explains the observed
// facts, with every invariant holding along it (docs/conform.md).
//
// Each attempt is judged in a world of its own (its prefill worker and
// its decode worker, as the simulator steps its requests), from the facts
// its processes logged, each process's facts in that process's order and
// nothing assumed about the order between processes: the judge searches
// the interleavings the machines allow. Steps that make no fact any
// logged process records happen unlogged, at most Bound of them between
// two explained facts, and unlogged faults (a lost or duplicated fact, a
// hung transfer, a core that falls behind) at most MaxFaults per attempt.
// A worker's restart reaches every attempt open on it.
//
// It streams: an attempt is forgotten once it has finished and returned
// everything, so memory follows the attempts in flight, not the log.
package conform

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// Verdicts.
const (
	Explained    = "explained"
	Rejected     = "rejected"
	Inconclusive = "inconclusive"
)

// Defaults of the search's bounds.
const (
	DefaultBound     = 16
	DefaultMaxFaults = 2
)

// Options are a judgement's inputs beside the logs.
type Options struct {
	// Protocol is the tables (default: the generated machines).
	Protocol *checker.Protocol
	// Config is the cluster's configuration; nil takes the header's, or
	// the simulator's default with the header's policy and engine.
	Config *sim.Config
	// Bound is the most unlogged steps between two explained facts of an
	// attempt (0: DefaultBound).
	Bound int
	// MaxFaults is the most unlogged faults in one attempt (-1: none;
	// 0: DefaultMaxFaults).
	MaxFaults int
	// Open accepts attempts still in flight when the logs end (a log cut
	// from a running system); by default every attempt must have
	// finished and returned everything.
	Open bool
}

// Input is one log.
type Input struct {
	Name string
	R    io.Reader
	// LineOf, when set, maps the log's lines to the lines of the file
	// it was converted from (an adapter's), for the report.
	LineOf func(int) int
}

// Report is a judgement.
type Report struct {
	Verdict  string   `json:"verdict"`
	Files    []string `json:"files"`
	Policy   string   `json:"policy"`
	Engine   string   `json:"engine"`
	Facts    int      `json:"facts"`
	Attempts int      `json:"attempts"`
	Restarts int      `json:"restarts"`
	// Bound and MaxFaults are the search's bounds; BoundReached counts
	// the attempts whose search the step bound cut somewhere (a cut that
	// another explanation made moot does not change the verdict).
	Bound        int `json:"bound"`
	MaxFaults    int `json:"max_faults"`
	BoundReached int `json:"bound_reached"`
	// Unlogged is the unlogged steps the explanations took, LongestGap
	// the most between two explained facts, FaultsUsed the unlogged
	// faults, Escalated the attempts that needed any.
	Unlogged   int `json:"unlogged_steps"`
	LongestGap int `json:"longest_gap"`
	FaultsUsed int `json:"unlogged_faults"`
	Escalated  int `json:"attempts_with_unlogged_faults"`
	// PeakOpen is the most attempts open at once: what memory follows.
	PeakOpen  int        `json:"peak_open_attempts"`
	Rejection *Rejection `json:"rejection,omitempty"`
}

// Rejection is the first fact no behavior explains.
type Rejection struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Attempt string `json:"attempt,omitempty"`
	Fact    string `json:"fact"`
	// Invariant is the invariant the fact breaks, or "" when the physics
	// allows it and the tables do not.
	Invariant string `json:"invariant,omitempty"`
	Detail    string `json:"detail"`
	// Allowed is what the tables allowed the attempt's processes to log
	// next instead.
	Allowed []string `json:"allowed,omitempty"`
	// Explained is the attempt's longest explained prefix: its facts and
	// the unlogged steps between them.
	Explained []string `json:"explained,omitempty"`
	// Prefix counts the facts of the logs explained before this one.
	Prefix int `json:"explained_facts"`
}

// ErrInput is wrapped by a log the judge cannot read as a whole (headers
// that disagree, a fact that contradicts the log's own structure).
var ErrInput = errors.New("conform: bad input")

// Judge reads the logs and judges them. It returns an error only for
// malformed input (obslog.ErrLog, ErrInput).
func Judge(in []Input, opt Options) (*Report, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: no log", ErrInput)
	}
	rds := make([]*obslog.Reader, len(in))
	for i, x := range in {
		r, err := obslog.NewReader(x.R, x.Name)
		if err != nil {
			return nil, err
		}
		rds[i] = r
	}
	h := rds[0].Header()
	for _, r := range rds[1:] {
		if why := sameHeader(h, r.Header()); why != "" {
			return nil, fmt.Errorf("%s:1: %w: the header %s from %s's", r.Name(), ErrInput, why, rds[0].Name())
		}
	}
	j, err := newJudge(h, rds[0].Name(), opt)
	if err != nil {
		return nil, err
	}
	for _, r := range rds {
		j.rep.Files = append(j.rep.Files, r.Name())
	}
	// Read the logs side by side. Only each process's own order counts,
	// so any reading order gives the same verdict; the order only decides
	// how fast it comes. Facts are read in the order of their time stamps
	// while every log's next fact has one (clocks that disagree cost time,
	// not correctness), a line of each log in turn otherwise: read close
	// to the order things happened, most attempts are explained by the
	// first explanation the judge follows, and few are open at once.
	type head struct {
		r      *obslog.Reader
		f      obslog.Fact
		ok     bool
		lineOf func(int) int
	}
	heads := make([]head, len(rds))
	for i, r := range rds {
		heads[i].r, heads[i].lineOf = r, in[i].LineOf
	}
	turn := 0
	for j.rep.Rejection == nil {
		stamped, live := true, 0
		for i := range heads {
			h := &heads[i]
			if h.r != nil && !h.ok {
				f, err := h.r.Next()
				if err == io.EOF {
					h.r = nil
					continue
				}
				if err != nil {
					return nil, err
				}
				if h.lineOf != nil {
					f.Line = h.lineOf(f.Line)
				}
				h.f, h.ok = f, true
			}
			if h.ok {
				live++
				stamped = stamped && h.f.TUS >= 0
			}
		}
		if live == 0 {
			break
		}
		pick := -1
		for k := 0; k < len(heads); k++ {
			i := (turn + k) % len(heads)
			if !heads[i].ok {
				continue
			}
			if pick < 0 || (stamped && heads[i].f.TUS < heads[pick].f.TUS) {
				pick = i
			}
		}
		turn = pick + 1
		f := heads[pick].f
		heads[pick].ok = false
		if err := j.fact(&f); err != nil {
			return nil, err
		}
	}
	if j.rep.Rejection == nil {
		if err := j.end(); err != nil {
			return nil, err
		}
	}
	return j.report(), nil
}

func sameHeader(a, b *obslog.Header) string {
	if a.Policy != b.Policy || a.Engine != b.Engine {
		return "names another policy or engine"
	}
	if len(a.Processes) != len(b.Processes) {
		return "names other processes"
	}
	for i := range a.Processes {
		if a.Processes[i] != b.Processes[i] {
			return fmt.Sprintf("differs about process %q", a.Processes[i].Name)
		}
	}
	if string(a.Config) != string(b.Config) {
		return "carries another configuration"
	}
	return ""
}

// Describe renders a fact as a line of a report.
func Describe(h *obslog.Header, f *obslog.Fact) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s gen %d", h.Processes[f.Proc].Name, f.Gen)
	if f.Attempt != "" {
		fmt.Fprintf(&b, " attempt %s", f.Attempt)
	}
	fmt.Fprintf(&b, ": %s", f.Kind)
	if f.Kind == obslog.Routed {
		fmt.Fprintf(&b, " stage=%s to=%s", stageName(f.Stage), h.Processes[f.To].Name)
	}
	for _, g := range obslog.Kinds[f.Kind].Figures {
		if !f.HasFigure(g) || g == obslog.FigStage {
			continue
		}
		switch g {
		case obslog.FigOutcome:
			fmt.Fprintf(&b, " outcome=%s", f.Outcome)
		case obslog.FigTimer:
			fmt.Fprintf(&b, " timer=%s", f.Timer)
		default:
			fmt.Fprintf(&b, " %s=%d", g, figure(f, g))
		}
	}
	return b.String()
}

func stageName(s model.Side) string {
	if s == model.SourceSide {
		return "prefill"
	}
	return "decode"
}

func figure(f *obslog.Fact, g obslog.Figure) int64 { return f.Figure(g) }

func labelFigure(l *obslog.Label, g obslog.Figure) int64 { return l.Figure(g) }
