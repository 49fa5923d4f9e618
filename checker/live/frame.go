package live

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The wire format, version 1 (docs/live.md states it for other
// implementations). Every frame is
//
//	uint32 big-endian N   the length of what follows, 2 to MaxFrame
//	uint8  version        FrameVersion
//	uint8  kind           one of the kinds of the table frameKinds
//	N-2 bytes body        one JSON object, its fields those of Frame
//
// The version and kind come before the body so that a reader refuses a
// frame it cannot read before it parses anything. The body is JSON
// because every language reads it and the frames are small (under 300
// bytes); a body with an unknown field, a missing required field or
// trailing bytes is refused, and so is the whole connection.

// FrameVersion is the version byte of every frame this package writes
// and the only one it reads.
const FrameVersion = 1

// MaxFrame bounds N: 64 KiB, far more than any frame needs.
const MaxFrame = 64 << 10

// ErrFrame is wrapped by every refusal of a frame.
var ErrFrame = errors.New("live: bad frame")

// Kind is a frame's kind.
type Kind uint8

// The kinds. W is a worker, C the coordinator; a fact or a transfer
// probe between the two workers of an attempt goes through the
// coordinator, whose proxy may drop, duplicate, delay or reorder it.
const (
	_ Kind = iota
	// KHello: W→C, first on a connection: the worker's role, index and
	// generation.
	KHello
	// KRoute: C→W: a router placed the attempt on the worker (stage
	// prefill or decode), with the request.
	KRoute
	// KFact: W→C→W: a protocol fact of the attempt to the peer side.
	KFact
	// KCancel: C→W: the client cancelled the attempt.
	KCancel
	// KProbe: W→C→W: the transfer's runner reads (pull) or writes (push)
	// the peer's registration.
	KProbe
	// KProbeReply: W→C→W: what the probe found: the peer's registration
	// and hold.
	KProbeReply
	// KAnnounce: W→C: the source pinned its KV and answers the frontend
	// with the transfer parameters.
	KAnnounce
	// KOutcome: W→C: a side's terminal outcome, on its request stream.
	KOutcome
	// KPeerRestarted: C→W: a health check found the attempt's peer
	// restarted as generation Gen.
	KPeerRestarted
	// KMark: C→W: a planned fault for one attempt (hang,
	// transfer_failure, abort, delay, evict), which strikes at its phase.
	KMark
	// KTrigger: W→C: the worker logged the fact a planned restart waits
	// for; it takes no further step until the coordinator acts.
	KTrigger
	// KDrain: C→W: report your ledgers when nothing is left in flight.
	KDrain
	// KLedger: W→C: the worker's ledgers.
	KLedger
	// KStruck: W→C: a planned fault the worker held for an attempt
	// struck (for the report's count).
	KStruck
	// KStop: C→W: take no further step and say so (KStopped): the
	// coordinator kills the process once every frame it sent before is
	// read, so that a restart at a time lands between two of its steps.
	KStop
	// KStopped: W→C: the answer to KStop, the last frame the process
	// sends.
	KStopped
	// KHold: C→W: take no step of the attempt until KRelease, and say
	// so (KHeld). A router's move that depends on what a worker reports
	// (routing decode, a client's cancel) waits for every worker of the
	// attempt to be held, so that it acts on all they reported: the
	// model's report reaches the router in the step that makes it.
	KHold
	// KHeld: W→C: the answer to KHold; every frame the worker sent about
	// the attempt before it came first.
	KHeld
	// KRelease: C→W: the router's move is taken; the attempt steps again.
	KRelease
	numKinds
)

// frameKinds is the one table of kinds: the name of each and the fields
// it requires.
var frameKinds = [numKinds]struct {
	name string
	need []string
}{
	KHello:         {"hello", []string{"role"}},
	KRoute:         {"route", []string{"attempt", "stage", "request"}},
	KFact:          {"fact", []string{"attempt", "to", "msg"}},
	KCancel:        {"cancel", []string{"attempt"}},
	KProbe:         {"probe", []string{"attempt", "to"}},
	KProbeReply:    {"probe_reply", []string{"attempt", "to", "reg", "hold"}},
	KAnnounce:      {"announce", []string{"attempt"}},
	KOutcome:       {"outcome", []string{"attempt", "side", "outcome"}},
	KPeerRestarted: {"peer_restarted", []string{"attempt"}},
	KMark:          {"mark", []string{"attempt", "fault"}},
	KTrigger:       {"trigger", []string{"attempt"}},
	KDrain:         {"drain", nil},
	KLedger:        {"ledger", []string{"ledger"}},
	KStruck:        {"struck", []string{"attempt", "fault"}},
	KStop:          {"stop", nil},
	KStopped:       {"stopped", nil},
	KHold:          {"hold", []string{"attempt"}},
	KHeld:          {"held", []string{"attempt"}},
	KRelease:       {"release", []string{"attempt"}},
}

func (k Kind) String() string {
	if k > 0 && k < numKinds {
		return frameKinds[k].name
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Frame is one frame. Gen is the sender's generation; PeerGen, where
// given, the generation the sender believes the receiver's side has.
type Frame struct {
	Kind    Kind         `json:"-"`
	Attempt string       `json:"attempt,omitempty"`
	Gen     int64        `json:"gen,omitempty"`
	PeerGen int64        `json:"peer_gen,omitempty"`
	Role    string       `json:"role,omitempty"`
	Index   int          `json:"index,omitempty"`
	Stage   string       `json:"stage,omitempty"`
	Request *RequestInfo `json:"request,omitempty"`
	To      string       `json:"to,omitempty"`
	Side    string       `json:"side,omitempty"`
	Msg     string       `json:"msg,omitempty"`
	Reg     string       `json:"reg,omitempty"`
	Hold    string       `json:"hold,omitempty"`
	Outcome string       `json:"outcome,omitempty"`
	Fault   string       `json:"fault,omitempty"`
	Ledger  *Ledger      `json:"ledger,omitempty"`
	// SentUS is when the frame was sent, microseconds from the run's
	// epoch (0: not said): the receiver counts how late it came.
	SentUS int64 `json:"sent_us,omitempty"`
}

// RequestInfo is what a worker needs of a request: its index, its
// attempt's number, its sizes.
type RequestInfo struct {
	Index        int   `json:"index"`
	Try          int   `json:"try"`
	PromptTokens int64 `json:"prompt_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// AppendFrame appends f's encoding to b.
func AppendFrame(b []byte, f *Frame) ([]byte, error) {
	if f.Kind == 0 || f.Kind >= numKinds {
		return b, fmt.Errorf("%w: kind %d", ErrFrame, f.Kind)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return b, err
	}
	n := 2 + len(body)
	if n > MaxFrame {
		return b, fmt.Errorf("%w: %s frame of %d bytes, more than %d", ErrFrame, f.Kind, n, MaxFrame)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, FrameVersion, byte(f.Kind))
	return append(b, body...), nil
}

// ReadFrame reads one frame. It returns io.EOF at a clean end between
// frames; a frame cut short, too long, of another version or kind, or
// whose body does not decode wraps ErrFrame, and the connection must be
// closed: nothing after it can be trusted to start a frame.
func ReadFrame(r io.Reader, buf []byte) (Frame, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return Frame{}, buf, fmt.Errorf("%w: cut short in its length", ErrFrame)
		}
		return Frame{}, buf, err // the end, or the connection broke
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 2 || n > MaxFrame {
		return Frame{}, buf, fmt.Errorf("%w: length %d, want 2 to %d", ErrFrame, n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if k, err := io.ReadFull(r, buf); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return Frame{}, buf, fmt.Errorf("%w: cut short: %d bytes announced, %d came", ErrFrame, n, k)
		}
		return Frame{}, buf, err
	}
	f, err := DecodeFrame(buf)
	return f, buf, err
}

// DecodeFrame decodes what follows a frame's length: version, kind, body.
func DecodeFrame(b []byte) (Frame, error) {
	if len(b) < 2 {
		return Frame{}, fmt.Errorf("%w: %d bytes, want a version and a kind at least", ErrFrame, len(b))
	}
	if b[0] != FrameVersion {
		return Frame{}, fmt.Errorf("%w: version %d, this reader reads version %d", ErrFrame, b[0], FrameVersion)
	}
	k := Kind(b[1])
	if k == 0 || k >= numKinds {
		return Frame{}, fmt.Errorf("%w: kind %d, want 1 to %d", ErrFrame, k, numKinds-1)
	}
	var f Frame
	dec := json.NewDecoder(bytes.NewReader(b[2:]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Frame{}, fmt.Errorf("%w: %s body: %v", ErrFrame, k, err)
	}
	if dec.More() {
		return Frame{}, fmt.Errorf("%w: %s body: bytes after the object", ErrFrame, k)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Frame{}, fmt.Errorf("%w: %s body: bytes after the object", ErrFrame, k)
	}
	f.Kind = k
	for _, field := range frameKinds[k].need {
		if !f.has(field) {
			return Frame{}, fmt.Errorf("%w: %s frame without %q", ErrFrame, k, field)
		}
	}
	if err := f.check(); err != nil {
		return Frame{}, fmt.Errorf("%w: %s frame: %v", ErrFrame, k, err)
	}
	return f, nil
}

func (f *Frame) has(field string) bool {
	switch field {
	case "attempt":
		return f.Attempt != ""
	case "role":
		return f.Role != ""
	case "stage":
		return f.Stage != ""
	case "request":
		return f.Request != nil
	case "to":
		return f.To != ""
	case "side":
		return f.Side != ""
	case "msg":
		return f.Msg != ""
	case "reg":
		return f.Reg != ""
	case "hold":
		return f.Hold != ""
	case "outcome":
		return f.Outcome != ""
	case "fault":
		return f.Fault != ""
	case "ledger":
		return f.Ledger != nil
	}
	panic("live: unknown frame field " + field)
}

// check refuses values no frame carries: the names are checked where
// they are used, the numbers here.
func (f *Frame) check() error {
	switch {
	case f.Gen < 0 || f.PeerGen < 0:
		return fmt.Errorf("negative generation")
	case f.SentUS < 0:
		return fmt.Errorf("negative sent_us")
	case f.Index < 0:
		return fmt.Errorf("negative index")
	case len(f.Attempt) > 256:
		return fmt.Errorf("attempt id of %d bytes, want at most 256", len(f.Attempt))
	}
	if r := f.Request; r != nil {
		if r.Index < 0 || r.Try < 0 || r.PromptTokens < 1 || r.OutputTokens < 1 ||
			r.PromptTokens > 1<<20 || r.OutputTokens > 1<<20 {
			return fmt.Errorf("request out of range: index %d, try %d, prompt %d, output %d tokens", r.Index, r.Try, r.PromptTokens, r.OutputTokens)
		}
	}
	return nil
}
