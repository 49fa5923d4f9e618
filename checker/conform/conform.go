// Package conform judges what a running system logged (observation logs,
// package checker/obslog) against the spec and the model: it decides
// whether some behavior of the composed system explains the observed
// facts, with every invariant holding along it (docs/conform.md).
//
// Each attempt is judged in a world of its own (its prefill worker and
// its decode worker, as the simulator steps its requests), from the facts
// its processes logged, each process's facts in that process's order and
// nothing assumed about the order between processes: the judge searches
// the interleavings the machines allow (with a clock error, Options.
// ClockError, only those the stamps of one shared clock allow). Steps that make no fact any
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
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
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
	Protocol *system.Protocol
	// Config is the cluster's configuration; nil takes the header's, or
	// the simulator's default with the header's policy and engine.
	Config *cluster.Config
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
	// Props, when set, are always properties every state along an
	// explanation must satisfy too, judged after the built-in invariants
	// (docs/props.md): a branch that breaks one explains nothing. Its
	// leads_to within, sometimes and antecedents are judged on the clock
	// along the final explanations (timed.go); a leads_to within needs
	// time stamps (Judge's error at a fact without one).
	Props *props.Set
	// TimeScale is how long a configured duration lasts on the logs'
	// clock (a live run's --time-scale; 0: 1, the simulator's): a
	// property's bound is judged on the time stamps divided by it.
	TimeScale float64
	// ClockError, when Clocked, is how far every fact's stamp may be
	// from when its step took effect, on a clock all the logs' processes
	// share (one host; or clocks synchronized within a known bound): the
	// judge then explains a fact of one process before another's stamped
	// more than twice that later (clock.go). Every fact needs a stamp,
	// and a process's stamps may not go back. Not Clocked: the stamps
	// only choose the order the logs are read in.
	ClockError time.Duration
	Clocked    bool
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
	// ClockError is the clock error the judge assumed (Options.ClockError,
	// as Go writes a duration), "" when none was given.
	ClockError string `json:"clock_error,omitempty"`
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

	// Props is the properties file judged along the explanations
	// (Options.Props), "" when none; Properties their verdicts on the
	// clock along the final explanations: leads_to within, sometimes
	// reached or not, antecedents held or not.
	Props      string           `json:"props,omitempty"`
	Properties *props.RunReport `json:"properties,omitempty"`
	// Invariants is the built-in invariants the steps of the final
	// explanations exercised, and those they never did.
	Invariants *cluster.InvariantsReport `json:"invariants,omitempty"`
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
	// Property is the property of Options.Props the rejection rests on,
	// and PropertyAt where the file writes it (FILE:LINE): the invariant
	// the fact breaks, or the one a step that would explain it breaks.
	Property   string `json:"property,omitempty"`
	PropertyAt string `json:"property_at,omitempty"`
	// Broken is, when Invariant is "", the invariant a step of the
	// tables that would explain the fact breaks (the detail says so): a
	// reproduction looks for that step.
	Broken string `json:"-"`
	Detail string `json:"detail"`
	// Allowed is what the tables allowed the attempt's processes to log
	// next instead.
	Allowed []string `json:"allowed,omitempty"`
	// Explained is the attempt's longest explained prefix: its facts and
	// the unlogged steps between them.
	Explained []string `json:"explained,omitempty"`
	// Prefix counts the facts of the logs explained before this one.
	Prefix int `json:"explained_facts"`
	// Trace is the attempt's world and explanation, for a reproduction
	// (nil when no explanation of the attempt reached the fact).
	Trace *RejectionTrace `json:"-"`
}

// ErrInput is wrapped by a log the judge cannot read as a whole (headers
// that disagree, a fact that contradicts the log's own structure).
var ErrInput = errors.New("conform: bad input")

// Judge reads the logs and judges them. It returns an error only for
// malformed input (obslog.ErrLog, ErrInput) and for properties it does
// not judge on its logs (a leads_to within on a log without time stamps).
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
	for _, r := range rds {
		if r.Header().Legacy {
			// Judged against the lifecycle, a log of the old path would be
			// rejected for what that path is (nothing pinned, nothing
			// reserved), or explained by accident: neither says anything.
			return nil, fmt.Errorf("%s:1: %w: the header's policy is %s: the log is of the legacy disaggregated path, which pins and reserves nothing across the handoff; the handoff lifecycle's contract does not apply to it, so there is nothing to judge it against (want a log of source-first or destination-first)",
				r.Name(), ErrInput, obslog.LegacyPolicy)
		}
	}
	for _, r := range rds[1:] {
		if why := sameHeader(h, r.Header()); why != "" {
			return nil, fmt.Errorf("%s:1: %w: the header %s from %s's", r.Name(), ErrInput, why, rds[0].Name())
		}
	}
	j, err := newJudge(h, rds[0].Name(), opt)
	if err != nil {
		return nil, err
	}
	defer j.gone.close()
	for _, r := range rds {
		j.rep.Files = append(j.rep.Files, r.Name())
	}
	m := newMerge(rds, in, len(h.Processes))
	if len(rds) == 1 {
		// One log: its own order is every process's, and nothing is
		// merged; each fact is read straight into the judge's copy.
		if err := j.readOne(rds[0], in[0].LineOf); err != nil {
			return nil, err
		}
	}
	for j.rep.Rejection == nil && len(rds) > 1 {
		f, ok, err := m.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if err := j.fact(j.newFact(&f)); err != nil {
			return nil, err
		}
		if j.goneErr != nil {
			return nil, j.goneErr
		}
	}
	if j.rep.Rejection != nil {
		// A verdict reached before the logs' end may rest on facts of a
		// process read ahead of that process's own earlier ones; the rest
		// of the logs says whether it did.
		if err := m.drain(); err != nil {
			return nil, err
		}
	}
	if j.rep.Rejection == nil {
		if err := j.end(); err != nil {
			return nil, err
		}
		if j.goneErr != nil {
			return nil, j.goneErr
		}
	}
	j.rep.Properties = j.timedReport()
	j.rep.Invariants = j.invariantsReport()
	return j.report(), nil
}

// readOne judges the facts of one log until its end or a rejection.
func (j *judge) readOne(r *obslog.Reader, lineOf func(int) int) error {
	for j.rep.Rejection == nil {
		f := j.takeFact()
		if err := r.NextInto(f); err != nil {
			j.freeFacts = append(j.freeFacts, f)
			if err == io.EOF {
				return nil
			}
			return err
		}
		if lineOf != nil {
			f.Line = lineOf(f.Line)
		}
		if err := j.fact(f); err != nil {
			return err
		}
		if j.goneErr != nil {
			return j.goneErr
		}
	}
	return nil
}

// merge reads the logs side by side. Only each process's own order
// counts, so any reading order that keeps it gives the same verdict; the
// order only decides how fast it comes. Facts are read in the order of
// their time stamps while every log's next fact has one (clocks that
// disagree cost time, not correctness), a line of each log in turn
// otherwise: read close to the order things happened, most attempts are
// explained by the first explanation the judge follows, and few are open
// at once.
//
// A process's facts may be split over several logs (a rotated log): they
// are read in the order the logs are given. A log's fact of a process is
// not taken while an earlier log that has shown that process has not
// ended; before a fact of a process no earlier log has shown is taken,
// each earlier log still being read is read ahead for one of that
// process, within its first 1024 facts (what a log holds shows early: a
// rotated log's files each hold every busy process within a few lines,
// and a log of one process shows only it). A log that shows a process
// only after a later log's facts of it were taken breaks the order: the
// logs are refused, not judged. A log whose first fact of a process is
// that process's first fact in an earlier log is the same log given
// twice, refused too.
type merge struct {
	heads []head
	turn  int
	// shown[i][p]: log i has shown a fact of process p (taken or read
	// ahead); holder[p] is the first log not yet ended that has.
	shown  [][]bool
	holder []int
	// last[p] is the latest log a fact of process p was taken from, and
	// lastAt the fact (its place, for a refusal); first[p] is the first
	// fact of p read, from any log.
	last   []int
	lastAt []obslog.Fact
	first  []*obslog.Fact
	// ahead: a fact was taken from a log while an earlier one still being
	// read might show its process later.
	ahead bool
}

// lookahead is how far into a log the judge reads ahead, looking for a
// process's fact before a later log's fact of that process is taken: at
// most that many facts are held beside the attempts in flight, and only
// at a log's start. A variable for the tests.
var lookahead = 1024

type head struct {
	r *obslog.Reader
	// buf[off:] are the facts read and not yet taken.
	buf    []obslog.Fact
	off    int
	read   int // facts read from the log
	lineOf func(int) int
}

func (h *head) pending() int { return len(h.buf) - h.off }

func newMerge(rds []*obslog.Reader, in []Input, procs int) *merge {
	m := &merge{heads: make([]head, len(rds)), shown: make([][]bool, len(rds)), holder: make([]int, procs),
		last: make([]int, procs), lastAt: make([]obslog.Fact, procs), first: make([]*obslog.Fact, procs)}
	for i, r := range rds {
		m.heads[i].r, m.heads[i].lineOf = r, in[i].LineOf
		m.shown[i] = make([]bool, procs)
	}
	for p := range m.holder {
		m.holder[p], m.last[p] = -1, -1
	}
	return m
}

// read reads log i's next fact into its buffer; false at its end.
func (m *merge) read(i int) (bool, error) {
	h := &m.heads[i]
	if h.r == nil {
		return false, nil
	}
	f, err := h.r.Next()
	if err == io.EOF {
		h.r = nil
		if h.pending() == 0 {
			m.ended(i)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if h.lineOf != nil {
		f.Line = h.lineOf(f.Line)
	}
	// Keep the facts not yet taken at the front: the buffer stays as
	// long as the most ever read ahead, not as the log; and once the log
	// is past where it is read ahead, only as long as what it holds.
	if h.off > 0 && h.off >= len(h.buf)/2 {
		if n := h.pending(); h.read > lookahead && cap(h.buf) > 4*n+16 {
			h.buf = append(make([]obslog.Fact, 0, 2*n+8), h.buf[h.off:]...)
		} else {
			h.buf = h.buf[:copy(h.buf, h.buf[h.off:])]
		}
		h.off = 0
	}
	h.buf = append(h.buf, f)
	h.read++
	return true, m.show(i, &h.buf[len(h.buf)-1])
}

// show notes that log i holds a fact of its process.
func (m *merge) show(i int, f *obslog.Fact) error {
	p := f.Proc
	if m.last[p] > i {
		return fmt.Errorf("%s: %w: %s logs here, but %s, its fact in a log given later, was taken already: the facts of a process split over several logs are read in the order the logs are given, and this log showed no fact of %s in its first %d facts; give each process's facts in one log (join a rotated log's files, in order)",
			f.Where(), ErrInput, m.procName(p), m.lastAt[p].Where(), m.procName(p), lookahead)
	}
	if m.shown[i][p] {
		return nil
	}
	m.shown[i][p] = true
	if m.first[p] == nil {
		g := *f
		m.first[p] = &g
	} else if sameFact(m.first[p], f) {
		return fmt.Errorf("%s: %w: the first fact of %s here repeats its first fact at %s: the same log given twice, or two logs of one process that overlap (a process's facts continue in a later log, they do not repeat)",
			f.Where(), ErrInput, m.procName(p), m.first[p].Where())
	}
	if m.holder[p] < 0 || i < m.holder[p] {
		m.holder[p] = i
	}
	return nil
}

func (m *merge) procName(p int) string {
	for _, h := range m.heads {
		if h.r != nil {
			return h.r.Header().Processes[p].Name
		}
	}
	return fmt.Sprintf("process %d", p)
}

func (m *merge) done(i int) bool { return m.heads[i].r == nil && m.heads[i].pending() == 0 }

// ended notes that log i has ended: the logs after it may go on with its
// processes.
func (m *merge) ended(i int) {
	for p, h := range m.holder {
		if h != i {
			continue
		}
		m.holder[p] = -1
		for k := i + 1; k < len(m.heads); k++ {
			if m.shown[k][p] && !m.done(k) {
				m.holder[p] = k
				break
			}
		}
	}
}

// lookAhead reads the logs before log i ahead, each until it shows
// process p, ends, or has been read for lookahead facts.
func (m *merge) lookAhead(i, p int) error {
	for k := 0; k < i; k++ {
		for !m.shown[k][p] && m.heads[k].read < lookahead {
			if more, err := m.read(k); err != nil || !more {
				if err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// next is the next fact to judge; false after the last.
func (m *merge) next() (obslog.Fact, bool, error) {
	for {
		stamped, live := true, 0
		for i := range m.heads {
			h := &m.heads[i]
			if h.pending() == 0 {
				if _, err := m.read(i); err != nil {
					return obslog.Fact{}, false, err
				}
			}
			if h.pending() > 0 {
				live++
				stamped = stamped && h.buf[h.off].TUS >= 0
			}
		}
		if live == 0 {
			return obslog.Fact{}, false, nil
		}
		pick := -1
		for k := 0; k < len(m.heads); k++ {
			i := (m.turn + k) % len(m.heads)
			h := &m.heads[i]
			// An earlier log not yet ended that has shown the process
			// holds its facts before this one's.
			if h.pending() == 0 || m.holder[h.buf[h.off].Proc] < i {
				continue
			}
			if pick < 0 || (stamped && h.buf[h.off].TUS < m.heads[pick].buf[m.heads[pick].off].TUS) {
				pick = i
			}
		}
		// The first log not yet ended is never held back: pick is set.
		h := &m.heads[pick]
		p := h.buf[h.off].Proc
		if err := m.lookAhead(pick, p); err != nil {
			return obslog.Fact{}, false, err
		}
		if m.holder[p] < pick {
			// An earlier log showed the process on reading ahead.
			continue
		}
		m.turn = pick + 1
		f := h.buf[h.off]
		h.off++
		for k := 0; k < pick && !m.ahead; k++ {
			m.ahead = m.heads[k].r != nil
		}
		m.last[p], m.lastAt[p] = pick, f
		if m.done(pick) {
			m.ended(pick)
		}
		return f, true, nil
	}
}

// drain reads the rest of the logs, after a verdict reached before their
// end, for a fact that breaks a process's order across the logs: the
// verdict would rest on facts taken out of their order. A line the reader
// refuses ends its log there (nothing after it was judged).
func (m *merge) drain() error {
	if !m.ahead {
		return nil
	}
	for i := range m.heads {
		h := &m.heads[i]
		for h.r != nil {
			f, err := h.r.Next()
			if err != nil {
				h.r = nil
				break
			}
			if h.lineOf != nil {
				f.Line = h.lineOf(f.Line)
			}
			if err := m.show(i, &f); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameFact compares two facts, wherever they were read.
func sameFact(a, b *obslog.Fact) bool {
	x, y := *a, *b
	x.File, x.Line, x.Seq, y.File, y.Line, y.Seq = "", 0, 0, "", 0, 0
	return x == y
}

func sameHeader(a, b *obslog.Header) string {
	if a.Policy != b.Policy || a.Legacy != b.Legacy || a.Engine != b.Engine {
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
	if f.AdoptedBlocks > 0 {
		fmt.Fprintf(&b, " adopted_blocks=%d canonical=%s", f.AdoptedBlocks, f.Canonical)
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
