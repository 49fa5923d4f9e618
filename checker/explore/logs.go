package explore

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/repro"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Logs is one or more observation logs of a running system with conform's
// judgement of them, as the page draws them: a lane per process, the facts
// along a shared axis, and the explanation's steps of a rejected attempt,
// the ones nobody logged apart from the logged ones.
type Logs struct {
	Files     []string     `json:"files"`
	Policy    string       `json:"policy"`
	Engine    string       `json:"engine"`
	Processes []LogProcess `json:"processes"`
	// Axis is "time" when every fact carries a time stamp (positions are
	// microseconds), else "order" (the order the judge read the facts in).
	Axis  string    `json:"axis"`
	Facts []LogFact `json:"facts"`
	// Verdict and Rejection are conform's.
	Verdict   string             `json:"verdict"`
	Rejection *conform.Rejection `json:"rejection,omitempty"`
	// Explanation is the rejected attempt's explained prefix in the order
	// the judge explained it: logged facts by their place in the logs,
	// and the steps the judge supplied because no process logged them.
	Explanation []ExplainedStep `json:"explanation,omitempty"`
	// Furthest is the state the rejected attempt's furthest explanation
	// reached, in the attempt's own world (its prefill and decode worker,
	// its one handoff), rendered as the run pages render states; Why
	// says why it is missing when it is.
	Furthest    []string `json:"furthest,omitempty"`
	FurthestWhy string   `json:"furthest_why,omitempty"`
	// From is the logs' format: "handoffcheck" (handoffcheck.log/v1) or
	// "mocker" (the dynamo mocker's offline replay bookkeeping, converted
	// as conform --from mocker converts it; lines are the mocker's).
	From string `json:"from"`
	// Mocker is, for mocker logs, what the conversion saw beside the
	// facts: the mocker's books and whether the rejection is theirs.
	Mocker *MockerBooks `json:"mocker,omitempty"`
}

// MockerBooks is the dynamo mocker's bookkeeping as conform --from mocker
// reports it beside the verdict.
type MockerBooks struct {
	Handoffs int `json:"handoffs"`
	// Divergences counts the events where the mocker's in-flight count
	// of a worker differs from the contract's (a held source it no longer
	// counts), and Rejections the places it broke its own rules.
	Divergences int `json:"in_flight_divergences"`
	Rejections  int `json:"bookkeeping_rejections"`
	// RejectionIsTheirs says the verdict's rejection is the mocker's own
	// rules' (the contract explained every fact).
	RejectionIsTheirs bool `json:"rejection_is_bookkeeping"`
}

// LogProcess is a lane.
type LogProcess struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// LogFact is one logged fact.
type LogFact struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Proc    int    `json:"proc"`
	Attempt string `json:"attempt,omitempty"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	// At is the fact's place on the axis.
	At int64 `json:"at"`
	// Rejected marks the fact the judgement rejects.
	Rejected bool `json:"rejected,omitempty"`
}

// ExplainedStep is one step of an explained prefix: a logged fact
// (Where names it) or a step the judge supplied.
type ExplainedStep struct {
	Where    string `json:"where,omitempty"`
	Text     string `json:"text"`
	Supplied bool   `json:"supplied,omitempty"`
}

// LogInput is a log's name and content.
type LogInput struct {
	Name string
	Data []byte
}

// JudgeLogs reads the logs, judges them with conform under opt, and lays
// them out for the page. A log conform cannot read is an error naming its
// file and line.
func JudgeLogs(in []LogInput, opt conform.Options) (*Logs, error) {
	return judgeLogs(in, nil, opt, nil)
}

// judgeLogs judges observation logs; lineOf, when set, maps each log's
// lines to the lines of the file it was converted from, and fold, when
// set, adds to the report before it is laid out.
func judgeLogs(in []LogInput, lineOf []func(int) int, opt conform.Options, fold func(*conform.Report)) (*Logs, error) {
	inputs := make([]conform.Input, len(in))
	for i, x := range in {
		inputs[i] = conform.Input{Name: x.Name, R: bytes.NewReader(x.Data)}
		if lineOf != nil {
			inputs[i].LineOf = lineOf[i]
		}
	}
	rep, err := conform.Judge(inputs, opt)
	if err != nil {
		return nil, err
	}
	if fold != nil {
		fold(rep)
	}
	out := &Logs{Files: rep.Files, Policy: rep.Policy, Engine: rep.Engine, Verdict: rep.Verdict, Rejection: rep.Rejection, Axis: "time", From: "handoffcheck"}
	for i, x := range in {
		rd, err := obslog.NewReader(bytes.NewReader(x.Data), x.Name)
		if err != nil {
			return nil, err
		}
		h := rd.Header()
		if i == 0 {
			for _, p := range h.Processes {
				out.Processes = append(out.Processes, LogProcess{Name: p.Name, Role: p.Role.String()})
			}
		}
		for {
			f, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			line := f.Line
			if lineOf != nil {
				line = lineOf[i](f.Line)
			}
			lf := LogFact{File: f.File, Line: line, Proc: f.Proc, Attempt: f.Attempt, Kind: f.Kind.String(),
				Text: conform.Describe(h, &f), At: f.TUS}
			if f.TUS < 0 {
				out.Axis = "order"
			}
			out.Facts = append(out.Facts, lf)
		}
	}
	markRejected(out.Facts, out.Processes, rep.Rejection)
	if out.Axis == "order" {
		// Without time stamps everywhere, the logs' own order: one log's
		// lines after another's, each process's in its order.
		for i := range out.Facts {
			out.Facts[i].At = int64(i + 1)
		}
	}
	if r := rep.Rejection; r != nil {
		for _, e := range r.Explained {
			out.Explanation = append(out.Explanation, explainedStep(e))
		}
		out.Furthest, out.FurthestWhy = furthest(r.Trace, opt.Protocol)
	}
	return out, nil
}

// markRejected marks the rejected fact. A converted log may make several
// facts of one line: the one the rejection describes is marked, or, when
// it describes the line rather than a fact (a rule of the mocker's own
// books, "decode-0 h1: ReserveDestination → ..."), the line's facts on
// the process it names (every fact of the line when it names none).
func markRejected(facts []LogFact, procs []LogProcess, r *conform.Rejection) {
	if r == nil {
		return
	}
	at := func(f *LogFact) bool { return f.File == r.File && f.Line == r.Line }
	exact, proc := false, -1
	for i := range facts {
		exact = exact || at(&facts[i]) && facts[i].Text == r.Fact
	}
	for i, p := range procs {
		if strings.HasPrefix(r.Fact, p.Name+" ") {
			proc = i
		}
	}
	for i := range facts {
		f := &facts[i]
		switch {
		case exact:
			f.Rejected = at(f) && f.Text == r.Fact
		case proc >= 0:
			f.Rejected = at(f) && f.Proc == proc
		default:
			f.Rejected = at(f)
		}
	}
}

// furthest replays a rejected attempt's explanation in the attempt's own
// world and renders the state it reaches.
func furthest(t *conform.RejectionTrace, p *system.Protocol) ([]string, string) {
	if t == nil {
		return nil, "no explanation of the attempt reached the rejected fact"
	}
	if t.ConfigJSON == nil {
		return nil, t.Why
	}
	cfg, err := system.ParseConfig("the attempt's world", t.ConfigJSON)
	if err != nil {
		return nil, err.Error()
	}
	runs, err := checker.SelectRuns(cfg, []string{t.Run}, nil)
	if err != nil {
		return nil, err.Error()
	}
	if p == nil {
		p = system.Generated()
	}
	c, err := checker.New(p, cfg, runs[0])
	if err != nil {
		return nil, err.Error()
	}
	moves := repro.ExplanationMoves(c, t.Moves)
	if moves == nil && len(t.Moves) > 0 {
		return nil, "the explanation does not replay in the attempt's world as a configuration file gives it"
	}
	sess := c.Initial()
	for _, m := range moves {
		if _, err := c.Apply(&sess, m); err != nil {
			return nil, err.Error()
		}
	}
	return c.DescribeState(&sess), ""
}

// explainedStep reads a line of a rejection's explained prefix: "unlogged:
// MOVE" for a step the judge supplied, "file:line TEXT" for a logged fact.
func explainedStep(line string) ExplainedStep {
	const unlogged = "unlogged: "
	if len(line) > len(unlogged) && line[:len(unlogged)] == unlogged {
		return ExplainedStep{Text: line[len(unlogged):], Supplied: true}
	}
	for i := 0; i < len(line); i++ {
		if line[i] == ' ' {
			return ExplainedStep{Where: line[:i], Text: line[i+1:]}
		}
	}
	return ExplainedStep{Text: line}
}

// NewLogs makes a server that shows judged logs.
func NewLogs(l *Logs, title string) *Server {
	s := newServer(title)
	s.logs = l
	return s
}

func (s *Server) serveLogs(w http.ResponseWriter, _ *http.Request) {
	if s.logs == nil {
		http.Error(w, "no logs: the explorer was started on a run", http.StatusNotFound)
		return
	}
	writeJSON(w, s.logs)
}

func (s *Server) noRun(w http.ResponseWriter) bool {
	if s.c != nil {
		return false
	}
	http.Error(w, fmt.Sprintf("no run: the explorer was started on %d logs", len(s.logs.Files)), http.StatusNotFound)
	return true
}
