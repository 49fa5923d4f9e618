// Package mocker reads logs shaped like the offline replay bookkeeping of
// the dynamo mocker (its DisaggRequestState phases, the scheduler commands
// its OfflineWorkerState applies with their results, its engine passes and
// their completed requests, its KV events) and writes them as an
// observation log (package checker/obslog) that conform judges. It adds no
// semantics: each bookkeeping event becomes the facts it means in the
// contract's vocabulary (docs/conform.md, "The dynamo mocker"), and the
// kinds the mocker cannot show are declared unrecorded, for the judge to
// search.
//
// One difference of accounting matters, and the mapping settles it: the
// mocker counts a prefill out of its worker's in-flight requests when the
// engine pass that computed it completes, while the held source keeps the
// worker from draining until ReleaseSource; the contract counts a held
// source in flight until it is released. A pass completion is therefore
// read as the pin (prefill done, blocks held), not as the end of the
// request on the worker; the release is. The mocker's own in-flight
// figures are carried through and compared with the contract's count
// (Convert's Divergences).
//
// Beside the facts, the conversion judges the mocker by its own rules
// (bookkeeping.go): where it breaks one, Result.Rejection names the line,
// and Fold makes it conform's verdict.
package mocker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// FormatV1 names the bookkeeping log format in its header.
const FormatV1 = "dynamo.mocker.offline-replay/v1"

// ErrMocker is wrapped by every refusal of a bookkeeping log.
var ErrMocker = errors.New("malformed mocker replay log")

// The router processes of a converted log.
const (
	prefillRouter = 0
	decodeRouter  = 1
)

// Records is what a converted log records: the kinds the mocker's
// bookkeeping shows. The others (registrations, the transfer's start and
// end, receipts, leases, deadlines) happen without a line.
var Records = obslog.Of(obslog.Routed, obslog.RequestAccepted, obslog.PrefillDispatched, obslog.Pinned, obslog.Reserved,
	obslog.Activated, obslog.SourceReleased, obslog.PrefillStopped, obslog.ReservationReleased, obslog.DecodeFinished,
	obslog.DecodeReleased, obslog.Cancelled, obslog.OutcomeReported, obslog.Stored, obslog.Removed)

type header struct {
	Format         string `json:"format"`
	Order          string `json:"order"`
	Engine         string `json:"engine"`
	PrefillWorkers int    `json:"prefill_workers"`
	DecodeWorkers  int    `json:"decode_workers"`
	// Workers is the worker count of an aggregated replay, which has no
	// order and no prefill or decode workers.
	Workers int             `json:"workers"`
	Config  json.RawMessage `json:"config"`
}

type event struct {
	TMS     *float64 `json:"t_ms"`
	Event   string   `json:"event"`
	Handoff string   `json:"handoff"`
	// Request is an aggregated request's id, where Handoff is a
	// disaggregated one's.
	Request      string   `json:"request"`
	Worker       *int     `json:"worker"`
	Role         string   `json:"role"`
	Command      string   `json:"command"`
	Result       string   `json:"result"`
	Reserved     *bool    `json:"reserved"`
	Completed    []string `json:"completed"`
	InFlight     *int     `json:"in_flight"`
	InputTokens  int      `json:"input_tokens"`
	OutputTokens int      `json:"output_tokens"`
	Phase        string   `json:"phase"`
	Kind         string   `json:"kind"`
	Blocks       *int64   `json:"blocks"`
	// Priority and StrictPriority are the router priorities of a request,
	// and of the requests a command submits for it.
	Priority       *int `json:"priority"`
	StrictPriority *int `json:"strict_priority"`
	// CountedInFlight is the request's counted_in_flight where the event
	// states it.
	CountedInFlight *bool `json:"counted_in_flight"`
	// KVEvents are the KV events a command's or a pass's effects drained
	// (SchedulerCommandEffects.kv_events): part of the same step.
	KVEvents []kvEvent `json:"kv_events"`
}

// id is the request an event names, disaggregated or aggregated.
func (e *event) id() string {
	if e.Handoff != "" {
		return e.Handoff
	}
	return e.Request
}

type kvEvent struct {
	Kind   string `json:"kind"`
	Blocks *int64 `json:"blocks"`
}

// Divergence is a place where the mocker's in-flight count of a worker
// differs from the contract's: a held source it no longer counts.
type Divergence struct {
	Line          int
	Worker        string
	Mocker, Count int
}

// Result is what a conversion saw beside the facts it wrote.
type Result struct {
	Handoffs int
	// Requests counts the aggregated requests, which make no fact.
	Requests    int
	Divergences []Divergence
	// Rejection is the first place the mocker broke its own bookkeeping
	// rules, Rejections how many there were; Aggregated says the log is
	// of an aggregated replay.
	Rejection  *conform.Rejection
	Rejections int
	Aggregated bool
	// Engine is the header's engine.
	Engine string
}

// handoff is one handoff (or aggregated request) as the conversion
// follows it.
type handoff struct {
	prompt  int64
	p, d    int // process indices, -1 before routing
	pinned  bool
	reserve bool // the destination reserved
	active  bool // the destination activated
	srcDone bool // the source returned what it held
	dstDone bool
	agg     bool // an aggregated request, on worker p
	// pCore and dCore: the request is in the scheduler core of p, of d
	// (accepted, and neither completed by a pass nor cancelled; a held
	// source is outside the core).
	pCore, dCore bool
	line         int // the request event's
	// phase is the rank of the last phase logged (-1 before any), at
	// phaseLine; doneLine is the line of Done.
	phase, phaseLine, doneLine int
	counted                    bool
	uncountedLine              int
	priority, strict           *int
}

type converter struct {
	name string
	h    obslog.Header
	w    *obslog.Writer
	// step is the facts of the event being converted: written together,
	// in the vocabulary's order, which is the order a process logs one
	// step's facts in.
	step []obslog.Fact
	// lines maps the lines written to the lines read: LineOf.
	lines *Lines
	hs    map[string]*handoff
	// held counts, per worker process, the handoffs the contract has in
	// flight there.
	held []int
	// mif is each worker's in-flight count by the mocker's rules, core
	// the requests its scheduler core holds.
	mif, core []int
	// facts counts the facts written.
	facts int
	res   Result
	line  int
	tus   int64
}

// Lines maps the lines of a converted log to the lines of the
// bookkeeping log they come from, so that a verdict names the line the
// mocker wrote. It may be read while the conversion writes.
type Lines struct {
	mu sync.Mutex
	of []int32 // of[i] is the line read for line i+2 written
}

func (l *Lines) add(line int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.of = append(l.of, int32(line))
	l.mu.Unlock()
}

// Of is the line read for a line written (the header is line 1 of both).
func (l *Lines) Of(written int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := written - 2; i >= 0 && i < len(l.of) {
		return int(l.of[i])
	}
	return written
}

// Convert reads a bookkeeping log and writes it as an observation log;
// lines, when not nil, learns where each line written comes from. The
// log of an aggregated replay writes nothing (Sniff tells it apart).
func Convert(r io.Reader, name string, out io.Writer, lines *Lines) (*Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), obslog.MaxLineBytes+2)
	c := &converter{name: name, hs: map[string]*handoff{}, lines: lines}
	first := true
	for sc.Scan() {
		c.line++
		text := sc.Bytes()
		if len(bytes.TrimSpace(text)) == 0 {
			return nil, c.fail("blank line; want one JSON object per line")
		}
		if first {
			first = false
			if err := c.header(text, out); err != nil {
				return nil, err
			}
			continue
		}
		var e event
		if err := decode(text, &e); err != nil {
			return nil, c.fail("%s; want an event such as %s", err, eventExample)
		}
		if _, err := jsonfile.ScanAt(name, c.line, text, ErrMocker); err != nil {
			return nil, err
		}
		if err := c.event(&e); err != nil {
			return nil, err
		}
		if err := c.flush(); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, c.failAt(c.line+1, "the line is longer than %d KiB", obslog.MaxLineBytes>>10)
		}
		return nil, c.failAt(c.line+1, "%v", err)
	}
	if first {
		return nil, c.failAt(1, "empty log, want a header {\"format\": %q, ...}", FormatV1)
	}
	if c.w != nil {
		if err := c.w.Flush(); err != nil {
			return nil, err
		}
	}
	for _, h := range c.hs {
		if h.agg {
			c.res.Requests++
		} else {
			c.res.Handoffs++
		}
	}
	return &c.res, nil
}

// Sniff reads the header of a bookkeeping log and says whether it is an
// aggregated replay's, whose requests hand nothing off and make no fact
// for conform to judge: its books are judged alone (Convert with no
// output needed). The reader it returns reads the whole log again.
func Sniff(r io.Reader) (io.Reader, bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	line, _ := br.ReadSlice('\n')
	line = bytes.Clone(line)
	var h struct {
		Order   string `json:"order"`
		Workers int    `json:"workers"`
	}
	agg := json.Unmarshal(line, &h) == nil && h.Order == "" && h.Workers > 0
	return io.MultiReader(bytes.NewReader(line), br), agg
}

const eventExample = `{"t_ms": 1.5, "event": "command", "role": "prefill", "worker": 0, "command": "SubmitHandoffPrefill", "handoff": "h1", "result": "Submitted", "in_flight": 1}`

func (c *converter) fail(format string, args ...any) error { return c.failAt(c.line, format, args...) }

func (c *converter) failAt(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", c.name, line, ErrMocker, fmt.Sprintf(format, args...))
}

func decode(text []byte, v any) error { return jsonfile.DecodeLine(text, v) }

func (c *converter) header(text []byte, out io.Writer) error {
	var h header
	if err := decode(text, &h); err != nil {
		return c.fail("header: %s; want {\"format\": %q, \"order\": \"SourceFirst\", \"engine\": \"vllm\", \"prefill_workers\": 1, \"decode_workers\": 1}", err, FormatV1)
	}
	if h.Format != FormatV1 {
		return c.fail("format %q, want %q", h.Format, FormatV1)
	}
	agg := h.Order == "" && h.Workers > 0
	switch {
	case agg:
		if h.PrefillWorkers != 0 || h.DecodeWorkers != 0 {
			return c.fail("workers %d with prefill_workers %d and decode_workers %d: an aggregated replay (workers, no order) has no prefill or decode workers", h.Workers, h.PrefillWorkers, h.DecodeWorkers)
		}
		if h.Workers > 64 {
			return c.fail("workers %d, want 1 to 64", h.Workers)
		}
		c.res.Aggregated = true
	case h.Workers != 0:
		return c.fail("workers %d with order %q: workers is an aggregated replay's count, which has no order; a disaggregated one gives prefill_workers and decode_workers", h.Workers, h.Order)
	case h.Order == "SourceFirst":
		c.h.Policy = spec.SourceFirst
	case h.Order == "DestinationFirst":
		c.h.Policy = spec.DestinationFirst
	default:
		return c.fail("order %q, want SourceFirst or DestinationFirst (the mocker's HandoffOrder), or no order and \"workers\": N for an aggregated replay", h.Order)
	}
	e, err := model.ParseEngine(h.Engine)
	if err != nil {
		return c.fail("%v", err)
	}
	c.h.Engine = e
	c.res.Engine = e.String()
	if !agg && (h.PrefillWorkers < 1 || h.PrefillWorkers > 64 || h.DecodeWorkers < 1 || h.DecodeWorkers > 64) {
		return c.fail("prefill_workers %d and decode_workers %d, want 1 to 64 each", h.PrefillWorkers, h.DecodeWorkers)
	}
	// The mocker's two routers choose independently (under
	// destination-first the decode router chooses first): two processes,
	// each with its own order.
	c.h.Processes = append(c.h.Processes, obslog.Process{Name: "prefill-router", Role: obslog.RoleRouter, Records: Records},
		obslog.Process{Name: "decode-router", Role: obslog.RoleRouter, Records: Records})
	for i := 0; i < h.PrefillWorkers; i++ {
		c.h.Processes = append(c.h.Processes, obslog.Process{Name: fmt.Sprintf("prefill-%d", i), Role: obslog.RolePrefill, Records: Records})
	}
	for i := 0; i < h.DecodeWorkers; i++ {
		c.h.Processes = append(c.h.Processes, obslog.Process{Name: fmt.Sprintf("decode-%d", i), Role: obslog.RoleDecode, Records: Records})
	}
	// An aggregated worker runs prefill and decode of its own requests,
	// which make no fact of the contract's (they hand nothing off): it is
	// a process of the log only so that the header names it.
	for i := 0; i < h.Workers; i++ {
		c.h.Processes = append(c.h.Processes, obslog.Process{Name: fmt.Sprintf("worker-%d", i), Role: obslog.RoleDecode, Records: Records})
	}
	if len(h.Config) > 0 && string(h.Config) != "null" {
		c.h.Config = h.Config
		if why := obslog.ConfigDisagrees(&c.h); why != "" {
			return c.fail("%s", strings.Replace(why, "the header's", "the header's (order and engine)", 1))
		}
	}
	c.held = make([]int, len(c.h.Processes))
	c.mif = make([]int, len(c.h.Processes))
	c.core = make([]int, len(c.h.Processes))
	if agg {
		// Nothing of an aggregated replay is the contract's: it writes
		// no observation log.
		return nil
	}
	c.w, err = obslog.NewWriter(out, &c.h)
	return err
}

// proc is the process of a worker, by role and index.
func (c *converter) proc(e *event) (int, error) {
	if e.Worker == nil || (e.Role != "prefill" && e.Role != "decode" && e.Role != "aggregated") {
		return 0, c.fail("%s needs \"role\": \"prefill\", \"decode\" or \"aggregated\" and \"worker\": its index", e.Event)
	}
	name := fmt.Sprintf("%s-%d", strings.Replace(e.Role, "aggregated", "worker", 1), *e.Worker)
	i := slices.IndexFunc(c.h.Processes, func(p obslog.Process) bool { return p.Name == name })
	if i < 0 {
		return 0, c.fail("no %s worker %d in the header", e.Role, *e.Worker)
	}
	return i, nil
}

func (c *converter) handoff(e *event) (*handoff, error) {
	if (e.Handoff == "") == (e.Request == "") {
		return nil, c.fail("%s needs \"handoff\": the handoff id (or, in an aggregated replay, \"request\": the request id)", e.Event)
	}
	h := c.hs[e.id()]
	if h == nil {
		return nil, c.fail("request %q has no request event before it", e.id())
	}
	if h.agg != (e.Request != "") {
		return nil, c.fail("%q is %s, named by %q", e.id(), h.kind(c.h.Policy), map[bool]string{true: "handoff", false: "request"}[e.Handoff != ""])
	}
	return h, nil
}

// emit adds one fact of a handoff by a process to the step.
func (c *converter) emit(id string, proc int, k obslog.Kind, set func(*obslog.Fact)) error {
	f := obslog.Fact{Proc: proc, Attempt: id, Kind: k, TUS: c.tus, To: -1}
	if set != nil {
		set(&f)
	}
	c.step = append(c.step, f)
	return nil
}

// flush writes the step's facts, each process's in the vocabulary's
// order.
func (c *converter) flush() error {
	slices.SortStableFunc(c.step, func(x, y obslog.Fact) int {
		if x.Proc != y.Proc {
			return 0
		}
		return int(x.Kind) - int(y.Kind)
	})
	for i := range c.step {
		if err := c.w.Write(&c.step[i]); err != nil {
			return err
		}
		c.lines.add(c.line)
	}
	c.facts += len(c.step)
	c.step = c.step[:0]
	return nil
}

// kvEvents adds the KV events of a step.
func (c *converter) kvEvents(id string, proc int, evs []kvEvent) error {
	for _, kv := range evs {
		k := map[string]obslog.Kind{"stored": obslog.Stored, "removed": obslog.Removed}[kv.Kind]
		if k == 0 {
			return c.fail("kv event kind %q, want stored or removed", kv.Kind)
		}
		c.emit(id, proc, k, func(f *obslog.Fact) {
			if kv.Blocks != nil && *kv.Blocks >= 0 {
				f.Blocks, f.Has = *kv.Blocks, 1<<obslog.FigBlocks
			}
		})
	}
	return nil
}

func (c *converter) event(e *event) error {
	c.tus = -1
	if e.TMS != nil {
		if *e.TMS < 0 {
			return c.fail("t_ms %v, want a time from 0", *e.TMS)
		}
		c.tus = int64(*e.TMS * 1000)
	}
	if (e.Priority != nil || e.StrictPriority != nil) && e.Event != "request" && e.Event != "receive" &&
		(e.Event != "command" || !slices.Contains([]string{"Submit", "SubmitHandoffPrefill", "ReserveDestination"}, e.Command)) {
		return c.fail("priority and strict_priority belong to a request event and to what submits its requests (receive, Submit, SubmitHandoffPrefill, ReserveDestination)")
	}
	switch e.Event {
	case "request":
		agg := c.res.Aggregated
		id, other := e.Handoff, e.Request
		if agg {
			id, other = other, id
		}
		if id == "" || other != "" || c.hs[id] != nil {
			return c.fail("request needs a new %q id (%s)", map[bool]string{false: "handoff", true: "request"}[agg],
				map[bool]string{false: "a disaggregated replay's requests are handoffs", true: "an aggregated replay's requests are not handoffs"}[agg])
		}
		if e.InputTokens < 1 {
			return c.fail("request needs \"input_tokens\" from 1")
		}
		h := &handoff{prompt: int64(e.InputTokens), p: -1, d: -1, agg: agg, line: c.line, phase: -1, counted: true, priority: e.Priority, strict: e.StrictPriority}
		c.hs[id] = h
		if !agg {
			c.counted(e, h, true)
		} else if e.CountedInFlight != nil {
			return c.fail("counted_in_flight on an aggregated request: it is a disaggregated request's")
		}
		return nil
	case "command":
		return c.command(e)
	case "receive":
		return c.receive(e)
	case "pass":
		return c.pass(e)
	case "lifecycle":
		return c.lifecycle(e)
	case "kv":
		return c.kv(e)
	case "phase":
		// The request's phases restate what the commands and passes
		// say; they make no fact of the contract's, and are judged
		// against the lifecycle.
		h, err := c.handoff(e)
		if err != nil {
			return err
		}
		if err := c.countedOn(e, h); err != nil {
			return err
		}
		return c.phase(e, h)
	}
	return c.fail("event %q, want request, command, receive, pass, lifecycle, kv or phase", e.Event)
}

// countedOn judges the counted_in_flight an event states of its request.
func (c *converter) countedOn(e *event, h *handoff) error {
	if e.CountedInFlight != nil && h.agg {
		return c.fail("counted_in_flight on an aggregated request: it is a disaggregated request's")
	}
	c.counted(e, h, false)
	return nil
}

// procAndHandoff is the worker and the handoff an event names.
func (c *converter) procAndHandoff(e *event) (int, *handoff, error) {
	p, err := c.proc(e)
	if err != nil {
		return 0, nil, err
	}
	h, err := c.handoff(e)
	return p, h, err
}

func (c *converter) command(e *event) error {
	p, h, err := c.procAndHandoff(e)
	if err != nil {
		return err
	}
	id := e.id()
	if err := c.countedOn(e, h); err != nil {
		return err
	}
	if h.agg {
		return c.aggCommand(e, h, p)
	}
	want := map[string][]string{
		"SubmitHandoffPrefill": {"Submitted"},
		"ReserveDestination":   {"DestinationAccepted"},
		"CancelSource":         {"Applied", "Noop"},
		"CancelDestination":    {"Applied", "Noop"},
		"ReleaseSource":        {"Applied", "Noop"},
		"ActivateDestination":  {"Applied", "Noop"},
	}
	results, ok := want[e.Command]
	if !ok {
		return c.fail("command %q, want one of SubmitHandoffPrefill, ReserveDestination, CancelSource, CancelDestination, ReleaseSource, ActivateDestination (or Submit in an aggregated replay)", e.Command)
	}
	if !slices.Contains(results, e.Result) {
		return c.fail("%s answered %q, want %s", e.Command, e.Result, strings.Join(results, " or "))
	}
	role := c.h.Processes[p].Role
	if (strings.HasSuffix(e.Command, "Source") || e.Command == "SubmitHandoffPrefill") != (role == obslog.RolePrefill) {
		return c.fail("%s goes to a %s worker, not to %s", e.Command, map[bool]string{true: "prefill", false: "decode"}[role != obslog.RolePrefill], c.h.Processes[p].Name)
	}
	failed := func(f *obslog.Fact) { f.Outcome, f.Has = model.OutcomeFailed, f.Has|1<<obslog.FigOutcome }
	ok2 := func(f *obslog.Fact) { f.Outcome, f.Has = model.OutcomeOK, f.Has|1<<obslog.FigOutcome }
	var emitErr error
	do := func(proc int, k obslog.Kind, set func(*obslog.Fact)) {
		if emitErr == nil {
			emitErr = c.emit(id, proc, k, set)
		}
	}
	switch e.Command {
	case "SubmitHandoffPrefill":
		h.p = p
		do(0, obslog.Routed, func(f *obslog.Fact) {
			f.Stage, f.To, f.PromptTokens, f.Has = model.SourceSide, p, h.prompt, 1<<obslog.FigStage
		})
		do(p, obslog.RequestAccepted, nil)
		do(p, obslog.PrefillDispatched, nil)
		c.held[p]++
	case "ReserveDestination":
		h.d = p
		do(decodeRouter, obslog.Routed, func(f *obslog.Fact) {
			f.Stage, f.To, f.Has = model.DestinationSide, p, 1<<obslog.FigStage
			if h.p < 0 {
				f.PromptTokens = h.prompt
			}
		})
		do(p, obslog.RequestAccepted, nil)
		if e.Reserved == nil || *e.Reserved {
			h.reserve = true
			do(p, obslog.Reserved, nil)
		}
		c.held[p]++
	case "CancelSource":
		if e.Result != "Applied" {
			break
		}
		if !h.srcDone {
			do(p, obslog.Cancelled, nil)
		}
		if h.pinned {
			do(p, obslog.SourceReleased, nil)
		} else {
			do(p, obslog.PrefillStopped, nil)
		}
		do(p, obslog.OutcomeReported, failed)
		c.finish(h, p, &h.srcDone)
	case "CancelDestination":
		if e.Result != "Applied" {
			break
		}
		if !h.dstDone {
			do(p, obslog.Cancelled, nil)
		}
		switch {
		case h.active:
			do(p, obslog.DecodeReleased, nil)
			do(p, obslog.OutcomeReported, ok2) // it activated: the handoff itself succeeded
		case h.reserve:
			do(p, obslog.ReservationReleased, nil)
			do(p, obslog.OutcomeReported, failed)
		default:
			do(p, obslog.OutcomeReported, failed)
		}
		c.finish(h, p, &h.dstDone)
	case "ReleaseSource":
		if e.Result == "Applied" {
			do(p, obslog.SourceReleased, nil)
			do(p, obslog.OutcomeReported, ok2)
			c.finish(h, p, &h.srcDone)
		}
	case "ActivateDestination":
		if e.Result == "Applied" {
			h.active = true
			do(p, obslog.Activated, nil)
		}
	}
	if emitErr != nil {
		return emitErr
	}
	if err := c.kvEvents(id, p, e.KVEvents); err != nil {
		return err
	}
	if e.Result != "Noop" {
		c.afterDone(e, h, c.h.Processes[p].Name)
	}
	if e.Command == "SubmitHandoffPrefill" || e.Command == "ReserveDestination" {
		c.priorities(e, h, c.h.Processes[p].Name)
	}
	// The mocker's rules (apply_command): an accepted submission or
	// reservation +1 and into the core; an applied CancelDestination -1;
	// an applied CancelSource minus what it removed from the core (its
	// request if the prefill had not completed, else nothing); release
	// and activation 0.
	delta, coreDelta := 0, 0
	switch {
	case e.Result == "Submitted":
		delta, coreDelta, h.pCore = 1, 1, true
	case e.Result == "DestinationAccepted":
		delta, coreDelta, h.dCore = 1, 1, true
	case e.Command == "CancelDestination" && e.Result == "Applied":
		delta = -1
		if h.dCore && h.d == p {
			coreDelta, h.dCore = -1, false
		}
	case e.Command == "CancelSource" && e.Result == "Applied":
		if h.pCore && h.p == p {
			delta, coreDelta, h.pCore = -1, -1, false
		}
	}
	c.account(e, id, p, delta, coreDelta)
	return c.inFlight(e, p)
}

// aggCommand is a command of an aggregated replay: the request submitted
// to a worker, in flight and in its core until a pass completes it.
func (c *converter) aggCommand(e *event, h *handoff, p int) error {
	if e.Command != "Submit" || e.Result != "Submitted" {
		return c.fail("command %q answered %q in an aggregated replay, want Submit answered Submitted", e.Command, e.Result)
	}
	return c.aggSubmit(e, h, p)
}

// receive is an ordinary request taken by a worker on the receive path
// (receive_request), which counts it in flight as Submit does.
func (c *converter) receive(e *event) error {
	p, h, err := c.procAndHandoff(e)
	if err != nil {
		return err
	}
	if !h.agg {
		return c.fail("receive of handoff %q: a disaggregated request is submitted with SubmitHandoffPrefill and ReserveDestination; receive is an aggregated request's path", e.id())
	}
	if e.CountedInFlight != nil {
		return c.fail("counted_in_flight on an aggregated request: it is a disaggregated request's")
	}
	return c.aggSubmit(e, h, p)
}

func (c *converter) aggSubmit(e *event, h *handoff, p int) error {
	if len(e.KVEvents) > 0 {
		return c.fail("kv_events in an aggregated replay: its requests hand nothing off, and their KV events are not judged")
	}
	c.afterDone(e, h, c.h.Processes[p].Name)
	c.priorities(e, h, c.h.Processes[p].Name)
	h.p, h.pCore = p, true
	c.account(e, e.id(), p, 1, 1)
	return nil
}

// finish ends a side on its worker. A side the mocker finalizes again
// (the late-cancel double finalize: a CancelDestination applied after the
// decode pass completed, a ReleaseSource applied twice) releases what it
// held and reports its outcome again; that second release and outcome are
// written as the facts they are, for the judge to refuse
// (ExactlyOnceRelease). The cancel itself is not: a finished side ignores
// a cancel in the tables, and a row that ignores an event makes nothing
// observable; what the mocker got wrong is the release. The contract
// counts the side out of its worker's in-flight requests once.
func (c *converter) finish(h *handoff, p int, done *bool) {
	if *done {
		return
	}
	*done = true
	c.held[p]--
}

// inFlight compares the mocker's in-flight count of a worker, where the
// event gives it, with the contract's.
func (c *converter) inFlight(e *event, p int) error {
	if e.InFlight == nil || c.res.Aggregated {
		// An aggregated replay has no handoff the contract counts.
		return nil
	}
	if *e.InFlight < 0 {
		return c.fail("in_flight %d, want a count from 0", *e.InFlight)
	}
	if *e.InFlight != c.held[p] {
		c.res.Divergences = append(c.res.Divergences, Divergence{Line: c.line, Worker: c.h.Processes[p].Name, Mocker: *e.InFlight, Count: c.held[p]})
	}
	return nil
}

// pass is an engine pass: a prefill worker's completed handoffs are
// pinned, a decode worker's decoded.
func (c *converter) pass(e *event) (err error) {
	p, err := c.proc(e)
	if err != nil {
		return err
	}
	if e.CountedInFlight != nil || e.Priority != nil || e.StrictPriority != nil {
		return c.fail("a pass states no counted_in_flight or priority: they are a request's")
	}
	// The mocker's rules: a pass counts its completed requests out of the
	// worker's in-flight (mark_completed), and they leave its core (a
	// completed prefill becomes a held source, outside the core).
	coreDelta := 0
	defer func() {
		if err == nil {
			c.account(e, strings.Join(e.Completed, " "), p, -len(e.Completed), coreDelta)
		}
	}()
	for _, id := range e.Completed {
		h := c.hs[id]
		if h == nil {
			return c.fail("pass completes request %q, which has no request event", id)
		}
		c.afterDone(e, h, c.h.Processes[p].Name)
		if h.agg {
			if h.pCore && h.p == p {
				coreDelta, h.pCore = coreDelta-1, false
			}
			continue
		}
		if c.h.Processes[p].Role == obslog.RolePrefill {
			if h.pCore && h.p == p {
				coreDelta, h.pCore = coreDelta-1, false
			}
			h.pinned = true
			if err := c.emit(id, p, obslog.Pinned, nil); err != nil {
				return err
			}
			continue
		}
		if h.dCore && h.d == p {
			coreDelta, h.dCore = coreDelta-1, false
		}
		for _, k := range []obslog.Kind{obslog.DecodeFinished, obslog.DecodeReleased} {
			if err := c.emit(id, p, k, nil); err != nil {
				return err
			}
		}
		if err := c.emit(id, p, obslog.OutcomeReported, func(f *obslog.Fact) { f.Outcome, f.Has = model.OutcomeOK, 1<<obslog.FigOutcome }); err != nil {
			return err
		}
		c.finish(h, p, &h.dstDone)
	}
	if len(e.KVEvents) > 0 {
		if c.res.Aggregated {
			return c.fail("kv_events in an aggregated replay: its requests hand nothing off, and their KV events are not judged")
		}
		if len(e.Completed) != 1 {
			return c.fail("a pass's kv_events belong to one completed handoff; this pass completes %d", len(e.Completed))
		}
		if err := c.kvEvents(e.Completed[0], p, e.KVEvents); err != nil {
			return err
		}
	}
	return c.inFlight(e, p)
}

// lifecycle is a scheduler lifecycle event: a pending destination that
// reserved when capacity came back.
func (c *converter) lifecycle(e *event) error {
	p, h, err := c.procAndHandoff(e)
	if err != nil {
		return err
	}
	if e.Kind != "DestinationReserved" {
		return c.fail("lifecycle kind %q, want DestinationReserved", e.Kind)
	}
	if h.agg {
		return c.fail("lifecycle %s of an aggregated request: it has no destination", e.Kind)
	}
	if err := c.countedOn(e, h); err != nil {
		return err
	}
	c.afterDone(e, h, c.h.Processes[p].Name)
	h.reserve = true
	return c.emit(e.Handoff, p, obslog.Reserved, nil)
}

// kv is a KV event the worker published for a handoff's blocks.
func (c *converter) kv(e *event) error {
	p, h, err := c.procAndHandoff(e)
	if err != nil {
		return err
	}
	if h.agg {
		return c.fail("kv event of an aggregated request: its requests hand nothing off, and their KV events are not judged")
	}
	if err := c.countedOn(e, h); err != nil {
		return err
	}
	return c.kvEvents(e.Handoff, p, []kvEvent{{Kind: e.Kind, Blocks: e.Blocks}})
}
