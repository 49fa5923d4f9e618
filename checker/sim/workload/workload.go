package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// FormatV1 names the workload format in the header line.
const FormatV1 = "handoffcheck.workload/v1"

// ErrWorkload is wrapped by every refusal of a workload: a file that does
// not parse, a request the writer will not write, a generator
// configuration that cannot run.
var ErrWorkload = errors.New("workload: bad workload")

const (
	// MaxLineBytes bounds one line of a workload file: 64 KiB, far more
	// than a request line needs (under 300 bytes) or a header with its
	// generator parameters (under 1 KiB). The reader holds at most one
	// line, so the bound is its memory.
	MaxLineBytes = 64 << 10
	// MaxTokens bounds prompt_tokens and output_tokens: 1<<20, more than
	// any model's context today, low enough that sums over a simulation
	// cannot overflow.
	MaxTokens = 1 << 20
	// MaxTextBytes bounds an id, a prefix group and a workload name.
	MaxTextBytes = 128
	// MaxMillis bounds every time of a workload: 1e11 ms, about three
	// years. It keeps microsecond times well below 2^53, where a float64
	// still holds every whole microsecond, so that writing a time in
	// milliseconds and reading it back gives the same microsecond.
	MaxMillis = 100_000_000_000
	// MaxMicros is MaxMillis in microseconds.
	MaxMicros = MaxMillis * 1000
)

// Request is one request of a workload.
type Request struct {
	// Index numbers the requests from 0 in file order (request i is on
	// line i+2). The reader sets it; the writer ignores it.
	Index int
	// ID is the request's name in the file, "" when it has none.
	ID string
	// ArrivalUS is when the request arrives, in microseconds from the
	// start of the workload.
	ArrivalUS int64
	// PromptTokens and OutputTokens are the lengths of the prompt and of
	// the output the request asks for, 1 to MaxTokens.
	PromptTokens int
	OutputTokens int
	// PrefixGroup names the requests whose prompts start alike, "" for
	// none. PrefixTokens (0 to PromptTokens) is how many leading tokens of
	// this prompt are the group's shared prefix.
	PrefixGroup  string
	PrefixTokens int
	// CancelUS is when the client cancels the request, at or after its
	// arrival; it holds only when HasCancel.
	CancelUS  int64
	HasCancel bool
}

// Header is the first line of a workload. Only Format is required; the
// rest records where the workload came from.
type Header struct {
	// Format is FormatV1; NewWriter fills it in when empty.
	Format string
	// Name names the workload, "" for none.
	Name string
	// Seed is the seed the workload was drawn with; it holds only when
	// HasSeed.
	Seed    uint64
	HasSeed bool
	// Generator is the generator configuration the workload was made
	// with (its Seed is the header's), nil for a workload made otherwise.
	Generator *GenConfig
}

// headerLine and requestLine are the JSON of the two kinds of line. Every
// field is raw so that each is judged here, with a message in the file's
// terms: a count given as a string or a fraction, a null, a number that
// is not finite. A field without omitempty is required (the schema test
// reads the tags).
type headerLine struct {
	Format    json.RawMessage `json:"format"`
	Name      json.RawMessage `json:"name,omitempty"`
	Seed      json.RawMessage `json:"seed,omitempty"`
	Generator json.RawMessage `json:"generator,omitempty"`
}

type requestLine struct {
	ArrivalMS    json.RawMessage `json:"arrival_ms"`
	PromptTokens json.RawMessage `json:"prompt_tokens"`
	OutputTokens json.RawMessage `json:"output_tokens"`
	PrefixGroup  json.RawMessage `json:"prefix_group,omitempty"`
	PrefixTokens json.RawMessage `json:"prefix_tokens,omitempty"`
	CancelMS     json.RawMessage `json:"cancel_ms,omitempty"`
	ID           json.RawMessage `json:"id,omitempty"`
}

const requestExample = `{"arrival_ms": 12.5, "prompt_tokens": 2048, "output_tokens": 128}`

// MillisToMicros converts a time in milliseconds to whole microseconds,
// rounding to the nearest. ok is false for a time that is not finite or
// not within 0 to MaxMillis.
func MillisToMicros(ms float64) (us int64, ok bool) {
	if !(ms >= 0 && ms <= MaxMillis) {
		return 0, false
	}
	return int64(math.Round(ms * 1000)), true
}

// FormatMillis writes a time in microseconds as the shortest decimal of
// milliseconds that reads back to it: 12500 is "12.5".
func FormatMillis(us int64) string {
	return strconv.FormatFloat(float64(us)/1000, 'f', -1, 64)
}

// Reader reads a workload one request at a time, holding one line.
type Reader struct {
	name   string
	sc     *bufio.Scanner
	line   int // the line last read
	header Header
	n      int   // requests read
	lastUS int64 // the arrival of the last request read
	err    error // sticky: the first error, or io.EOF
	// ids holds the line of every id read: an id names one request, and
	// two requests under one name cannot be told apart in a log (live
	// waits for the second forever; the simulator's log fails conform).
	ids map[string]int
}

// NewReader reads and checks the header line of the workload r; name is
// the file name its errors give.
func NewReader(r io.Reader, name string) (*Reader, error) {
	sc := bufio.NewScanner(r)
	// Two bytes over the bound hold the line ending, so that a line of
	// exactly MaxLineBytes is read and one byte more is refused below.
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes+2)
	rd := &Reader{name: name, sc: sc}
	text, err := rd.scan()
	if err == io.EOF {
		return nil, rd.fail(1, "empty workload, want a header line {\"format\": %q}", FormatV1)
	}
	if err != nil {
		return nil, err
	}
	var h headerLine
	if err := decodeLine(text, &h); err != nil {
		return nil, rd.fail(rd.line, "header: %s; want {\"format\": %q} first, then one request per line", err, FormatV1)
	}
	if _, err := jsonfile.ScanAt(name, rd.line, text, ErrWorkload); err != nil {
		return nil, err
	}
	if rd.header, err = rd.parseHeader(&h); err != nil {
		return nil, err
	}
	return rd, nil
}

// Header is the workload's header line.
func (r *Reader) Header() Header {
	h := r.header
	if h.Generator != nil {
		g := *h.Generator
		h.Generator = &g
	}
	return h
}

// Next reads the next request. It returns io.EOF after the last, and
// after an error returns that error again.
func (r *Reader) Next() (Request, error) {
	if r.err != nil {
		return Request{}, r.err
	}
	req, err := r.next()
	if err != nil {
		r.err = err
		return Request{}, err
	}
	r.n++
	r.lastUS = req.ArrivalUS
	return req, nil
}

func (r *Reader) next() (Request, error) {
	text, err := r.scan()
	if err != nil {
		return Request{}, err
	}
	var l requestLine
	if err := decodeLine(text, &l); err != nil {
		return Request{}, r.fail(r.line, "%s; want a request such as %s", err, requestExample)
	}
	if _, err := jsonfile.ScanAt(r.name, r.line, text, ErrWorkload); err != nil {
		return Request{}, err
	}
	req := Request{Index: r.n}
	p := fields{}
	req.ArrivalUS = p.millis("arrival_ms", l.ArrivalMS, true)
	req.PromptTokens = p.integer("prompt_tokens", l.PromptTokens, true, 1, MaxTokens)
	req.OutputTokens = p.integer("output_tokens", l.OutputTokens, true, 1, MaxTokens)
	req.PrefixGroup = p.text("prefix_group", l.PrefixGroup)
	req.PrefixTokens = p.integer("prefix_tokens", l.PrefixTokens, false, 0, MaxTokens)
	req.HasCancel = l.CancelMS != nil
	req.CancelUS = p.millis("cancel_ms", l.CancelMS, false)
	req.ID = p.text("id", l.ID)
	if p.problem != "" {
		return Request{}, r.fail(r.line, "%s", p.problem)
	}
	if why := checkRequest(&req, r.n > 0, r.lastUS); why != "" {
		return Request{}, r.fail(r.line, "%s", why)
	}
	if req.ID != "" {
		if first, dup := r.ids[req.ID]; dup {
			return Request{}, r.fail(r.line, "id %q is already the id of the request on line %d; want each id once", req.ID, first)
		}
		if r.ids == nil {
			r.ids = map[string]int{}
		}
		r.ids[req.ID] = r.line
	}
	return req, nil
}

// scan reads the next line; blank lines and lines over MaxLineBytes are
// errors, the end of the input io.EOF.
func (r *Reader) scan() ([]byte, error) {
	if !r.sc.Scan() {
		err := r.sc.Err()
		switch {
		case err == nil:
			return nil, io.EOF
		case errors.Is(err, bufio.ErrTooLong):
			return nil, r.fail(r.line+1, "the line is longer than %d KiB, the most a workload line may hold", MaxLineBytes>>10)
		}
		return nil, fmt.Errorf("%s:%d: %w: %w", r.name, r.line+1, ErrWorkload, err)
	}
	r.line++
	text := r.sc.Bytes()
	if len(text) > MaxLineBytes {
		return nil, r.fail(r.line, "the line is longer than %d KiB, the most a workload line may hold", MaxLineBytes>>10)
	}
	if len(bytes.TrimSpace(text)) == 0 {
		return nil, r.fail(r.line, "blank line; want one JSON object per line, without blank lines")
	}
	return text, nil
}

func (r *Reader) fail(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", r.name, line, ErrWorkload, fmt.Sprintf(format, args...))
}

func (r *Reader) parseHeader(l *headerLine) (Header, error) {
	var h Header
	p := fields{}
	if l.Format == nil {
		return h, r.fail(r.line, "the header has no format; want {\"format\": %q} on the first line", FormatV1)
	}
	if h.Format = p.text("format", l.Format); p.problem == "" && h.Format != FormatV1 {
		return h, r.fail(r.line, "format %q, want %q", h.Format, FormatV1)
	}
	h.Name = p.text("name", l.Name)
	h.HasSeed = l.Seed != nil
	h.Seed = p.seed(l.Seed)
	if p.problem != "" {
		return h, r.fail(r.line, "header: %s", p.problem)
	}
	if l.Generator != nil {
		g, err := decodeGenerator(l.Generator)
		if err != nil {
			return h, r.fail(r.line, "header: generator: %v", err)
		}
		g = g.withDefaults()
		g.Seed = h.Seed
		h.Generator = &g
	}
	return h, nil
}

// decodeLine decodes one line into v, refusing unknown fields and
// anything after the object.
func decodeLine(text []byte, v any) error { return jsonfile.DecodeLine(text, v) }

// checkRequest says what is wrong with a request whose fields have their
// types, or "" when nothing is; after says whether a request came before
// it, arriving at lastUS. The reader and the writer share it, so that the
// writer never writes what the reader refuses.
func checkRequest(r *Request, after bool, lastUS int64) string {
	switch {
	case r.ArrivalUS < 0 || r.ArrivalUS > MaxMicros:
		return fmt.Sprintf("arrival_ms %s, want 0 to %d", FormatMillis(r.ArrivalUS), MaxMillis)
	case after && r.ArrivalUS < lastUS:
		return fmt.Sprintf("arrival_ms %s is before the previous request's arrival_ms %s; want arrival times that never decrease",
			FormatMillis(r.ArrivalUS), FormatMillis(lastUS))
	case r.PromptTokens < 1 || r.PromptTokens > MaxTokens:
		return fmt.Sprintf("prompt_tokens %d, want 1 to %d", r.PromptTokens, MaxTokens)
	case r.OutputTokens < 1 || r.OutputTokens > MaxTokens:
		return fmt.Sprintf("output_tokens %d, want 1 to %d", r.OutputTokens, MaxTokens)
	case r.PrefixTokens < 0 || r.PrefixTokens > r.PromptTokens:
		return fmt.Sprintf("prefix_tokens %d, want 0 to prompt_tokens (%d)", r.PrefixTokens, r.PromptTokens)
	case r.PrefixTokens > 0 && r.PrefixGroup == "":
		return fmt.Sprintf("prefix_tokens %d without a prefix_group; want the prefix_group whose requests share the prefix", r.PrefixTokens)
	case !utf8.ValidString(r.PrefixGroup) || !utf8.ValidString(r.ID):
		return "prefix_group or id is not valid UTF-8"
	case len(r.PrefixGroup) > MaxTextBytes:
		return fmt.Sprintf("prefix_group of %d bytes, want at most %d", len(r.PrefixGroup), MaxTextBytes)
	case len(r.ID) > MaxTextBytes:
		return fmt.Sprintf("id of %d bytes, want at most %d", len(r.ID), MaxTextBytes)
	case !r.HasCancel && r.CancelUS != 0:
		return fmt.Sprintf("a cancel time (%s ms) without HasCancel", FormatMillis(r.CancelUS))
	case r.HasCancel && (r.CancelUS < 0 || r.CancelUS > MaxMicros):
		return fmt.Sprintf("cancel_ms %s, want 0 to %d", FormatMillis(r.CancelUS), MaxMillis)
	case r.HasCancel && r.CancelUS < r.ArrivalUS:
		return fmt.Sprintf("cancel_ms %s is before arrival_ms %s; want a cancel at or after the arrival",
			FormatMillis(r.CancelUS), FormatMillis(r.ArrivalUS))
	}
	return ""
}

// fields judges the raw fields of one line, keeping the first problem.
type fields struct {
	problem string
}

func (p *fields) fail(format string, args ...any) {
	if p.problem == "" {
		p.problem = fmt.Sprintf(format, args...)
	}
}

// present reports whether a field was given; a null is refused, since it
// would otherwise read as absent and hide a mistake.
func (p *fields) present(field string, raw json.RawMessage, required bool, want string) bool {
	switch {
	case raw == nil && required:
		p.fail("no %s; want %s (every request has %s)", field, want, "arrival_ms, prompt_tokens and output_tokens")
		return false
	case raw == nil:
		return false
	case string(raw) == "null":
		p.fail("%s is null, want %s", field, want)
		return false
	}
	return true
}

// isNumber reports whether raw is a JSON number (not a string, array,
// object, true, false or null).
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

func (p *fields) integer(field string, raw json.RawMessage, required bool, lo, hi int) int {
	want := fmt.Sprintf("an integer from %d to %d", lo, hi)
	if !p.present(field, raw, required, want) {
		return 0
	}
	if !isNumber(raw) {
		p.fail("%s %s, want %s", field, shown(raw), want)
		return 0
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		p.fail("%s %s, want %s", field, shown(raw), want)
		return 0
	}
	if v < int64(lo) || v > int64(hi) {
		p.fail("%s %d, want %d to %d", field, v, lo, hi)
		return 0
	}
	return int(v)
}

// millis reads a time in milliseconds as whole microseconds.
func (p *fields) millis(field string, raw json.RawMessage, required bool) int64 {
	want := fmt.Sprintf("a number of milliseconds from 0 to %d", MaxMillis)
	if !p.present(field, raw, required, want) {
		return 0
	}
	if !isNumber(raw) {
		p.fail("%s %s, want %s", field, shown(raw), want)
		return 0
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		p.fail("%s %s is not a finite number, want %s", field, shown(raw), want)
		return 0
	}
	us, ok := MillisToMicros(ms)
	if !ok {
		p.fail("%s %s, want 0 to %d", field, shown(raw), MaxMillis)
		return 0
	}
	return us
}

// text reads an optional string of 1 to MaxTextBytes bytes.
func (p *fields) text(field string, raw json.RawMessage) string {
	want := fmt.Sprintf("a string of 1 to %d bytes", MaxTextBytes)
	if !p.present(field, raw, false, want) {
		return ""
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		p.fail("%s %s, want %s", field, shown(raw), want)
		return ""
	}
	switch {
	case s == "":
		p.fail("%s is empty, want %s (or no %s)", field, want, field)
	case len(s) > MaxTextBytes:
		p.fail("%s of %d bytes, want at most %d", field, len(s), MaxTextBytes)
	}
	return s
}

func (p *fields) seed(raw json.RawMessage) uint64 {
	want := "an integer from 0 to 18446744073709551615"
	if !p.present("seed", raw, false, want) {
		return 0
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if !isNumber(raw) || err != nil {
		p.fail("seed %s, want %s", shown(raw), want)
		return 0
	}
	return v
}

// shown is a JSON value of the input as written, for a message, cut
// short when long.
func shown(raw []byte) string {
	const most = 40
	if len(raw) > most {
		return string(raw[:most]) + "..."
	}
	return string(raw)
}

// Writer writes a workload in canonical form: the fields of each line in
// a fixed order, times as the shortest decimal of milliseconds. Each line
// is one Write call on the underlying writer; wrap it in a bufio.Writer
// for speed.
type Writer struct {
	w      io.Writer
	n      int   // requests written
	lastUS int64 // the arrival of the last request written
	buf    []byte
	// ids holds the number of every request written with an id: the
	// reader refuses an id given twice, so the writer never writes one.
	ids map[string]int
}

// NewWriter checks h and writes it as the header line.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.Format == "" {
		h.Format = FormatV1
	}
	if h.Format != FormatV1 {
		return nil, fmt.Errorf("%w: header format %q, want %q", ErrWorkload, h.Format, FormatV1)
	}
	if len(h.Name) > MaxTextBytes || !utf8.ValidString(h.Name) {
		return nil, fmt.Errorf("%w: header name of %d bytes, want at most %d of valid UTF-8", ErrWorkload, len(h.Name), MaxTextBytes)
	}
	b := []byte(`{"format":`)
	b = appendString(b, h.Format)
	if h.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, h.Name)
	}
	if h.HasSeed {
		b = append(b, `,"seed":`...)
		b = strconv.AppendUint(b, h.Seed, 10)
	}
	if h.Generator != nil {
		g := h.Generator.withDefaults()
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("header generator: %w", err)
		}
		raw, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("%w: header generator: %v", ErrWorkload, err)
		}
		b = append(b, `,"generator":`...)
		b = append(b, raw...)
	}
	b = append(b, "}\n"...)
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	return &Writer{w: w}, nil
}

// Write checks a request and writes it as the next line. Requests must
// come in arrival order. Its Index is ignored: a request's number is its
// place in the file.
func (wr *Writer) Write(r Request) error {
	if why := checkRequest(&r, wr.n > 0, wr.lastUS); why != "" {
		return fmt.Errorf("%w: request %d: %s", ErrWorkload, wr.n, why)
	}
	if first, dup := wr.ids[r.ID]; dup && r.ID != "" {
		return fmt.Errorf("%w: request %d: id %q is already the id of request %d; want each id once", ErrWorkload, wr.n, r.ID, first)
	}
	b := append(wr.buf[:0], `{"arrival_ms":`...)
	b = append(b, FormatMillis(r.ArrivalUS)...)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(r.PromptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.OutputTokens), 10)
	if r.PrefixGroup != "" {
		b = append(b, `,"prefix_group":`...)
		b = appendString(b, r.PrefixGroup)
		b = append(b, `,"prefix_tokens":`...)
		b = strconv.AppendInt(b, int64(r.PrefixTokens), 10)
	}
	if r.HasCancel {
		b = append(b, `,"cancel_ms":`...)
		b = append(b, FormatMillis(r.CancelUS)...)
	}
	if r.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, r.ID)
	}
	b = append(b, "}\n"...)
	wr.buf = b
	if _, err := wr.w.Write(b); err != nil {
		return err
	}
	if r.ID != "" {
		if wr.ids == nil {
			wr.ids = map[string]int{}
		}
		wr.ids[r.ID] = wr.n
	}
	wr.n++
	wr.lastUS = r.ArrivalUS
	return nil
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	raw, _ := json.Marshal(s) // a string always marshals
	return append(b, raw...)
}
