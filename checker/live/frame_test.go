package live

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func encode(t testing.TB, f *Frame) []byte {
	b, err := AppendFrame(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// raw is a frame of the given version, kind and body, its length right.
func raw(version, kind byte, body ...[]byte) []byte {
	var bb []byte
	for _, f := range body {
		bb = append(bb, f...)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(2+len(bb)))
	return append(append(b, version, kind), bb...)
}

// name and num are a body's fields.
func name(tag byte, s string) []byte {
	return append(binary.AppendUvarint([]byte{tag}, uint64(len(s))), s...)
}

func num(tag byte, v int64) []byte { return binary.AppendVarint([]byte{tag}, v) }

func TestFrame_RoundTrip(t *testing.T) {
	frames := []Frame{
		{Kind: KHello, Role: "source", Index: 1, Gen: 2},
		{Kind: KRoute, Attempt: "r7", Stage: "decode", PeerGen: 3, Request: &RequestInfo{Index: 7, PromptTokens: 512, OutputTokens: 4}},
		{Kind: KFact, Attempt: "r7/1", To: "source", Msg: "ReaderCompleted", Gen: 1},
		{Kind: KProbeReply, Attempt: "r7", To: "destination", Reg: "valid", Hold: "pinned"},
		{Kind: KLedger, Ledger: &Ledger{Role: "destination", Worker: 3, Free: 4096, OpenAttempts: []string{"r1: x"}}},
		{Kind: KDrain},
		{Kind: KRoute, Attempt: "r8", Stage: "decode", Request: &RequestInfo{Index: 8, PromptTokens: 512, OutputTokens: 4}, Group: "g", PrefixTokens: 256, HitTokens: 256},
		{Kind: KKV, Attempt: "r8", Msg: "stored", Blocks: 16, Group: "g", Cached: 40, HitBlocks: 16},
		{Kind: KKV, Attempt: "r8", Msg: "none", Group: "g"},
	}
	var stream []byte
	for i := range frames {
		stream = append(stream, encode(t, &frames[i])...)
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	var buf []byte
	for i := range frames {
		var got Frame
		var err error
		got, buf, err = ReadFrame(r, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if d := cmp.Diff(frames[i], got); d != "" {
			t.Fatalf("frame %d (-sent +read):\n%s", i, d)
		}
	}
	if _, _, err := ReadFrame(r, buf); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// TestFrame_Refused: every malformed, oversized, truncated or foreign
// frame is refused with ErrFrame and what is wrong.
func TestFrame_Refused(t *testing.T) {
	good := encode(t, &Frame{Kind: KCancel, Attempt: "r1"})
	huge := binary.BigEndian.AppendUint32(nil, MaxFrame+1)
	for _, tc := range []struct {
		name, want string
		in         []byte
	}{
		{"cut in its length", "cut short in its length", good[:3]},
		{"cut in its body", "cut short: 6 bytes announced, 4 came", good[:8]},
		{"oversized", "length 65537, want 2 to 65536", append(huge, 1, 4)},
		{"too short", "length 1, want 2", []byte{0, 0, 0, 1, 1}},
		{"other version", "version 1, this reader reads version 2", raw(1, byte(KCancel), name(tAttempt, "r1"))},
		{"unknown kind", "kind 99", raw(2, 99)},
		{"kind zero", "kind 0", raw(2, 0)},
		{"unknown field", "cancel body: unknown field tag 99", raw(2, byte(KCancel), name(tAttempt, "r1"), []byte{99, 1})},
		{"out of order", "cancel body: field attempt after gen, want the fields in tag order, each once", raw(2, byte(KCancel), num(tGen, 1), name(tAttempt, "r1"))},
		{"twice", "cancel body: field attempt after attempt", raw(2, byte(KCancel), name(tAttempt, "r1"), name(tAttempt, "r2"))},
		{"name cut short", "cancel body: attempt cut short", raw(2, byte(KCancel), []byte{tAttempt, 5, 'r'})},
		{"number cut short", "cancel body: gen cut short or out of range", raw(2, byte(KCancel), name(tAttempt, "r1"), []byte{tGen, 0x80})},
		{"missing field", `cancel frame without "attempt"`, raw(2, byte(KCancel))},
		{"trailing bytes", "cancel body: unknown field tag 0", raw(2, byte(KCancel), name(tAttempt, "r1"), []byte{0})},
		{"negative generation", "negative generation", raw(2, byte(KCancel), name(tAttempt, "r1"), num(tGen, -1))},
		{"bad request", "request out of range", raw(2, byte(KRoute), name(tAttempt, "r1"), name(tStage, "prefill"), append(num(tRequest, 0), 0, 0, 2))},
		{"long attempt", "attempt id of 300 bytes", raw(2, byte(KCancel), name(tAttempt, strings.Repeat("a", 300)))},
		{"kv without msg", `kv frame without "msg"`, raw(2, byte(KKV), name(tAttempt, "r1"), num(tBlocks, 3))},
		{"negative cache", "negative time or block count", raw(2, byte(KKV), name(tMsg, "stored"), num(tCached, -1))},
		{"hit above the prefix", "prefix of 16 tokens with a hit of 32", raw(2, byte(KKV), name(tMsg, "stored"), num(tPrefixTokens, 16), num(tHitTokens, 32))},
		{"long group", "prefix group of 300 bytes", raw(2, byte(KKV), name(tMsg, "stored"), name(tGroup, strings.Repeat("g", 300)))},
		{"ledger not JSON", "ledger body: ledger not a ledger", raw(2, byte(KLedger), name(tLedger, `{"role":`))},
		{"ledger unknown field", `ledger body: ledger not a ledger: json: unknown field "extra"`, raw(2, byte(KLedger), name(tLedger, `{"extra":1}`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadFrame(bytes.NewReader(tc.in), nil)
			if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrFrame saying %q", err, tc.want)
			}
		})
	}
	if _, err := AppendFrame(nil, &Frame{Kind: KCancel, Attempt: strings.Repeat("a", MaxFrame)}); !errors.Is(err, ErrFrame) {
		t.Errorf("an oversized frame was written: %v", err)
	}
}

// FuzzDecodeFrame: no input makes the decoder panic, every refusal wraps
// ErrFrame, and a frame it reads is written back to the same frame.
func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range []Frame{
		{Kind: KHello, Role: "source", Index: 1},
		{Kind: KRoute, Attempt: "r7", Stage: "decode", Request: &RequestInfo{Index: 7, PromptTokens: 512, OutputTokens: 4}},
		{Kind: KFact, Attempt: "r7", To: "source", Msg: "ReaderCompleted", Gen: 1, PeerGen: 2},
		{Kind: KLedger, Ledger: &Ledger{Role: "source", Findings: []string{"x"}}},
		{Kind: KRoute, Attempt: "r8", Stage: "decode", Request: &RequestInfo{Index: 8, PromptTokens: 512, OutputTokens: 4}, Group: "g", PrefixTokens: 256, HitTokens: 256},
		{Kind: KKV, Attempt: "r8", Msg: "removed", Blocks: 16, Group: "g", Cached: 40, HitBlocks: 32},
	} {
		b, _ := AppendFrame(nil, &fr)
		f.Add(b[4:])
	}
	f.Add([]byte{FrameVersion, byte(KFact), tAttempt, 1, 'r'})
	f.Add([]byte{FrameVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("a refusal that is not ErrFrame: %v", err)
			}
			return
		}
		enc, err := AppendFrame(nil, &fr)
		if err != nil {
			t.Fatalf("a frame read cannot be written: %v", err)
		}
		back, err := DecodeFrame(enc[4:])
		if err != nil {
			t.Fatalf("a frame written does not read: %v", err)
		}
		// An empty list and none mean the same in a body.
		if d := cmp.Diff(fr, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("round trip (-read +reread):\n%s", d)
		}
		// The stream reader agrees with the decoder.
		if _, _, err := ReadFrame(bytes.NewReader(enc), nil); err != nil {
			t.Fatalf("ReadFrame: %v", err)
		}
	})
}
