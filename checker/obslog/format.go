package obslog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// SchemaV1 names the format.
const SchemaV1 = "handoffcheck.log/v1"

// ErrLog is wrapped by every refusal of a log.
var ErrLog = errors.New("malformed observation log")

// MaxLineBytes bounds one line: the header may carry a configuration.
const MaxLineBytes = 256 << 10

// MaxProcesses bounds the processes a header names.
const MaxProcesses = 256

// Role is a process's role.
type Role uint8

const (
	RoleRouter Role = iota
	RolePrefill
	RoleDecode
)

var roleNames = [...]string{"router", "prefill", "decode"}

func (r Role) String() string { return roleNames[r] }

// Process is one process a header names.
type Process struct {
	Name string
	Role Role
	// Records is the kinds the process logs; a fact of another kind
	// happens without a line (partial observability).
	Records KindSet
}

// LegacyPolicy is the header's policy of a log written on the legacy
// disaggregated path (the handoff design's HandoffPolicy::Disabled, the
// policy "disabled" of simulate and live).
const LegacyPolicy = "disabled"

// Header is a log's first line.
type Header struct {
	// Policy is the lifecycle's policy, unless Legacy.
	Policy spec.Policy
	// Legacy: the log was written on the legacy disaggregated path
	// (policy LegacyPolicy), which pins and reserves nothing across the
	// handoff: the lifecycle's contract does not apply to it, and Policy
	// means nothing.
	Legacy    bool
	Engine    model.Engine
	Processes []Process
	// Config is the cluster's configuration (a handoffcheck.sim/v1
	// object), or nil.
	Config json.RawMessage
}

// PolicyName is the header's policy as the log writes it.
func (h *Header) PolicyName() string {
	if h.Legacy {
		return LegacyPolicy
	}
	return h.Policy.String()
}

// Process finds a process by name.
func (h *Header) Process(name string) (int, bool) {
	for i := range h.Processes {
		if h.Processes[i].Name == name {
			return i, true
		}
	}
	return -1, false
}

// Fact is one observed fact: a line after the header.
type Fact struct {
	File string
	Line int
	// Seq is the order a reader of several logs took the fact in.
	Seq int

	Proc    int // index in the header's processes
	Gen     int64
	Attempt string
	Kind    Kind
	// TUS is the process's own time stamp in microseconds, or -1.
	TUS int64
	// Routed: the stage (SourceSide: prefill) and the worker chosen.
	Stage model.Side
	To    int
	// Figures, present when Has says so.
	Has                                   uint16 // bit per Figure
	Blocks, Pages, Slot, Headroom, Tokens int64
	Outcome                               model.Outcome
	Timer                                 model.Timer
	// PromptTokens and PrefixHitTokens size the attempt (0: not given).
	PromptTokens, PrefixHitTokens int64
	// AdoptedBlocks and Canonical, on an activated fact only: at
	// activation the destination adopted the canonical blocks of the
	// attempt Canonical, which it holds active, for AdoptedBlocks blocks
	// of the received prompt prefix, and freed its received duplicates
	// (model.EngineTraits.Duplicates: vLLM). 0 and "": it adopted none.
	AdoptedBlocks int64
	Canonical     string
}

// HasFigure reports whether the line gives a figure.
func (f *Fact) HasFigure(g Figure) bool { return f.Has&(1<<g) != 0 }

// Where is "file:line".
func (f *Fact) Where() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

type headerLine struct {
	Schema    *string         `json:"schema"`
	Policy    string          `json:"policy"`
	Engine    string          `json:"engine"`
	Processes []processLine   `json:"processes"`
	Records   *recordsLine    `json:"records"`
	Config    json.RawMessage `json:"config"`
}

type processLine struct {
	Name    string       `json:"name"`
	Role    string       `json:"role"`
	Records *recordsLine `json:"records"`
}

// recordsLine is a header's records: "all" or "milestones" as a string
// (as docs/conform.md writes them), or a list of those or of kinds.
type recordsLine []string

func (r *recordsLine) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s != "all" && s != "milestones" {
			return fmt.Errorf("records %q; want \"all\", \"milestones\" or a list of kinds", s)
		}
		*r = recordsLine{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return errors.New("records: want \"all\", \"milestones\" or a list of kinds")
	}
	*r = l
	return nil
}

type factLine struct {
	Proc            *string `json:"proc"`
	Gen             *int64  `json:"gen"`
	Attempt         *string `json:"attempt"`
	Kind            *string `json:"kind"`
	TUS             *int64  `json:"t_us"`
	Stage           *string `json:"stage"`
	To              *string `json:"to"`
	Blocks          *int64  `json:"blocks"`
	Pages           *int64  `json:"pages"`
	Slot            *int64  `json:"slot"`
	Headroom        *int64  `json:"headroom"`
	Tokens          *int64  `json:"tokens"`
	Outcome         *string `json:"outcome"`
	Timer           *string `json:"timer"`
	PromptTokens    *int64  `json:"prompt_tokens"`
	PrefixHitTokens *int64  `json:"prefix_hit_tokens"`
	AdoptedBlocks   *int64  `json:"adopted_blocks"`
	Canonical       *string `json:"canonical"`
}

// Reader reads a log one fact at a time, holding one line.
type Reader struct {
	name   string
	br     *bufio.Reader
	line   int
	header Header
	err    error
	// scratch for fastLine's values, and the line they fill
	sv [8]string
	iv [10]int64
	l  factLine
	// procs finds a process by name (Header.Process, without its scan).
	procs *nameTable
	// ids is the attempt ids read lately, by a hash of their bytes: an id
	// comes again on each fact of its attempt, and a Fact keeps a copy
	// that outlives the line (fastLine's strings alias it). A fixed table:
	// what it holds does not grow with the log.
	ids [1024]internedID
}

// internedID is an id of Reader.ids, with its bytes beside it when they
// fit: an id is compared there, in the table, not in the copy's memory,
// which has long left the cache when the attempt's next fact comes.
type internedID struct {
	s string
	n uint8 // len(s) when it fits b, else 0
	b [idBytes]byte
}

const idBytes = 23

// NewReader reads the header of the log r; name is the file its errors give.
func NewReader(r io.Reader, name string) (*Reader, error) {
	rd := &Reader{name: name, br: bufio.NewReaderSize(r, 64<<10)}
	text, err := rd.scan()
	if err == io.EOF {
		return nil, rd.fail(1, "empty log, want a header line {\"schema\": %q, ...}", SchemaV1)
	}
	if err != nil {
		return nil, err
	}
	var h headerLine
	if err := decodeLine(text, &h); err != nil {
		return nil, rd.fail(rd.line, "header: %s; want {\"schema\": %q, \"policy\": ..., \"engine\": ..., \"processes\": [...]} first", err, SchemaV1)
	}
	if _, err := jsonfile.ScanAt(name, rd.line, text, ErrLog); err != nil {
		return nil, err
	}
	if err := rd.parseHeader(&h); err != nil {
		return nil, err
	}
	rd.procs = newNameTable(len(rd.header.Processes))
	for i, p := range rd.header.Processes {
		rd.procs.put(p.Name, i)
	}
	return rd, nil
}

// Header is the log's header.
func (r *Reader) Header() *Header { return &r.header }

// Name is the file the reader reads.
func (r *Reader) Name() string { return r.name }

func (r *Reader) fail(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", r.name, line, ErrLog, fmt.Sprintf(format, args...))
}

// scan reads the next line without its newline. A line that does not end
// in a newline was cut short: the log is truncated there.
func (r *Reader) scan() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			buf = append(buf, chunk...)
			if len(buf) > MaxLineBytes {
				return nil, r.fail(r.line+1, "the line is longer than %d KiB, the most a log line may hold", MaxLineBytes>>10)
			}
			continue
		}
		if buf != nil {
			buf = append(buf, chunk...)
			chunk = buf
		}
		if err == io.EOF {
			if len(chunk) == 0 {
				return nil, io.EOF
			}
			return nil, r.fail(r.line+1, "the line ends without a newline: the log was cut short in the middle of this line")
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %w", r.name, r.line+1, ErrLog, err)
		}
		r.line++
		if len(chunk) > MaxLineBytes+1 {
			return nil, r.fail(r.line, "the line is longer than %d KiB, the most a log line may hold", MaxLineBytes>>10)
		}
		// By hand, not bytes.TrimRight: that makes a set of its cutset
		// on every call, and this is every line.
		text := chunk
		for len(text) > 0 && (text[len(text)-1] == '\n' || text[len(text)-1] == '\r') {
			text = text[:len(text)-1]
		}
		// A line that opens as an object is not blank; only one that
		// begins with a blank is looked at whole.
		if len(text) == 0 || text[0] != '{' && len(bytes.TrimSpace(text)) == 0 {
			return nil, r.fail(r.line, "blank line; want one JSON object per line, without blank lines")
		}
		return text, nil
	}
}

func (r *Reader) parseHeader(l *headerLine) error {
	h := &r.header
	if l.Schema == nil {
		return r.fail(r.line, "the header has no schema; want {\"schema\": %q} on the first line", SchemaV1)
	}
	if *l.Schema != SchemaV1 {
		return r.fail(r.line, "schema %q, want %q", *l.Schema, SchemaV1)
	}
	p, err := spec.ParsePolicy(l.Policy)
	switch {
	case l.Policy == LegacyPolicy:
		h.Legacy = true
	case err != nil:
		return r.fail(r.line, "header: policy %q, want source-first, destination-first or %s (the legacy path)", l.Policy, LegacyPolicy)
	default:
		h.Policy = p
	}
	if h.Engine, err = model.ParseEngine(l.Engine); err != nil {
		return r.fail(r.line, "header: %s", err)
	}
	def := All
	if l.Records != nil {
		if def, err = parseRecords(*l.Records); err != nil {
			return r.fail(r.line, "header: records: %s", err)
		}
	}
	if len(l.Processes) == 0 {
		return r.fail(r.line, "header: no processes; want \"processes\": [{\"name\": \"prefill-0\", \"role\": \"prefill\"}, ...]")
	}
	if len(l.Processes) > MaxProcesses {
		return r.fail(r.line, "header: %d processes, at most %d", len(l.Processes), MaxProcesses)
	}
	var roles [3]int
	for i, pl := range l.Processes {
		if pl.Name == "" {
			return r.fail(r.line, "header: process %d has no name", i+1)
		}
		if _, dup := h.Process(pl.Name); dup {
			return r.fail(r.line, "header: process %q named twice", pl.Name)
		}
		ri := slices.Index(roleNames[:], pl.Role)
		if ri < 0 {
			return r.fail(r.line, "header: process %q: role %q, want router, prefill or decode", pl.Name, pl.Role)
		}
		proc := Process{Name: pl.Name, Role: Role(ri), Records: def}
		if pl.Records != nil {
			if proc.Records, err = parseRecords(*pl.Records); err != nil {
				return r.fail(r.line, "header: process %q: records: %s", pl.Name, err)
			}
		}
		roles[ri]++
		h.Processes = append(h.Processes, proc)
	}
	if roles[RolePrefill] == 0 || roles[RoleDecode] == 0 {
		return r.fail(r.line, "header: the processes need at least one prefill and one decode worker")
	}
	if len(l.Config) > 0 && string(l.Config) != "null" {
		h.Config = l.Config
	}
	if why := ConfigDisagrees(h); why != "" {
		return r.fail(r.line, "header: %s", why)
	}
	return nil
}

// ConfigDisagrees says how a header's configuration names another policy
// or engine than the header itself, or "" when they agree (or the
// configuration names neither). The header says what the log was written
// under; a configuration that says otherwise is not the cluster that
// wrote it, and judging with either would rest on a guess.
func ConfigDisagrees(h *Header) string {
	if h.Config == nil {
		return ""
	}
	var c struct {
		Policy *string `json:"policy"`
		Engine *string `json:"engine"`
	}
	// A configuration that is not an object is refused where it is
	// parsed in full; here only its policy and engine matter.
	if json.Unmarshal(h.Config, &c) != nil {
		return ""
	}
	if c.Policy != nil {
		p, err := spec.ParsePolicy(*c.Policy)
		legacy := *c.Policy == LegacyPolicy
		if legacy != h.Legacy || (!legacy && (err != nil || p != h.Policy)) {
			return fmt.Sprintf("the configuration's policy is %q and the header's %q; want the policy the log was written under in both", *c.Policy, h.PolicyName())
		}
	}
	if c.Engine != nil {
		if e, err := model.ParseEngine(*c.Engine); err != nil || e != h.Engine {
			return fmt.Sprintf("the configuration's engine is %q and the header's %q; want the engine the log was written under in both", *c.Engine, h.Engine)
		}
	}
	return ""
}

// ParseRecords reads a list of kinds: "all", "milestones" (with
// worker_restarted), or kind names.
func ParseRecords(names []string) (KindSet, error) { return parseRecords(names) }

func parseRecords(names []string) (KindSet, error) {
	if len(names) == 1 && names[0] == "all" {
		return All, nil
	}
	if len(names) == 1 && names[0] == "milestones" {
		return Of(Milestones()...) | Of(WorkerRestarted), nil
	}
	var s KindSet
	for _, n := range names {
		k, ok := KindNamed(n)
		if !ok {
			return 0, fmt.Errorf("%q is not a kind; want \"all\", \"milestones\" or kinds among %s", n, strings.Join(KindNames(), ", "))
		}
		s |= Of(k)
	}
	return s, nil
}

// Next reads the next fact. It returns io.EOF after the last, and after an
// error returns that error again.
func (r *Reader) Next() (Fact, error) {
	var f Fact
	err := r.NextInto(&f)
	if err != nil {
		return Fact{}, err
	}
	return f, nil
}

// NextInto is Next, reading the fact into f: a reader of a long log that
// keeps its facts saves copying each. After an error f is undefined.
func (r *Reader) NextInto(f *Fact) error {
	if r.err != nil {
		return r.err
	}
	if err := r.next(f); err != nil {
		r.err = err
		return err
	}
	return nil
}

func (r *Reader) next(f *Fact) error {
	text, err := r.scan()
	if err != nil {
		return err
	}
	if r.plainFact(text, f) {
		return nil
	}
	return r.general(text, f)
}

// general reads fact line text into f the general way: every form a
// JSON object may take, every check of fact, and the error that names
// what is wrong.
func (r *Reader) general(text []byte, f *Fact) error {
	l := &r.l
	if !fastLine(text, l, &r.sv, &r.iv) {
		*l = factLine{}
		if err := decodeLine(text, l); err != nil {
			return r.fail(r.line, "%s; want a fact such as %s", err, factExample)
		}
		// A key given twice is refused, not settled by the last one.
		if _, err := jsonfile.ScanAt(r.name, r.line, text, ErrLog); err != nil {
			return err
		}
	}
	*f = Fact{File: r.name, Line: r.line, TUS: -1, To: -1}
	if why := r.fact(l, f); why != "" {
		return r.fail(r.line, "%s", why)
	}
	return nil
}

const factExample = `{"proc": "decode-0", "gen": 0, "attempt": "a1", "kind": "reserved", "pages": 12, "slot": 1, "headroom": 512}`

// fact checks a line's fields against its kind.
func (r *Reader) fact(l *factLine, f *Fact) string {
	h := &r.header
	if l.Kind == nil {
		return "no kind; want \"kind\": one of " + strings.Join(KindNames(), ", ")
	}
	kn, ok := kindTable.get(*l.Kind)
	if !ok {
		return fmt.Sprintf("kind %q, want one of %s", *l.Kind, strings.Join(KindNames(), ", "))
	}
	k := Kind(kn)
	f.Kind = k
	if l.Proc == nil {
		return "no proc; want \"proc\": the name of the process that logged the fact, as the header names it"
	}
	p, ok := r.procs.get(*l.Proc)
	if !ok {
		return fmt.Sprintf("proc %q is not a process of the header", *l.Proc)
	}
	f.Proc = p
	if l.Gen == nil || *l.Gen < 0 || *l.Gen > 1<<31 {
		return "gen: want the process generation, an integer from 0"
	}
	f.Gen = *l.Gen
	role := h.Processes[p].Role
	switch Kinds[k].Who {
	case ByRouter:
		if role != RoleRouter {
			return fmt.Sprintf("%s is logged by a router, and %q is a %s worker", k, *l.Proc, role)
		}
	case BySource:
		if role != RolePrefill {
			return fmt.Sprintf("%s is logged by the prefill worker, and %q is a %s", k, *l.Proc, role)
		}
	case ByDestination:
		if role != RoleDecode {
			return fmt.Sprintf("%s is logged by the decode worker, and %q is a %s", k, *l.Proc, role)
		}
	case BySide:
		if role == RoleRouter {
			return fmt.Sprintf("%s is logged by a worker, and %q is a router", k, *l.Proc)
		}
	}
	if k == WorkerRestarted {
		if l.Attempt != nil {
			return "worker_restarted names no attempt: the whole process restarted"
		}
	} else if l.Attempt == nil || *l.Attempt == "" || len(*l.Attempt) > 256 {
		return "attempt: want the handoff attempt id, a non-empty string of at most 256 bytes"
	} else {
		f.Attempt = r.intern(*l.Attempt)
	}
	if l.TUS != nil {
		if *l.TUS < 0 {
			return "t_us: want a time in microseconds from 0"
		}
		f.TUS = *l.TUS
	}
	if l.Blocks != nil || l.Pages != nil || l.Slot != nil || l.Headroom != nil || l.Tokens != nil {
		// In this order: the first figure that is wrong is the one named.
		if e := setFigure(f, FigBlocks, l.Blocks, &f.Blocks); e != "" {
			return e
		}
		if e := setFigure(f, FigPages, l.Pages, &f.Pages); e != "" {
			return e
		}
		if e := setFigure(f, FigSlot, l.Slot, &f.Slot); e != "" {
			return e
		}
		if e := setFigure(f, FigHeadroom, l.Headroom, &f.Headroom); e != "" {
			return e
		}
		if e := setFigure(f, FigTokens, l.Tokens, &f.Tokens); e != "" {
			return e
		}
	}
	if k == Routed {
		if l.Stage == nil || (*l.Stage != "prefill" && *l.Stage != "decode") {
			return "routed needs \"stage\": \"prefill\" or \"decode\""
		}
		if *l.Stage == "decode" {
			f.Stage = model.DestinationSide
		}
		if l.To == nil {
			return "routed needs \"to\": the worker the router chose"
		}
		to, ok := r.procs.get(*l.To)
		want := RolePrefill
		if f.Stage == model.DestinationSide {
			want = RoleDecode
		}
		if !ok || h.Processes[to].Role != want {
			return fmt.Sprintf("to %q is not a %s worker of the header", *l.To, want)
		}
		f.To = to
		f.Has |= 1 << FigStage
	} else if l.Stage != nil || l.To != nil {
		return fmt.Sprintf("%s carries no stage or to", k)
	}
	if l.Outcome != nil {
		if k != OutcomeReported {
			return fmt.Sprintf("%s carries no outcome", k)
		}
		switch *l.Outcome {
		case "ok":
			f.Outcome = model.OutcomeOK
		case "failed":
			f.Outcome = model.OutcomeFailed
		default:
			return fmt.Sprintf("outcome %q, want ok or failed", *l.Outcome)
		}
		f.Has |= 1 << FigOutcome
	} else if k == OutcomeReported {
		return "outcome_reported needs \"outcome\": \"ok\" or \"failed\""
	}
	if l.Timer != nil {
		if k != DeadlineExpired {
			return fmt.Sprintf("%s carries no timer", k)
		}
		t := model.Timer(0)
		for t < model.NumTimers && t.String() != *l.Timer {
			t++
		}
		if t == model.NumTimers || t == model.TimerLease || t == model.TimerReservation || t == model.TimerHeartbeat {
			return fmt.Sprintf("timer %q, want bootstrap, push-deadline or pull-deadline (lease_expired and reservation_expired are kinds of their own)", *l.Timer)
		}
		f.Timer = t
		f.Has |= 1 << FigTimer
	}
	if l.PromptTokens != nil {
		if k == WorkerRestarted || *l.PromptTokens < 1 || *l.PromptTokens > 1<<30 {
			return "prompt_tokens: want the attempt's prompt length, from 1 token, on a fact of the attempt"
		}
		f.PromptTokens = *l.PromptTokens
	}
	if l.PrefixHitTokens != nil {
		if k != Routed || f.Stage != model.DestinationSide || *l.PrefixHitTokens < 0 || *l.PrefixHitTokens > 1<<30 {
			return "prefix_hit_tokens: want the tokens of the prompt the chosen decode worker caches, on a routed fact of stage decode"
		}
		f.PrefixHitTokens = *l.PrefixHitTokens
	}
	if l.AdoptedBlocks != nil || l.Canonical != nil {
		if k != Activated {
			return fmt.Sprintf("%s carries no adopted_blocks or canonical: only an activated fact says what the destination adopted", k)
		}
		if l.AdoptedBlocks == nil || l.Canonical == nil {
			return "an adoption needs both \"adopted_blocks\" (the blocks adopted, from 1) and \"canonical\" (the attempt whose canonical blocks they are)"
		}
		if *l.AdoptedBlocks < 1 || *l.AdoptedBlocks > 1<<30 {
			return fmt.Sprintf("adopted_blocks %d: want the blocks adopted at activation, from 1", *l.AdoptedBlocks)
		}
		if *l.Canonical == "" || len(*l.Canonical) > 256 || *l.Canonical == f.Attempt {
			return "canonical: want the id of another attempt, whose canonical blocks the destination adopted"
		}
		f.AdoptedBlocks = *l.AdoptedBlocks
		f.Canonical = strings.Clone(*l.Canonical)
	}
	return ""
}

// setFigure sets figure g of fact f, of its kind, to the line's value v
// (nil: the line gives none), or says why it may not.
func setFigure(f *Fact, g Figure, v *int64, dst *int64) string {
	if v == nil {
		return ""
	}
	if !slices.Contains(Kinds[f.Kind].Figures, g) {
		return fmt.Sprintf("%s carries no %s", f.Kind, g)
	}
	if *v < 0 || *v > 1<<40 {
		return fmt.Sprintf("%s %d: want a count from 0", g, *v)
	}
	*dst = *v
	f.Has |= 1 << g
	return ""
}

// intern is a copy of an attempt id that outlives the line, shared with
// the id's earlier facts while the table holds it.
func (r *Reader) intern(s string) string {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	e := &r.ids[h%uint32(len(r.ids))]
	if n := len(s); n <= idBytes && n > 0 {
		if int(e.n) == n && string(e.b[:n]) == s {
			return e.s
		}
		e.s, e.n = strings.Clone(s), uint8(n)
		copy(e.b[:], s)
		return e.s
	}
	if e.s != s {
		e.s, e.n = strings.Clone(s), 0
	}
	return e.s
}

// decodeLine decodes one line into v, refusing unknown fields and
// anything after the object.
func decodeLine(text []byte, v any) error { return jsonfile.DecodeLine(text, v) }
