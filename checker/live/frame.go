package live

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// The wire format, version 2 (docs/live.md states it for other
// implementations). Every frame is
//
//	uint32 big-endian N   the length of what follows, 2 to MaxFrame
//	uint8  version        FrameVersion
//	uint8  kind           one of the kinds of the table frameKinds
//	N-2 bytes body        its fields, each a tag byte and a value, the
//	                      tags in increasing order (the table fieldTags)
//
// The version and kind come before the body so that a reader refuses a
// frame it cannot read before it parses anything. The body is binary
// because the coordinator relays every fact and probe between workers:
// with JSON bodies a third of its time went into decoding them and a
// tenth into encoding them again, and the workers' frames cost them a
// tenth more. A value is a zigzag varint (a number), a uvarint length
// and that many bytes (a name; the ledger, whose bytes are a JSON
// object), or four varints (the request). A body with an unknown tag, a
// tag out of order, a value cut short, a missing required field or
// trailing bytes is refused, and so is the whole connection.

// FrameVersion is the version byte of every frame this package writes
// and the only one it reads.
const FrameVersion = 2

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
	// transfer_failure, abort, delay, evict), which strikes at its phase;
	// with msg, a fault aimed at a phase (a cancel too), set when the
	// worker logs that fact for the attempt.
	KMark
	// KTrigger: W→C: the worker logged the fact a planned restart waits
	// for; it takes no further step until the coordinator acts. With
	// fault "cancel" (and the side and msg of its mark), the fact a
	// client cancel aimed at a phase waits for: the worker steps on, and
	// the coordinator's frontend cancels. With another fault and a side
	// to mark (to), the fact a fault aimed at the other side's phase
	// waits for (after_side): the coordinator marks that side's worker.
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
	// KKV: W→C: a KV event the worker publishes to the routers' KV index
	// (cluster.KVIndex), as a real worker publishes its KV events to the
	// KV-aware router's indexer: msg is the fact's kind (stored or
	// removed; none for a report of the cache alone), blocks its blocks,
	// group the prefix group of the attempt's request, which stands for
	// the blocks' content hashes; cached is the worker's anonymous cache
	// (model.Worker.Cached) after the step, its load report, with
	// hit_blocks, what it took from it for prefix hits. Sent when a
	// step of the worker publishes the fact, whether or not it writes a
	// log; the index is as stale as these frames in flight.
	KKV
	// KQuiet: C→W: no frame and no step anywhere for a while, with
	// attempts unfinished: say what each of your open attempts waits
	// for (from_us numbers the question, which the answer repeats).
	KQuiet
	// KQuietReply: W→C: the answer to KQuiet: the ledger's waits, one
	// per open attempt, each saying whether anything can still happen
	// to it on this worker.
	KQuietReply
	// KEnded: C→W: the frontend saw both sides of the attempt end (or
	// the side of a restarted worker forgotten), and relays nothing more
	// for it: the worker forgets the machine it kept for the attempt
	// once its side finished, after the facts relayed before this frame.
	KEnded
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
	KKV:            {"kv", []string{"msg"}},
	KQuiet:         {"quiet", nil},
	KQuietReply:    {"quiet_reply", []string{"ledger"}},
	KEnded:         {"ended", []string{"attempt"}},
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
	Kind    Kind
	Attempt string
	Gen     int64
	PeerGen int64
	Role    string
	Index   int
	Stage   string
	Request *RequestInfo
	To      string
	Side    string
	Msg     string
	Reg     string
	Hold    string
	Outcome string
	Fault   string
	Ledger  *Ledger
	// SentUS is when the frame was sent, microseconds from the run's
	// epoch (0: not said): the receiver counts how late it came.
	SentUS int64
	// FromUS and ToUS are a span, microseconds from the run's epoch: on
	// a source's outcome, when the attempt's source KV was stranded as
	// its window saw it (cluster.StrandedSource; 0: never), Blocks of
	// them; on a drain, the run's span from its first arrival to its
	// last attempt's end, over which a worker averages its metrics.
	FromUS int64
	ToUS   int64
	Blocks int64
	// DecodeReadyUS, on a destination's outcome, is when its decode
	// stopped waiting (it reserved, activated or finished; 0: never
	// waited), microseconds from the epoch: the source's stranding, which
	// its window cannot see end there, ends there.
	DecodeReadyUS int64
	// Group and PrefixTokens, on a route and a KV event, are the prefix
	// group of the attempt's request and its prefix's length
	// (cluster.Request.PrefixGroup, PrefixTokens; "" and 0: none).
	// HitTokens, on a decode route, is the prefix hit the decode router
	// found there (the attempt's world is priced with it). Cached, on a
	// KV event, is the worker's anonymous cache in blocks, and HitBlocks
	// the blocks the worker's generation took from it for the prefix hits
	// routed to it so far: the router counts the hits it routed that the
	// worker had not taken when it reported its cache.
	Group        string
	PrefixTokens int64
	HitTokens    int64
	Cached       int64
	HitBlocks    int64
}

// RequestInfo is what a worker needs of a request: its index, its
// attempt's number, its sizes.
type RequestInfo struct {
	Index        int
	Try          int
	PromptTokens int64
	OutputTokens int64
}

// The tags of a body's fields, in the order a body lists them.
const (
	_ byte = iota
	tAttempt
	tGen
	tPeerGen
	tRole
	tIndex
	tStage
	tRequest
	tTo
	tSide
	tMsg
	tReg
	tHold
	tOutcome
	tFault
	tLedger
	tSentUS
	tFrom
	tToUS
	tBlocks
	tDecodeReady
	tGroup
	tPrefixTokens
	tHitTokens
	tCached
	tHitBlocks
	numTags
)

// fieldTags names each tag's field, as the table frameKinds requires it
// and a refusal says it.
var fieldTags = [numTags]string{
	tAttempt: "attempt", tGen: "gen", tPeerGen: "peer_gen", tRole: "role", tIndex: "index", tStage: "stage",
	tRequest: "request", tTo: "to", tSide: "side", tMsg: "msg", tReg: "reg", tHold: "hold", tOutcome: "outcome",
	tFault: "fault", tLedger: "ledger", tSentUS: "sent_us", tFrom: "from_us", tToUS: "to_us",
	tBlocks: "blocks", tDecodeReady: "decode_ready_us", tGroup: "group", tPrefixTokens: "prefix_tokens",
	tHitTokens: "hit_tokens", tCached: "cached", tHitBlocks: "hit_blocks",
}

func appendName(b []byte, tag byte, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendInt(b []byte, tag byte, v int64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendVarint(append(b, tag), v)
}

// AppendFrame appends f's encoding to b.
func AppendFrame(b []byte, f *Frame) ([]byte, error) {
	if f.Kind == 0 || f.Kind >= numKinds {
		return b, fmt.Errorf("%w: kind %d", ErrFrame, f.Kind)
	}
	at := len(b)
	b = append(b, 0, 0, 0, 0, FrameVersion, byte(f.Kind))
	b = appendName(b, tAttempt, f.Attempt)
	b = appendInt(b, tGen, f.Gen)
	b = appendInt(b, tPeerGen, f.PeerGen)
	b = appendName(b, tRole, f.Role)
	b = appendInt(b, tIndex, int64(f.Index))
	b = appendName(b, tStage, f.Stage)
	if r := f.Request; r != nil {
		b = append(b, tRequest)
		b = binary.AppendVarint(b, int64(r.Index))
		b = binary.AppendVarint(b, int64(r.Try))
		b = binary.AppendVarint(b, r.PromptTokens)
		b = binary.AppendVarint(b, r.OutputTokens)
	}
	b = appendName(b, tTo, f.To)
	b = appendName(b, tSide, f.Side)
	b = appendName(b, tMsg, f.Msg)
	b = appendName(b, tReg, f.Reg)
	b = appendName(b, tHold, f.Hold)
	b = appendName(b, tOutcome, f.Outcome)
	b = appendName(b, tFault, f.Fault)
	if f.Ledger != nil {
		l, err := json.Marshal(f.Ledger)
		if err != nil {
			return b[:at], err
		}
		b = append(b, tLedger)
		b = binary.AppendUvarint(b, uint64(len(l)))
		b = append(b, l...)
	}
	b = appendInt(b, tSentUS, f.SentUS)
	b = appendInt(b, tFrom, f.FromUS)
	b = appendInt(b, tToUS, f.ToUS)
	b = appendInt(b, tBlocks, f.Blocks)
	b = appendInt(b, tDecodeReady, f.DecodeReadyUS)
	b = appendName(b, tGroup, f.Group)
	b = appendInt(b, tPrefixTokens, f.PrefixTokens)
	b = appendInt(b, tHitTokens, f.HitTokens)
	b = appendInt(b, tCached, f.Cached)
	b = appendInt(b, tHitBlocks, f.HitBlocks)
	n := len(b) - at - 4
	if n > MaxFrame {
		return b[:at], fmt.Errorf("%w: %s frame of %d bytes, more than %d", ErrFrame, f.Kind, n, MaxFrame)
	}
	binary.BigEndian.PutUint32(b[at:], uint32(n))
	return b, nil
}

// ReadFrame reads one frame. It returns io.EOF at a clean end between
// frames; a frame cut short, too long, of another version or kind, or
// whose body does not decode wraps ErrFrame, and the connection must be
// closed: nothing after it can be trusted to start a frame. buf is
// reused for the frame's bytes (returned: version, kind, body).
func ReadFrame(r io.Reader, buf []byte) (Frame, []byte, error) {
	buf, err := readRaw(r, buf)
	if err != nil {
		return Frame{}, buf, err
	}
	f, err := DecodeFrame(buf)
	return f, buf, err
}

// readRaw reads one frame's bytes after its length into buf.
func readRaw(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return buf, fmt.Errorf("%w: cut short in its length", ErrFrame)
		}
		return buf, err // the end, or the connection broke
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 2 || n > MaxFrame {
		return buf, fmt.Errorf("%w: length %d, want 2 to %d", ErrFrame, n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if k, err := io.ReadFull(r, buf); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return buf, fmt.Errorf("%w: cut short: %d bytes announced, %d came", ErrFrame, n, k)
		}
		return buf, err
	}
	return buf, nil
}

// names are the names frames carry often (sides, stages, facts,
// registrations, holds, outcomes, faults): a name read from a body is
// one of these strings when it can be, so that reading it allocates
// nothing.
var names = func() map[string]string {
	m := map[string]string{}
	add := func(s string) { m[s] = s }
	for _, s := range []string{"source", "destination", "prefill", "decode", "none", "now", "stored", "removed"} {
		add(s)
	}
	for i := 1; i < int(model.NumMsgs); i++ {
		add(model.Msg(i).String())
	}
	for r := model.RegNone; r <= model.RegClosed; r++ {
		add(r.String())
	}
	for h := model.SrcNone; h <= model.SrcPinned; h++ {
		add(h.String())
	}
	for h := model.DstNone; h <= model.DstActive; h++ {
		add(h.String())
	}
	for o := model.OutcomeNone; o <= model.OutcomeForgotten; o++ {
		add(o.String())
	}
	for k := range system.FaultKinds {
		add(system.Fault(k).String())
	}
	return m
}()

// body reads a frame's body.
type body struct {
	b   []byte
	err error
}

func (d *body) fail(tag byte, what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s %s", fieldTags[tag], what)
	}
}

func (d *body) int(tag byte) int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(tag, "cut short or out of range")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *body) bytes(tag byte) []byte {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > uint64(len(d.b)-n) {
		d.fail(tag, "cut short")
		return nil
	}
	out := d.b[n : n+int(v)]
	d.b = d.b[n+int(v):]
	return out
}

func (d *body) name(tag byte) string {
	b := d.bytes(tag)
	if s, ok := names[string(b)]; ok {
		return s
	}
	return string(b)
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
	f := Frame{Kind: k}
	d := body{b: b[2:]}
	var last byte
	for len(d.b) > 0 && d.err == nil {
		tag := d.b[0]
		d.b = d.b[1:]
		if tag == 0 || tag >= numTags {
			return Frame{}, fmt.Errorf("%w: %s body: unknown field tag %d", ErrFrame, k, tag)
		}
		if tag <= last {
			return Frame{}, fmt.Errorf("%w: %s body: field %s after %s, want the fields in tag order, each once", ErrFrame, k, fieldTags[tag], fieldTags[last])
		}
		last = tag
		switch tag {
		case tAttempt:
			f.Attempt = string(d.bytes(tag))
		case tGen:
			f.Gen = d.int(tag)
		case tPeerGen:
			f.PeerGen = d.int(tag)
		case tRole:
			f.Role = d.name(tag)
		case tIndex:
			v := d.int(tag)
			if v != int64(int32(v)) {
				d.fail(tag, "out of range")
			}
			f.Index = int(v)
		case tStage:
			f.Stage = d.name(tag)
		case tRequest:
			var r RequestInfo
			idx, try := d.int(tag), d.int(tag)
			r.PromptTokens, r.OutputTokens = d.int(tag), d.int(tag)
			if idx != int64(int32(idx)) || try != int64(int32(try)) {
				d.fail(tag, "out of range")
			}
			r.Index, r.Try = int(idx), int(try)
			f.Request = &r
		case tTo:
			f.To = d.name(tag)
		case tSide:
			f.Side = d.name(tag)
		case tMsg:
			f.Msg = d.name(tag)
		case tReg:
			f.Reg = d.name(tag)
		case tHold:
			f.Hold = d.name(tag)
		case tOutcome:
			f.Outcome = d.name(tag)
		case tFault:
			f.Fault = d.name(tag)
		case tLedger:
			lb := d.bytes(tag)
			if d.err != nil {
				break
			}
			var l Ledger
			dec := json.NewDecoder(bytes.NewReader(lb))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				d.fail(tag, fmt.Sprintf("not a ledger: %v", err))
				break
			}
			if _, err := dec.Token(); err != io.EOF {
				d.fail(tag, "not a ledger: bytes after the object")
				break
			}
			f.Ledger = &l
		case tSentUS:
			f.SentUS = d.int(tag)
		case tFrom:
			f.FromUS = d.int(tag)
		case tToUS:
			f.ToUS = d.int(tag)
		case tBlocks:
			f.Blocks = d.int(tag)
		case tDecodeReady:
			f.DecodeReadyUS = d.int(tag)
		case tGroup:
			f.Group = string(d.bytes(tag))
		case tPrefixTokens:
			f.PrefixTokens = d.int(tag)
		case tHitTokens:
			f.HitTokens = d.int(tag)
		case tCached:
			f.Cached = d.int(tag)
		case tHitBlocks:
			f.HitBlocks = d.int(tag)
		}
	}
	if d.err != nil {
		return Frame{}, fmt.Errorf("%w: %s body: %v", ErrFrame, k, d.err)
	}
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
	case f.SentUS < 0 || f.FromUS < 0 || f.ToUS < 0 || f.Blocks < 0 || f.DecodeReadyUS < 0 || f.Cached < 0 || f.HitBlocks < 0:
		return fmt.Errorf("negative time or block count")
	case f.PrefixTokens < 0 || f.HitTokens < 0 || f.PrefixTokens > 1<<20 || f.HitTokens > f.PrefixTokens:
		return fmt.Errorf("prefix of %d tokens with a hit of %d, want 0 to %d and the hit at most the prefix", f.PrefixTokens, f.HitTokens, 1<<20)
	case len(f.Group) > 256:
		return fmt.Errorf("prefix group of %d bytes, want at most 256", len(f.Group))
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
