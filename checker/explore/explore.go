// Package explore serves the web explorer: a page on the loopback
// interface that walks one run's state space by choosing moves, and walks
// a counterexample trace with the choice to branch off at any step.
//
// The server holds no session state: a state is named by the path of
// moves that reaches it from the initial state, each move by its index
// among the moves enabled where it is taken. A request replays its path
// through the same checker the exhaustive search uses, so what the page
// shows is what check and replay judge, and a link to a state can be
// shared and reloaded.
package explore

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

//go:embed page
var page embed.FS

// MaxPath bounds the length of a path a request may name: a state
// further than this from the initial one is refused rather than replayed.
const MaxPath = 10000

// Server answers the page's requests for one run.
type Server struct {
	c     *checker.Checker // nil when the server shows logs
	cfg   *system.Config
	props *props.Set
	title string
	trace *Trace
	logs  *Logs
	mux   *http.ServeMux
	diag  diagrams
}

// Trace is a counterexample opened in the explorer, as the path of move
// indices that walks it.
type Trace struct {
	// File names where the trace was read from.
	File string `json:"file"`
	// Path is each step's index among the moves enabled where it is
	// taken.
	Path []int `json:"path"`
	// Moves is each step's move, as the trace file writes it.
	Moves []string `json:"moves"`
	// Violation is the invariant the trace records ("" for none).
	Violation string `json:"violation,omitempty"`
	// LoopFrom > 0 marks a liveness trace: the steps after the first
	// LoopFrom repeat.
	LoopFrom int `json:"loop_from,omitempty"`
}

// Options are what a run's page shows beside the run.
type Options struct {
	// Title heads the page (the configuration and run it explores).
	Title string
	// Props, when set, are properties judged at every state beside the
	// built-in invariants (an always property's violation is one like
	// theirs), and targets the page can search for (sometimes ones).
	Props *props.Set
}

// New makes a server for a run of a configuration under a protocol.
func New(p *system.Protocol, cfg *system.Config, run system.Run, opt Options) (*Server, error) {
	if opt.Props != nil {
		judged := *cfg
		judged.Judge = opt.Props
		if ok, _ := opt.Props.Symmetric(); !ok {
			// A search from the page would merge states the
			// properties tell apart.
			judged.Symmetry = false
		}
		cfg = &judged
	}
	c, err := checker.New(p, cfg, run)
	if err != nil {
		return nil, err
	}
	s := newServer(opt.Title)
	s.c, s.cfg, s.props = c, cfg, opt.Props
	return s, nil
}

func newServer(title string) *Server {
	s := &Server{title: title, mux: http.NewServeMux()}
	sub, err := fs.Sub(page, "page")
	if err != nil {
		panic(err) // the embedded directory is part of the build
	}
	s.mux.Handle("GET /", http.FileServer(http.FS(sub)))
	s.mux.HandleFunc("GET /api/run", s.serveRun)
	s.mux.HandleFunc("GET /api/state", s.serveState)
	s.mux.HandleFunc("GET /api/logs", s.serveLogs)
	s.mux.HandleFunc("GET /api/search", s.serveSearch)
	s.mux.HandleFunc("GET /api/spec", s.serveSpec)
	s.mux.HandleFunc("GET /api/diagram", s.serveDiagram)
	return s
}

// OpenTrace walks a trace's moves from the initial state and keeps them
// as the path the page offers. A move the state does not enable where the
// trace takes it is an error naming the trace's line.
func (s *Server) OpenTrace(file string, tr *checker.Trace) error {
	sess := s.c.Initial()
	t := &Trace{File: file, Violation: tr.Violation, LoopFrom: tr.LoopFrom}
	for i, m := range tr.Moves {
		idx := indexOf(s.c.MovesInto(&sess, nil), m)
		if idx < 0 {
			return fmt.Errorf("%s:%d: step %d: %s is not enabled here", file, tr.Lines[i], i+1, m)
		}
		if _, err := s.c.Apply(&sess, m); err != nil {
			return fmt.Errorf("%s:%d: step %d: %v", file, tr.Lines[i], i+1, err)
		}
		t.Path = append(t.Path, idx)
		t.Moves = append(t.Moves, m.String())
	}
	s.trace = t
	return nil
}

func indexOf(moves []system.Move, m system.Move) int {
	for i, x := range moves {
		if x == m {
			return i
		}
	}
	return -1
}

// ServeHTTP answers the page and its API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Loopback checks that an address names the loopback interface: the
// explorer serves nothing to other hosts.
func Loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want host:port on the loopback interface (127.0.0.1:0 picks a free port)", addr)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: the explorer listens on the loopback interface only (127.0.0.1 or ::1)", addr)
	}
	return nil
}

// RunInfo is what the page shows before any state: the run, its
// invariants and the trace opened with it.
type RunInfo struct {
	Title      string          `json:"title"`
	Run        string          `json:"run"`
	Policy     string          `json:"policy"`
	Engine     string          `json:"engine"`
	Attempts   []string        `json:"attempts"`
	Invariants []InvariantInfo `json:"invariants"`
	Trace      *Trace          `json:"trace,omitempty"`
	// Logs is set when the explorer shows judged logs instead of a run.
	Logs bool `json:"logs,omitempty"`
	// Targets are the sometimes properties a search from the page can
	// look for.
	Targets []string `json:"targets,omitempty"`
}

// InvariantInfo names an invariant and says what it means, and whether
// a search from the page can look for where it breaks.
type InvariantInfo struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Meaning    string `json:"meaning"`
	Searchable bool   `json:"searchable"`
}

func (s *Server) serveRun(w http.ResponseWriter, _ *http.Request) {
	if s.c == nil {
		writeJSON(w, RunInfo{Title: s.title, Policy: s.logs.Policy, Engine: s.logs.Engine, Logs: true})
		return
	}
	run := s.c.Run()
	info := RunInfo{Title: s.title, Run: run.Name, Policy: run.Policy.String(), Engine: run.Engine.String(),
		Attempts: s.c.Attempts(), Trace: s.trace}
	for _, inv := range model.Invariants {
		info.Invariants = append(info.Invariants, InvariantInfo{Name: inv.Name, Kind: inv.Kind.String(), Meaning: inv.Meaning,
			Searchable: searchable(inv.Name) == nil})
	}
	if s.props != nil {
		for _, p := range s.props.Props {
			if p.Kind == props.Sometimes {
				info.Targets = append(info.Targets, p.Name)
			}
		}
	}
	writeJSON(w, info)
}

// View is one state as the page shows it.
type View struct {
	Path []int `json:"path"`
	// Steps are the moves of the path, each with the rows it fired and
	// the violation it caused.
	Steps []Step `json:"steps"`
	// Lines render the state: one per handoff, then one per worker.
	Lines []string `json:"lines"`
	// Changed is, per line, what the last move changed in it ("" when
	// nothing).
	Changed []string `json:"changed"`
	// Moves are the moves enabled here, in the order the path indexes.
	Moves []Choice `json:"moves"`
	// Roles is each handoff's role machine states, and Fired the rows
	// the last move fired: the machines' tables and diagrams are drawn
	// with them.
	Roles []HandoffRoles `json:"roles"`
	Fired []FiredRow     `json:"fired"`
	// Verdicts holds every invariant's verdict at this state, and
	// Properties every property's, in the file's order.
	Verdicts   []Verdict      `json:"verdicts"`
	Properties []PropertyView `json:"properties,omitempty"`
	Drained    bool           `json:"drained"`
	Quiescent  bool           `json:"quiescent"`
	// Violation is the first violation along the path, if any.
	Violation *Violated `json:"violation,omitempty"`
}

// Step is one move of a path and what it did.
type Step struct {
	Move      string    `json:"move"`
	Fired     []string  `json:"fired"`
	Violation *Violated `json:"violation,omitempty"`
}

// HandoffRoles is one handoff's role machine states.
type HandoffRoles struct {
	Handoff     int    `json:"handoff"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// FiredRow names a table row that fires: its role, the row's number in
// the role's table (from 1, as the spec lists them), the handoff, and the
// state it fires from (a row may list several), which names its edge in
// the role's diagram.
type FiredRow struct {
	Role    string `json:"role"`
	Row     int    `json:"row"`
	Handoff int    `json:"handoff"`
	From    string `json:"from"`
}

func (s *Server) firedRows(fs []system.Firing) []FiredRow {
	p := s.c.Protocol()
	out := []FiredRow{}
	for _, f := range fs {
		out = append(out, FiredRow{Role: f.Role.String(), Row: f.Row, Handoff: f.Handoff, From: p.StateName(f.Role, f.From)})
	}
	return out
}

// Choice is an enabled move, with what taking it would do.
type Choice struct {
	Index int      `json:"index"`
	Move  string   `json:"move"`
	Fired []string `json:"fired"`
	// Rows are the table rows it would fire.
	Rows []FiredRow `json:"rows"`
	// Breaks names the invariant taking the move would violate.
	Breaks *Violated `json:"breaks,omitempty"`
}

// Violated is a violation as the page shows it.
type Violated struct {
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
	Step      int    `json:"step,omitempty"`
}

// PropertyView is a property's judgement of a state: whether its
// expression holds (for a per-handoff always property, on every handoff;
// a per-handoff sometimes one, on some), on which handoff it failed or
// held, and an evaluation error.
type PropertyView struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Expr    string `json:"expr"`
	Holds   bool   `json:"holds"`
	Handoff int    `json:"handoff"`
	Error   string `json:"error,omitempty"`
}

// Verdict is an invariant's verdict at a state: "holds", "violated",
// or "not judged here" for invariants a state alone cannot judge (those
// of a step, of quiescence when the state is not quiescent, of liveness).
type Verdict struct {
	Invariant string `json:"invariant"`
	Verdict   string `json:"verdict"`
	Detail    string `json:"detail,omitempty"`
}

// errPath is a path the run does not allow: a 400 for the client.
var errPath = errors.New("bad path")

// ParsePath reads a path as the page writes it: move indices joined by
// dots ("" is the initial state).
func ParsePath(text string) ([]int, error) {
	if text == "" {
		return nil, nil
	}
	parts := strings.Split(text, ".")
	if len(parts) > MaxPath {
		return nil, fmt.Errorf("%w: %d steps, at most %d", errPath, len(parts), MaxPath)
	}
	path := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: step %d is %q, want a move's index (0, 1, ...)", errPath, i+1, p)
		}
		path[i] = n
	}
	return path, nil
}

// walk replays a path of move indices from the initial state, calling
// before (if set) with the state before each step and after with the
// step's result; it returns the state at the path's end. A path that
// chooses a move that is not enabled is errPath, naming the step.
func (s *Server) walk(path []int, after func(int, *system.State, checker.StepResult), before func(int, *system.State)) (*system.State, error) {
	sess := s.c.Initial()
	for i, idx := range path {
		moves := s.c.MovesInto(&sess, nil)
		if idx >= len(moves) {
			return nil, fmt.Errorf("%w: step %d chooses move %d, but %d moves are enabled there", errPath, i+1, idx, len(moves))
		}
		if before != nil {
			before(i, &sess)
		}
		r, err := s.c.Apply(&sess, moves[idx])
		if err != nil {
			return nil, fmt.Errorf("step %d: %v", i+1, err)
		}
		after(i, &sess, r)
	}
	return &sess, nil
}

// pathParam reads a request's path parameter; a malformed one is
// answered 400 here.
func pathParam(w http.ResponseWriter, r *http.Request) ([]int, bool) {
	path, err := ParsePath(r.URL.Query().Get("path"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return path, true
}

// Checker is the checker the server steps (nil when it shows logs).
func (s *Server) Checker() *checker.Checker { return s.c }

// State replays a path from the initial state and renders where it ends.
func (s *Server) State(path []int) (*View, error) {
	v := &View{Path: path, Steps: []Step{}, Fired: []FiredRow{}}
	var prev []string
	sess, err := s.walk(path, func(i int, sess *system.State, r checker.StepResult) {
		st := Step{Move: r.Move.String(), Fired: fired(s.c, r)}
		if r.Violation != nil {
			st.Violation = violated(r.Violation, i+1)
			if v.Violation == nil {
				v.Violation = st.Violation
			}
		}
		v.Steps = append(v.Steps, st)
		if i < len(path)-1 {
			return
		}
		v.Fired = s.firedRows(r.Fired)
		now := s.c.DescribeState(sess)
		v.Changed = make([]string, len(now))
		for j := range now {
			if j < len(prev) {
				v.Changed[j] = checker.ChangedFields(prev[j], now[j])
			}
		}
	}, func(i int, sess *system.State) {
		if i == len(path)-1 {
			prev = s.c.DescribeState(sess)
		}
	})
	if err != nil {
		return nil, err
	}
	v.Lines = s.c.DescribeState(sess)
	if v.Changed == nil {
		v.Changed = make([]string, len(v.Lines))
	}
	st := sess
	p := s.c.Protocol()
	for h := range s.c.World().Handoffs {
		v.Roles = append(v.Roles, HandoffRoles{Handoff: h, Source: p.StateName(spec.Source, st.Src[h]), Destination: p.StateName(spec.Destination, st.Dst[h])})
	}
	v.Drained = s.c.Drained(sess)
	v.Quiescent, _ = s.c.Quiescence(sess)
	v.Verdicts = s.verdicts(sess, v.Quiescent, v.Steps)
	if s.props != nil {
		for i, o := range s.props.Judgement(s.c.System, st) {
			p := s.props.Props[i]
			pv := PropertyView{Name: p.Name, Kind: p.Kind.String(), Expr: p.Expr, Holds: o.Holds, Handoff: o.Handoff}
			if o.Err != nil {
				pv.Error = o.Err.Error()
			}
			v.Properties = append(v.Properties, pv)
		}
	}
	v.Moves = []Choice{}
	for i, m := range s.c.MovesInto(sess, nil) {
		next := *sess
		r, err := s.c.Apply(&next, m)
		if err != nil {
			return nil, fmt.Errorf("move %d (%s): %v", i, m, err)
		}
		ch := Choice{Index: i, Move: m.String(), Fired: fired(s.c, r), Rows: s.firedRows(r.Fired)}
		if r.Violation != nil {
			ch.Breaks = violated(r.Violation, 0)
		}
		v.Moves = append(v.Moves, ch)
	}
	return v, nil
}

func fired(c *checker.Checker, r checker.StepResult) []string {
	lines := c.FormatStep(checker.StepResult{Move: r.Move, Fired: r.Fired})
	out := []string{}
	for _, l := range lines[1:] {
		out = append(out, strings.TrimPrefix(strings.TrimSpace(l), "fired "))
	}
	return out
}

func violated(v *model.Violation, step int) *Violated {
	return &Violated{Invariant: v.Invariant, Detail: v.Detail, Step: step}
}

// verdicts judges every invariant of the registry at a state: the state
// halves always, quiescence when the state is quiescent, and the step
// halves on the last step of the path.
func (s *Server) verdicts(st *system.State, quiescent bool, steps []Step) []Verdict {
	rec := s.c.Records(st)
	bad := map[string]*model.Violation{}
	for _, v := range model.StateViolations(&st.W, &rec) {
		if bad[v.Invariant] == nil {
			bad[v.Invariant] = v
		}
	}
	if quiescent {
		if _, v := s.c.Quiescence(st); v != nil {
			bad[v.Invariant] = v
		}
	}
	var lastStep *Violated
	if len(steps) > 0 {
		lastStep = steps[len(steps)-1].Violation
	}
	out := make([]Verdict, 0, len(model.Invariants))
	for _, inv := range model.Invariants {
		vd := Verdict{Invariant: inv.Name, Verdict: "not judged here"}
		switch {
		case bad[inv.Name] != nil:
			vd.Verdict, vd.Detail = "violated", bad[inv.Name].Detail
		case inv.HasStep() && lastStep != nil && lastStep.Invariant == inv.Name:
			vd.Verdict, vd.Detail = "violated", lastStep.Detail
		case inv.HasState() || (inv.HasStep() && len(steps) > 0):
			vd.Verdict = "holds"
		case quiescent && inv.Name == model.NameQuiescence,
			quiescent && inv.Name == model.NameFaultFreeCompletion && st.B == s.c.Budget():
			vd.Verdict = "holds"
		}
		out = append(out, vd)
	}
	return out
}

func (s *Server) serveState(w http.ResponseWriter, r *http.Request) {
	if s.noRun(w) {
		return
	}
	path, ok := pathParam(w, r)
	if !ok {
		return
	}
	v, err := s.State(path)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, errPath) {
			code = http.StatusBadRequest
		}
		http.Error(w, err.Error(), code)
		return
	}
	writeJSON(w, v)
}

// serveSpec answers the run's tables as handoffcheck spec prints them
// (handoffcheck.spec/v1): the page draws the machines from them.
func (s *Server) serveSpec(w http.ResponseWriter, _ *http.Request) {
	if s.noRun(w) {
		return
	}
	data, err := s.c.Protocol().Spec().MarshalJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
}
