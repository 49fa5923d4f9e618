package cluster

import (
	"errors"
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// Request is one request of a workload, its times in microseconds.
type Request struct {
	Index        int
	ID           string
	ArrivalUS    int64
	PromptTokens model.Tokens
	OutputTokens model.Tokens
	PrefixGroup  string
	PrefixTokens model.Tokens
	// CancelUS is when the client cancels, or -1.
	CancelUS int64
}

// Source streams a workload's requests in arrival order; Next returns
// io.EOF after the last.
type Source interface {
	Next() (Request, error)
}

// Fault is one scheduled fault of a fault plan (its kinds are the
// checker's fault configuration names).
type Fault struct {
	File     string // the plan it came from, for errors
	Line     int
	AtUS     int64
	Kind     string
	Request  int // -1 when the kind names a worker
	Worker   int // -1 when the kind names a request
	To, Side string
	Msg      string
	// After, for a fault aimed at a phase of a request's side: the log
	// kind after which it strikes (a restart: that side's worker
	// restarts).
	After string
	// AfterSide is the side whose logging of After sets the mark, ""
	// for Side itself: a fault may strike one side right after the other
	// side logs a fact (a source's abort as soon as the destination
	// reserved). A restart takes only its own side's facts.
	AfterSide string
}

// ErrInput is wrapped by a workload request or fault the configuration
// cannot run (a prompt larger than a worker, a worker that does not exist).
var ErrInput = errors.New("sim: input does not fit the configuration")

// FactMark is how many of the next facts to each side (or to either) a
// plan loses or duplicates, and which fact it names ("" for any): the
// rule by which every adapter strikes a planned loss or duplicate.
type FactMark struct {
	n      [2]int
	msg    [2]string
	any    int
	anyMsg string
}

// Add marks one more fact: to side to (either when hasTo is false),
// named msg ("" for any).
func (f *FactMark) Add(to model.Side, hasTo bool, msg string) {
	if hasTo {
		f.n[to]++
		f.msg[to] = msg
		return
	}
	f.any++
	f.anyMsg = msg
}

// Take reports whether the fact m, going to side to, is one the mark
// strikes, and spends the mark if so.
func (f *FactMark) Take(to model.Side, m model.Msg) bool {
	if f.n[to] > 0 && (f.msg[to] == "" || f.msg[to] == m.String()) {
		f.n[to]--
		return true
	}
	if f.any > 0 && (f.anyMsg == "" || f.anyMsg == m.String()) {
		f.any--
		return true
	}
	return false
}

// Left is how many facts the mark still strikes.
func (f *FactMark) Left() int { return f.any + f.n[0] + f.n[1] }

// SideNamed reads a side's name in a fault plan: source or destination.
func SideNamed(name string) (model.Side, bool) {
	switch name {
	case "source":
		return model.SourceSide, true
	case "destination":
		return model.DestinationSide, true
	}
	return 0, false
}

// LogHeader is the header of a run's observation log: the routers as one
// process, "router", then "prefill-I" and "decode-J" for the workers
// (process w+1 is cluster worker w), each recording the kinds in records,
// and the configuration.
func (c *Config) LogHeader(records obslog.KindSet) *obslog.Header {
	h := &obslog.Header{Policy: c.policy, Legacy: c.Policy == Disabled && !c.Aggregated, Engine: c.Engine, Config: c.JSON()}
	h.Processes = append(h.Processes, obslog.Process{Name: "router", Role: obslog.RoleRouter, Records: records})
	for w := 0; w < c.NumWorkers(); w++ {
		p := obslog.Process{Name: fmt.Sprintf("prefill-%d", w), Role: obslog.RolePrefill, Records: records}
		if w >= c.Prefill.Workers {
			p = obslog.Process{Name: fmt.Sprintf("decode-%d", w-c.Prefill.Workers), Role: obslog.RoleDecode, Records: records}
		}
		h.Processes = append(h.Processes, p)
	}
	return h
}

// AttemptName is the attempt id of a request's attempt in the run's
// observation log: the request's id (or r and its index), and /N for the
// frontend's N-th retry.
func AttemptName(r *Request, attempt int) string {
	id := r.ID
	if id == "" {
		id = fmt.Sprintf("r%d", r.Index)
	}
	if attempt > 0 {
		id = fmt.Sprintf("%s/%d", id, attempt)
	}
	return id
}
