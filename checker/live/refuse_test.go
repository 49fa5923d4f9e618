package live

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// TestWorker_StaleFramesChangeNothing: a frame for an attempt the worker
// does not have, from an older generation of its peer, or to an older
// generation of itself changes nothing: no attempt, no state, no event.
func TestWorker_StaleFramesChangeNothing(t *testing.T) {
	cfg := cluster.DefaultConfig()
	w, err := newWorker(WorkerOptions{Side: model.SourceSide, Worker: 0, Gen: 1, Config: cfg, Scale: 0.01, Epoch: time.Now(), Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	w.frame(&Frame{Kind: KRoute, Attempt: "r0", Stage: "prefill", Request: &RequestInfo{PromptTokens: 512, OutputTokens: 4}})
	a := w.atts["r0"]
	if a == nil {
		t.Fatal("the route made no attempt")
	}
	a.peerGen = 2 // the decode worker's process is of generation 2
	before, events := a.st, w.q.Len()
	for _, f := range []Frame{
		{Kind: KFact, Attempt: "r9", To: "source", Msg: "ReaderCompleted", Gen: 2},
		{Kind: KCancel, Attempt: "r9"},
		{Kind: KFact, Attempt: "r0", To: "source", Msg: "ReaderCompleted", Gen: 1},
		{Kind: KFact, Attempt: "r0", To: "source", Msg: "ReaderCompleted", Gen: 2, PeerGen: 7},
		{Kind: KProbe, Attempt: "r0", To: "source", Gen: 0},
		{Kind: KFact, Attempt: "r0", To: "destination", Msg: "ReaderCompleted", Gen: 2},
		{Kind: KFact, Attempt: "r0", To: "source", Msg: "NoSuchFact", Gen: 2},
		{Kind: KRoute, Attempt: "r1", Stage: "decode", Request: &RequestInfo{PromptTokens: 512, OutputTokens: 4}},
	} {
		w.frame(&f)
	}
	if len(w.atts) != 1 || a.st != before || w.q.Len() != events {
		t.Fatalf("stale frames changed the worker: %d attempts, state changed %v, %d events (was %d)", len(w.atts), a.st != before, w.q.Len(), events)
	}
	if w.refused != 8 || w.refusedWhy["unknown attempt"] != 2 || w.refusedWhy["from an old generation"] != 2 {
		t.Errorf("%d frames refused (%v), want 8: 2 of an unknown attempt, 2 from an old generation", w.refused, w.refusedWhy)
	}
	// A current fact is taken.
	w.frame(&Frame{Kind: KFact, Attempt: "r0", To: "source", Msg: "ReaderCompleted", Gen: 2, PeerGen: 1})
	if w.q.Len() != events+1 {
		t.Errorf("a current fact was not taken")
	}
}

// lockedBuffer collects what the coordinator writes from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCoordinator_BadConnections: connections that send a malformed, an
// oversized or a truncated frame, or no hello, are closed with a logged
// error; the run loses nothing.
func TestCoordinator_BadConnections(t *testing.T) {
	cfg := parityConfig(t, "source-first")
	errs := &lockedBuffer{}
	sent := make(chan struct{})
	var once sync.Once
	listening := func(addr string) {
		// A run too late for its deadlines runs again: the bad
		// connections go to the first.
		once.Do(func() {
			go func() {
				defer close(sent)
				for _, b := range [][]byte{
					raw(FrameVersion, byte(KHello), name(tRole, "source"), []byte{99, 1}),
					append(binary.BigEndian.AppendUint32(nil, MaxFrame+1), FrameVersion, 1),
					raw(FrameVersion, byte(KHello), name(tRole, "source"))[:9],
					raw(FrameVersion, byte(KFact), name(tAttempt, "r0"), name(tTo, "source"), name(tMsg, "ReaderCompleted")),
					raw(FrameVersion, byte(KHello), num(tGen, 5), name(tRole, "source")),
				} {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					c.Write(b)
					c.(*net.TCPConn).CloseWrite()
					io.Copy(io.Discard, c) // until the coordinator closes it
					c.Close()
				}
			}()
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: spaced(20, 100_000)}, Rewind: again(spaced(20, 100_000)), Scale: parityScale, Dir: t.TempDir(),
		Spawn: &GoSpawner{Errors: io.Discard}, Errors: errs, Listening: listening})
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	if rep.TooLate {
		t.Skipf("the machine is too loaded for every handoff to succeed: %s", rep.LateWhy)
	}
	if !rep.Clean || rep.Succeeded != 20 {
		t.Fatalf("the run lost something: %d succeeded, leaks %v", rep.Succeeded, rep.Leaks)
	}
	for _, want := range []string{"unknown field tag 99", "length 65537", "cut short", "did not start with the hello"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("the coordinator did not log %q:\n%s", want, errs.String())
		}
	}
}
