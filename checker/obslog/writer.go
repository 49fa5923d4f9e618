package obslog

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"

	"github.com/handoffcheck/handoffcheck/model"
)

// Writer writes a log: the header, then one fact per line, each key in a
// fixed order, so that the same facts give the same bytes.
type Writer struct {
	w   *bufio.Writer
	h   Header
	buf []byte
	err error
}

// NewWriter writes the header to w.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	wr := &Writer{w: bufio.NewWriterSize(w, 64<<10), h: *h}
	hl := headerOut{Schema: SchemaV1, Policy: h.PolicyName(), Engine: h.Engine.String(), Config: h.Config}
	for _, p := range h.Processes {
		po := processOut{Name: p.Name, Role: p.Role.String()}
		if p.Records != All {
			po.Records = recordNames(p.Records)
		}
		hl.Processes = append(hl.Processes, po)
	}
	b, err := json.Marshal(hl)
	if err != nil {
		return nil, err
	}
	wr.w.Write(b)
	wr.w.WriteByte('\n')
	return wr, nil
}

// AppendWriter writes facts to w without a header: w continues a log
// whose header is already written (a live worker's log, which the run
// starts and each generation of the worker's process continues).
func AppendWriter(w io.Writer, h *Header) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), h: *h}
}

func recordNames(s KindSet) []string {
	if s == Of(Milestones()...)|Of(WorkerRestarted) {
		return []string{"milestones"}
	}
	names := s.Names()
	if names == nil {
		names = []string{}
	}
	return names
}

type headerOut struct {
	Schema    string          `json:"schema"`
	Policy    string          `json:"policy"`
	Engine    string          `json:"engine"`
	Processes []processOut    `json:"processes"`
	Config    json.RawMessage `json:"config,omitempty"`
}

type processOut struct {
	Name    string   `json:"name"`
	Role    string   `json:"role"`
	Records []string `json:"records,omitempty"`
}

// Write writes one fact.
func (w *Writer) Write(f *Fact) error {
	if w.err != nil {
		return w.err
	}
	if !w.h.Processes[f.Proc].Records.Has(f.Kind) {
		return nil // the process does not log this kind
	}
	b := w.buf[:0]
	b = append(b, `{"proc":`...)
	b = appendString(b, w.h.Processes[f.Proc].Name)
	b = append(b, `,"gen":`...)
	b = strconv.AppendInt(b, f.Gen, 10)
	if f.Kind != WorkerRestarted {
		b = append(b, `,"attempt":`...)
		b = appendString(b, f.Attempt)
	}
	b = append(b, `,"kind":"`...)
	b = append(b, Kinds[f.Kind].Name...)
	b = append(b, '"')
	if f.Kind == Routed {
		b = append(b, `,"stage":"`...)
		b = append(b, stageName(f.Stage)...)
		b = append(b, `","to":`...)
		b = appendString(b, w.h.Processes[f.To].Name)
	}
	for _, g := range Kinds[f.Kind].Figures {
		if !f.HasFigure(g) {
			continue
		}
		switch g {
		case FigStage:
		case FigOutcome:
			b = append(b, `,"outcome":"`...)
			if f.Outcome == model.OutcomeOK {
				b = append(b, "ok"...)
			} else {
				b = append(b, "failed"...)
			}
			b = append(b, '"')
		case FigTimer:
			b = append(b, `,"timer":"`...)
			b = append(b, f.Timer.String()...)
			b = append(b, '"')
		default:
			b = append(b, `,"`...)
			b = append(b, figureKeys[g]...)
			b = append(b, `":`...)
			b = strconv.AppendInt(b, f.figure(g), 10)
		}
	}
	if f.PromptTokens > 0 {
		b = append(b, `,"prompt_tokens":`...)
		b = strconv.AppendInt(b, f.PromptTokens, 10)
	}
	if f.Kind == Routed && f.Stage == model.DestinationSide {
		b = append(b, `,"prefix_hit_tokens":`...)
		b = strconv.AppendInt(b, f.PrefixHitTokens, 10)
	}
	if f.Kind == Activated && f.AdoptedBlocks > 0 {
		b = append(b, `,"adopted_blocks":`...)
		b = strconv.AppendInt(b, f.AdoptedBlocks, 10)
		b = append(b, `,"canonical":`...)
		b = appendString(b, f.Canonical)
	}
	if f.TUS >= 0 {
		b = append(b, `,"t_us":`...)
		b = strconv.AppendInt(b, f.TUS, 10)
	}
	b = append(b, "}\n"...)
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// Flush writes what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.w.Flush()
	return w.err
}

func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// FactOf makes the line of a label: the fact a process logs about an
// attempt.
func FactOf(l *Label, proc int, gen int64, attempt string, tus int64) Fact {
	f := Fact{Proc: proc, Gen: gen, Attempt: attempt, Kind: l.Kind, TUS: tus, Stage: l.Stage, To: -1,
		Blocks: int64(l.Blocks), Pages: int64(l.Pages), Slot: int64(l.Slot), Headroom: int64(l.Headroom), Tokens: int64(l.Tokens), Outcome: l.Outcome, Timer: l.Timer}
	for _, g := range Kinds[l.Kind].Figures {
		f.Has |= 1 << g
	}
	if l.Kind == Routed {
		// A routing books compute load or a decode estimate, not both.
		if l.Stage == model.SourceSide {
			f.Has &^= 1 << FigBlocks
		} else {
			f.Has &^= 1 << FigTokens
		}
	}
	return f
}

func (f *Fact) figure(g Figure) int64 {
	switch g {
	case FigBlocks:
		return f.Blocks
	case FigPages:
		return f.Pages
	case FigSlot:
		return f.Slot
	case FigHeadroom:
		return f.Headroom
	case FigTokens:
		return f.Tokens
	}
	return 0
}

// Figure is a numeric figure of the fact (0 when it has none).
func (f *Fact) Figure(g Figure) int64 { return f.figure(g) }

// Figure is a numeric figure of the label (0 when it has none).
func (l *Label) Figure(g Figure) int64 { return l.figure(g) }
