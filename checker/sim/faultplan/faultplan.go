// Package faultplan reads, writes and draws fault plans: the faults a
// simulation injects, each at a time of the simulator's virtual clock, so
// that a run can be aimed at one race (lose this fact, restart that
// worker at 300 ms) and replayed exactly.
//
// A fault plan is a JSON Lines file, versioned by its header line:
//
//	{"format":"handoffcheck.faults/v1"}
//	{"at_ms":0,"kind":"hang","request":4}
//	{"at_ms":120,"kind":"loss","request":3,"to":"destination","msg":"ReceiveCompleted"}
//	{"at_ms":300,"kind":"restart","worker":2}
//	{"at_ms":0,"kind":"restart","request":5,"side":"destination","after":"transfer_started"}
//
// Faults come in time order (at_ms never decreases). A fault acts on the
// first occasion at or after its time: "loss" loses the next fact sent to
// the request's side "to" (either side when "to" is left out; only facts
// named "msg" when it is given), "duplicate" delivers that fact twice,
// "hang" and "transfer_failure" hit the request's transfer when it runs,
// "delay" makes the side's scheduler core fall behind for the request,
// "evict" evicts what the side keeps cached for it, "abort" has the side
// abort the request on its own, "cancel" has the client cancel it, and
// "restart" restarts the worker, or, given a request, a side and a fact
// "after" (a kind of the observation log), restarts the worker of the
// request's side right after it logs that fact for the request: a restart
// aimed at a phase of a handoff, which every adapter strikes at the same
// point whatever its clock. "cancel", "abort", "delay" and "evict" take
// the same side and after instead of their time: the mark is set when
// that side logs the fact, and strikes where the request next offers it;
// with "after_side" it is set when that other side logs the fact
// instead, so that a fault can strike one side right after its peer
// reached a phase (the source aborts as soon as the destination logs
// "reserved"; a restart takes only its own side's facts). The kinds are the fault configuration
// keys of the checker (system.FaultKinds); which fields each kind takes
// is the table rules. The kinds a plan cannot schedule are refused with
// the reason: reorder, early_timer, no_show and background_load happen in
// a simulation by themselves.
//
// The plan names requests and workers by number; the simulator checks
// them against its workload and configuration, and the fact names of
// "msg" against its vocabulary. Every refusal reads "file:line: ...: what
// is wrong, what was expected" and wraps ErrFaultPlan; no input makes the
// parser panic.
//
// The JSON Schema (draft 2020-12) of both line kinds is
// docs/faults.schema.json ($defs "header" and "fault", with one rule per
// kind), which go generate renders from the table rules (Schema); tests
// hold it fresh and compare it with the parser, so the two cannot drift.
package faultplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// FormatV1 names the fault plan format in the header line.
const FormatV1 = "handoffcheck.faults/v1"

// ErrFaultPlan is wrapped by every refusal of a fault plan.
var ErrFaultPlan = errors.New("faultplan: bad fault plan")

const (
	// MaxLineBytes bounds one line of a plan: 64 KiB, far more than a
	// fault line needs (under 200 bytes).
	MaxLineBytes = 64 << 10
	// MaxPlanBytes bounds a whole plan, which is read whole: 16 MiB, the
	// bound of every input file of the toolkit (jsonfile.MaxFileBytes).
	MaxPlanBytes = jsonfile.MaxFileBytes
	// MaxIndex bounds the request and worker numbers a plan may name.
	MaxIndex = math.MaxInt32
	// MaxMsgBytes bounds the fact name of "msg".
	MaxMsgBytes = 128
)

// Plan is a parsed fault plan.
type Plan struct {
	// Faults in time order.
	Faults []Fault
}

// Fault is one scheduled fault.
type Fault struct {
	// Line is the fault's line in its file (the line Write puts it on,
	// for a drawn plan).
	Line int
	// AtUS is the fault's time, in microseconds of the virtual clock.
	AtUS int64
	// Kind is one of Kinds().
	Kind string
	// Request and Worker are the request and the worker the fault hits,
	// -1 when the kind takes none.
	Request, Worker int
	// To is the side a lost or duplicated fact goes to ("source" or
	// "destination"; "" for either); Side is the side that aborts, falls
	// behind or has its blocks evicted; Msg restricts a lost or
	// duplicated fact to one name ("" for any).
	To, Side, Msg string
	// After is the fact (an observation log kind) after which a fault
	// aimed at a request's side strikes, "" for one placed by time.
	After string
	// AfterSide is the side whose logging of After sets the mark, ""
	// for Side itself: a fault aimed at the other side's phase (the
	// source aborts right after the destination logs "reserved").
	AfterSide string
}

// need says whether a kind takes a field.
type need uint8

const (
	forbidden need = iota
	optional
	required
)

// rule is what one schedulable kind takes.
type rule struct {
	kind                                             string
	request, worker, to, side, msg, after, afterSide need
	// alt is another form of the kind's fields, nil for none.
	alt *rule
}

// rules lists the kinds a plan may schedule, keyed by the checker's fault
// configuration key, in the checker's budget order. It is the one place
// that says which fields each kind takes, derived from the fault table
// (system.FaultKinds): a kind a plan schedules takes a
// request for its move's handoff, a worker and a side for its move's
// worker and side, and, optionally, the side a fact goes to and the
// fact; a kind aimed at a phase (Phase) may instead name a request,
// a side and the fact after which it strikes. Parse, Write, Draw and the
// schema test read it.
var rules = rulesOf()

// notSchedulable says, for each checker fault kind a plan cannot
// schedule, why (the fault table's Unplanned).
var notSchedulable = whyNot()

func rulesOf() []rule {
	var out []rule
	for k := range system.NumFaults {
		kind := &system.FaultKinds[k]
		if kind.Unplanned != "" {
			continue
		}
		r := rule{kind: kind.Config}
		h, worker, side, fact := k.Move().Names()
		if h {
			r.request = required
		}
		if worker {
			r.worker = required
		}
		if side {
			r.side = required
		}
		if fact {
			r.to, r.msg = optional, optional
		}
		if kind.Phase {
			r.alt = &rule{kind: kind.Config, request: required, side: required, after: required}
			if k != system.Restart {
				// A worker restarts at its own phases; the other
				// kinds may strike one side after the other side
				// logs the fact.
				r.alt.afterSide = optional
			}
		}
		out = append(out, r)
	}
	return out
}

func whyNot() map[string]string {
	out := map[string]string{}
	for k := range system.NumFaults {
		if kind := &system.FaultKinds[k]; kind.Unplanned != "" {
			out[kind.Config] = kind.Unplanned
		}
	}
	return out
}

// Kinds lists the kinds a plan may schedule, in the checker's budget
// order.
func Kinds() []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.kind
	}
	return out
}

// NotSchedulable says why a checker fault kind cannot be scheduled in a
// plan, or "" when it can be or is no fault kind.
func NotSchedulable(kind string) string { return notSchedulable[kind] }

func ruleOf(kind string) (*rule, bool) {
	for i := range rules {
		if rules[i].kind == kind {
			return &rules[i], true
		}
	}
	return nil, false
}

// unknownKind says what is wrong with a kind that is not schedulable.
func unknownKind(kind string) string {
	if why := notSchedulable[kind]; why != "" {
		return fmt.Sprintf("kind %q cannot be scheduled in a plan: %s", kind, why)
	}
	return fmt.Sprintf("kind %q is not a fault kind a plan may schedule; want one of %s", kind, strings.Join(Kinds(), ", "))
}

// takes lists, for messages, the fields a kind takes (each form).
func (r *rule) takes() string {
	if r.alt != nil {
		a, b := *r, *r.alt
		a.alt = nil
		return a.takes() + "; or " + b.takes()
	}
	fields := []string{"at_ms", "kind"}
	for _, f := range r.fields() {
		switch f.need {
		case required:
			fields = append(fields, f.name)
		case optional:
			fields = append(fields, f.name+" (optional)")
		}
	}
	return strings.Join(fields, ", ")
}

type ruleField struct {
	name string
	need need
}

// fields lists a kind's needs of every field but at_ms and kind, in
// canonical order.
func (r *rule) fields() []ruleField {
	return []ruleField{{"request", r.request}, {"worker", r.worker}, {"to", r.to}, {"side", r.side}, {"msg", r.msg}, {"after", r.after}, {"after_side", r.afterSide}}
}

// form is the form of a kind's rule that the given fields fit best: the
// one with the fewest required fields missing and forbidden ones given
// (the first of equals), whose refusal is then the one to report.
func (r *rule) form(given func(string) bool) *rule {
	best, bestMiss := r, -1
	for f := r; f != nil; f = f.alt {
		miss := 0
		for _, field := range f.fields() {
			if given(field.name) != (field.need == required) && field.need != optional {
				miss++
			}
		}
		if bestMiss < 0 || miss < bestMiss {
			best, bestMiss = f, miss
		}
	}
	return best
}

// faultLine is the JSON of a fault line. Every field is raw so that each
// is judged here; a field without omitempty is required of every kind.
type faultLine struct {
	AtMS    json.RawMessage `json:"at_ms"`
	Kind    json.RawMessage `json:"kind"`
	Request json.RawMessage `json:"request,omitempty"`
	Worker  json.RawMessage `json:"worker,omitempty"`
	To      json.RawMessage `json:"to,omitempty"`
	Side    json.RawMessage `json:"side,omitempty"`
	Msg     json.RawMessage `json:"msg,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
	// AfterSide is the side whose logging of After sets the mark.
	AfterSide json.RawMessage `json:"after_side,omitempty"`
}

type headerLine struct {
	Format json.RawMessage `json:"format"`
}

const faultExample = `{"at_ms": 120, "kind": "loss", "request": 3}`

// Parse reads a whole fault plan; name is the file name its errors give.
func Parse(r io.Reader, name string) (*Plan, error) {
	p := &parser{name: name}
	lr := &io.LimitedReader{R: r, N: MaxPlanBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes+2)
	plan := &Plan{}
	header := false
	var lastUS int64
	for sc.Scan() {
		p.line++
		if lr.N <= 0 {
			return nil, p.fail("the plan is larger than %d MiB, the most a fault plan may hold", MaxPlanBytes>>20)
		}
		text := sc.Bytes()
		if len(text) > MaxLineBytes {
			return nil, p.fail("the line is longer than %d KiB, the most a fault plan line may hold", MaxLineBytes>>10)
		}
		if len(bytes.TrimSpace(text)) == 0 {
			return nil, p.fail("blank line; want one JSON object per line, without blank lines")
		}
		if !header {
			if err := p.header(text); err != nil {
				return nil, err
			}
			header = true
			continue
		}
		f, err := p.fault(text)
		if err != nil {
			return nil, err
		}
		if len(plan.Faults) > 0 && f.AtUS < lastUS {
			return nil, p.fail("at_ms %s is before the previous fault's at_ms %s; want faults in time order",
				workload.FormatMillis(f.AtUS), workload.FormatMillis(lastUS))
		}
		lastUS = f.AtUS
		plan.Faults = append(plan.Faults, f)
	}
	if err := sc.Err(); err != nil {
		p.line++
		if errors.Is(err, bufio.ErrTooLong) {
			if lr.N <= 0 {
				return nil, p.fail("the plan is larger than %d MiB, the most a fault plan may hold", MaxPlanBytes>>20)
			}
			return nil, p.fail("the line is longer than %d KiB, the most a fault plan line may hold", MaxLineBytes>>10)
		}
		return nil, fmt.Errorf("%s:%d: %w: %w", name, p.line, ErrFaultPlan, err)
	}
	if lr.N <= 0 {
		return nil, p.fail("the plan is larger than %d MiB, the most a fault plan may hold", MaxPlanBytes>>20)
	}
	if !header {
		return nil, fmt.Errorf("%s:1: %w: empty fault plan, want a header line {\"format\": %q}", name, ErrFaultPlan, FormatV1)
	}
	return plan, nil
}

type parser struct {
	name string
	line int
}

func (p *parser) fail(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", p.name, p.line, ErrFaultPlan, fmt.Sprintf(format, args...))
}

// decode decodes one line into v, refusing unknown fields, anything after
// the object and keys given twice.
func (p *parser) decode(text []byte, v any, want string) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return p.fail("malformed JSON: %s; want %s", jsonfile.Clean(err), want)
		}
		return p.fail("%s; want %s", jsonfile.Clean(err), want)
	}
	if rest := bytes.TrimSpace(text[dec.InputOffset():]); len(rest) > 0 {
		return p.fail("%s after the JSON object; want one object per line", strconv.Quote(shown(rest)))
	}
	if _, err := jsonfile.ScanAt(p.name, p.line, text, ErrFaultPlan); err != nil {
		return err
	}
	return nil
}

func (p *parser) header(text []byte) error {
	var h headerLine
	want := fmt.Sprintf("{\"format\": %q} first, then one fault per line", FormatV1)
	if err := p.decode(text, &h, want); err != nil {
		return err
	}
	var format string
	if h.Format == nil || h.Format[0] != '"' || json.Unmarshal(h.Format, &format) != nil {
		return p.fail("the header has no format; want {\"format\": %q} on the first line", FormatV1)
	}
	if format != FormatV1 {
		return p.fail("format %q, want %q", format, FormatV1)
	}
	return nil
}

func (p *parser) fault(text []byte) (Fault, error) {
	var l faultLine
	if err := p.decode(text, &l, "a fault such as "+faultExample); err != nil {
		return Fault{}, err
	}
	f := Fault{Line: p.line, Request: -1, Worker: -1}
	if l.Kind == nil {
		return f, p.fail("no kind; want one of %s", strings.Join(Kinds(), ", "))
	}
	kind, ok := str(l.Kind)
	if !ok {
		return f, p.fail("kind %s, want a string: one of %s", shown(l.Kind), strings.Join(Kinds(), ", "))
	}
	r, ok := ruleOf(kind)
	if !ok {
		return f, p.fail("%s", unknownKind(kind))
	}
	f.Kind = kind
	if l.AtMS == nil {
		return f, p.fail("%s: no at_ms; want the time of the fault in milliseconds (%s takes %s)", kind, kind, r.takes())
	}
	at, why := millis(l.AtMS)
	if why != "" {
		return f, p.fail("%s: at_ms %s", kind, why)
	}
	f.AtUS = at
	raws := map[string]json.RawMessage{"request": l.Request, "worker": l.Worker, "to": l.To, "side": l.Side, "msg": l.Msg, "after": l.After, "after_side": l.AfterSide}
	all := r
	r = r.form(func(name string) bool { return raws[name] != nil })
	for _, field := range r.fields() {
		raw := raws[field.name]
		switch {
		case raw == nil && field.need == required:
			return f, p.fail("%s needs %s (%s takes %s)", kind, field.name, kind, all.takes())
		case raw != nil && field.need == forbidden:
			return f, p.fail("%s does not take %s (%s takes %s)", kind, field.name, kind, all.takes())
		case raw == nil:
			continue
		}
		var why string
		switch field.name {
		case "request":
			f.Request, why = index(raw)
		case "worker":
			f.Worker, why = index(raw)
		case "to":
			f.To, why = side(raw)
		case "side":
			f.Side, why = side(raw)
		case "msg":
			f.Msg, why = msg(raw)
		case "after":
			f.After, why = msg(raw)
		case "after_side":
			f.AfterSide, why = side(raw)
		}
		if why != "" {
			return f, p.fail("%s: %s %s", kind, field.name, why)
		}
	}
	return f, nil
}

// str reads a JSON string.
func str(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// millis reads a time in milliseconds as whole microseconds, or says what
// is wrong with it.
func millis(raw json.RawMessage) (int64, string) {
	want := fmt.Sprintf("want a number of milliseconds from 0 to %d", workload.MaxMillis)
	if !isNumber(raw) {
		return 0, shown(raw) + ", " + want
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, shown(raw) + " is not a finite number, " + want
	}
	us, ok := workload.MillisToMicros(ms)
	if !ok {
		return 0, fmt.Sprintf("%s, want 0 to %d", shown(raw), workload.MaxMillis)
	}
	return us, ""
}

func index(raw json.RawMessage) (int, string) {
	want := fmt.Sprintf("want an integer from 0 to %d", MaxIndex)
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if !isNumber(raw) || err != nil {
		return 0, shown(raw) + ", " + want
	}
	if v < 0 || v > MaxIndex {
		return 0, fmt.Sprintf("%d, want 0 to %d", v, MaxIndex)
	}
	return int(v), ""
}

func side(raw json.RawMessage) (string, string) {
	s, ok := str(raw)
	if !ok || (s != "source" && s != "destination") {
		return "", shown(raw) + `, want "source" or "destination"`
	}
	return s, ""
}

func msg(raw json.RawMessage) (string, string) {
	want := fmt.Sprintf("want the name of a fact, 1 to %d bytes", MaxMsgBytes)
	s, ok := str(raw)
	switch {
	case !ok:
		return "", shown(raw) + ", " + want
	case s == "" || len(s) > MaxMsgBytes:
		return "", fmt.Sprintf("of %d bytes, %s", len(s), want)
	}
	return s, ""
}

// shown is a JSON value of the input as written, cut short when long.
func shown(raw []byte) string {
	const most = 40
	if len(raw) > most {
		return string(raw[:most]) + "..."
	}
	return string(raw)
}

// check says what is wrong with a fault of a plan to be written, or "".
// Write shares the parser's rules, so that it never writes a plan Parse
// refuses.
func check(f *Fault) string {
	r, ok := ruleOf(f.Kind)
	if !ok {
		return unknownKind(f.Kind)
	}
	if f.AtUS < 0 || f.AtUS > workload.MaxMicros {
		return fmt.Sprintf("at_ms %s, want 0 to %d", workload.FormatMillis(f.AtUS), workload.MaxMillis)
	}
	given := map[string]bool{"request": f.Request != -1, "worker": f.Worker != -1, "to": f.To != "", "side": f.Side != "", "msg": f.Msg != "", "after": f.After != "", "after_side": f.AfterSide != ""}
	all := r
	r = r.form(func(name string) bool { return given[name] })
	for _, field := range r.fields() {
		switch {
		case !given[field.name] && field.need == required:
			return fmt.Sprintf("%s needs %s (%s takes %s)", f.Kind, field.name, f.Kind, all.takes())
		case given[field.name] && field.need == forbidden:
			return fmt.Sprintf("%s does not take %s (%s takes %s; a field it does not take is -1 or empty)", f.Kind, field.name, f.Kind, all.takes())
		}
	}
	isSide := func(s string) bool { return s == "" || s == "source" || s == "destination" }
	switch {
	case f.Request < -1 || f.Request > MaxIndex:
		return fmt.Sprintf("request %d, want 0 to %d (or -1 for none)", f.Request, MaxIndex)
	case f.Worker < -1 || f.Worker > MaxIndex:
		return fmt.Sprintf("worker %d, want 0 to %d (or -1 for none)", f.Worker, MaxIndex)
	case !isSide(f.To):
		return fmt.Sprintf(`to %q, want "source" or "destination"`, f.To)
	case !isSide(f.Side):
		return fmt.Sprintf(`side %q, want "source" or "destination"`, f.Side)
	case !isSide(f.AfterSide):
		return fmt.Sprintf(`after_side %q, want "source" or "destination"`, f.AfterSide)
	case len(f.Msg) > MaxMsgBytes:
		return fmt.Sprintf("msg of %d bytes, want at most %d", len(f.Msg), MaxMsgBytes)
	case !utf8.ValidString(f.Msg):
		return "msg is not valid UTF-8"
	case len(f.After) > MaxMsgBytes:
		return fmt.Sprintf("after of %d bytes, want at most %d", len(f.After), MaxMsgBytes)
	case !utf8.ValidString(f.After):
		return "after is not valid UTF-8"
	}
	return ""
}

// Write writes a plan in canonical form: the header, then one line per
// fault with its fields in a fixed order (at_ms, kind, request, worker,
// to, side, msg, after, after_side), times as the shortest decimal of milliseconds. Fault i
// goes on line i+2; Line is ignored. A plan Parse would refuse is refused
// before anything is written.
func Write(w io.Writer, p *Plan) error {
	var last int64
	for i := range p.Faults {
		f := &p.Faults[i]
		why := check(f)
		if why == "" && i > 0 && f.AtUS < last {
			why = fmt.Sprintf("at_ms %s is before the previous fault's at_ms %s; want faults in time order",
				workload.FormatMillis(f.AtUS), workload.FormatMillis(last))
		}
		if why != "" {
			return fmt.Errorf("%w: fault %d: %s", ErrFaultPlan, i, why)
		}
		last = f.AtUS
	}
	b := []byte(`{"format":"` + FormatV1 + `"}` + "\n")
	for _, f := range p.Faults {
		b = append(b, `{"at_ms":`...)
		b = append(b, workload.FormatMillis(f.AtUS)...)
		b = append(b, `,"kind":`...)
		b = appendString(b, f.Kind)
		if f.Request >= 0 {
			b = append(b, `,"request":`...)
			b = strconv.AppendInt(b, int64(f.Request), 10)
		}
		if f.Worker >= 0 {
			b = append(b, `,"worker":`...)
			b = strconv.AppendInt(b, int64(f.Worker), 10)
		}
		for _, kv := range [][2]string{{"to", f.To}, {"side", f.Side}, {"msg", f.Msg}, {"after", f.After}, {"after_side", f.AfterSide}} {
			if kv[1] != "" {
				b = append(b, `,"`+kv[0]+`":`...)
				b = appendString(b, kv[1])
			}
		}
		b = append(b, "}\n"...)
	}
	_, err := w.Write(b)
	return err
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	raw, _ := json.Marshal(s) // a string always marshals
	return append(b, raw...)
}
