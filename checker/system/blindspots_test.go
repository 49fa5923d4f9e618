package system

import (
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The hang fault is offered exactly where the system waits on transfers
// alone (see faults): on every reachable state of the hang configuration,
// a hang move exists for a handoff if and only if its transfer runs, can
// still succeed, has not hung yet, and every protocol move other than a
// timer is a transfer ending. Once hung, a transfer whose registrations are
// valid cannot end; fenced, it can, and only as a failure; and the hung
// pull's deadline is what ends the wait.
func TestHang_OfferedWhereTheSystemWaitsOnTransfers(t *testing.T) {
	cfg := loadConfigFile(t, "../../testdata/configs/hang.json")
	for _, run := range []string{"vllm", "sglang"} {
		c := checkerFor(t, Generated(), cfg, run)
		offered, hungStuck, deadlineFired := 0, 0, 0
		eachState(t, c, func(s *State) bool {
			var ms MoveSet
			protocol := c.Enabled(s, &ms)
			waiting := true
			busy := 0
			for i := 0; i < protocol; i++ {
				switch ms.M[i].Kind {
				case MvTimer:
				case MvTransfer:
					busy++
				default:
					busy++
					waiting = false
				}
			}
			waiting = waiting && busy > 0
			tx := model.Tx{W: &s.W}
			for h := 0; h < len(cfg.World.Handoffs); h++ {
				x := &s.W.H[h]
				want := waiting && x.Xfer == model.XferRunning && !x.Hung && tx.TransferWouldSucceed(h) && s.B.has(hang)
				got, ends := false, false
				for i := 0; i < ms.N; i++ {
					if m := ms.M[i]; int(m.H) == h && m.Kind == hang.Move() {
						got = true
					} else if int(m.H) == h && m.Kind == MvTransfer {
						ends = true
					}
				}
				if got != want {
					t.Fatalf("%s: hang offered=%v for handoff %d, want %v:\n%s", run, got, h, want, strings.Join(c.DescribeState(s), "\n"))
				}
				if got {
					offered++
				}
				if x.Hung && ends != !tx.TransferWouldSucceed(h) {
					t.Fatalf("%s: a hung transfer can end=%v with registrations valid=%v:\n%s", run, ends, tx.TransferWouldSucceed(h), strings.Join(c.DescribeState(s), "\n"))
				}
				if x.Hung && tx.TransferWouldSucceed(h) {
					hungStuck++
					for i := 0; i < ms.N; i++ {
						if m := ms.M[i]; m.Kind == MvTimer && int(m.H) == h && (model.Timer(m.Arg) == model.TimerPull || model.Timer(m.Arg) == model.TimerPush) {
							deadlineFired++
						}
					}
				}
			}
			return false
		})
		if offered == 0 || hungStuck == 0 || deadlineFired == 0 {
			t.Fatalf("%s: hang offered in %d states, %d states with a hung transfer that cannot end, its deadline enabled in %d: the test saw nothing", run, offered, hungStuck, deadlineFired)
		}
		t.Logf("%s: hang offered in %d states; %d with a hung transfer; its deadline enabled in %d", run, offered, hungStuck, deadlineFired)
	}
}

// The KV index shrinks as well as grows in the built-in tables: when a
// second prefill needs the pool the first one's released (and published)
// blocks sit in, the allocation evicts them and the index gets a Removed;
// every state on the way still has the index match the cache.
func TestIndex_EvictionPublishesRemoved(t *testing.T) {
	cfg := mustConfig(t, `{
  "schema": "handoffcheck.config/v1",
  "runs": [{"name": "vllm", "policy": "source-first", "engine": "vllm"}],
  "workers": [
    {"role": "prefill", "capacity_blocks": 5},
    {"role": "decode", "capacity_blocks": 16, "slots": 2, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}, {"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {}
}`)
	c := checkerFor(t, Generated(), cfg, "vllm")
	removed := 0
	eachState(t, c, func(s *State) bool {
		var ms MoveSet
		c.Enabled(s, &ms)
		for i := 0; i < ms.N; i++ {
			next := *s
			j, v, err := c.Step(&next, ms.M[i], nil)
			if err != nil || v != nil {
				t.Fatalf("move %v: %v %v", ms.M[i], err, v)
			}
			for _, e := range j.Effects() {
				if e.Kind == model.EffRemoved {
					removed++
				}
			}
		}
		return removed > 0
	})
	if removed == 0 {
		t.Fatal("no step published Removed: the index never shrank")
	}
}

// The evict fault: where a record keeps its released blocks while it is
// still live (here a source that releases on the reader's acknowledgement
// and stays Pinned, as a broken table might), the environment may evict
// them, and the index that advertised them gets Removed.
func TestIndex_EvictFaultPublishesRemoved(t *testing.T) {
	s := spec.Default()
	src := &s.Source
	i := src.Lookup(spec.SourceFirst, "Pinned", "ReaderCompleted")
	if i < 0 {
		t.Fatal("no Pinned × ReaderCompleted row")
	}
	src.Rows[i].To = ""
	src.Rows[i].Actions = []string{"DisarmLease", "ReleaseSource", "PublishCached"}
	cfg := mustConfig(t, strings.Replace(smallConfig, `"faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}`, `"faults": {"evict": 1}`, 1))
	c := checkerFor(t, interpreted(t, s), cfg, "vllm")
	before := findState(t, c, func(st *State) bool {
		for _, m := range c.MovesInto(st, nil) {
			if m.Kind == Evict.Move() {
				return true
			}
		}
		return false
	})
	var evict Move
	for _, m := range c.MovesInto(&before, nil) {
		if m.Kind == Evict.Move() {
			evict = m
		}
	}
	if model.Side(evict.Arg) != model.SourceSide || !before.W.H[evict.H].SrcIndexed {
		t.Fatalf("evict offered for %v, want the source's advertised blocks:\n%s", evict, strings.Join(c.DescribeState(&before), "\n"))
	}
	after := before
	j, v, err := c.Step(&after, evict, nil)
	if err != nil || v != nil {
		t.Fatalf("evict: %v %v", err, v)
	}
	removed := false
	for _, e := range j.Effects() {
		removed = removed || e.Kind == model.EffRemoved
	}
	x := &after.W.H[evict.H]
	if !removed || x.SrcIndexed || x.SrcKept {
		t.Fatalf("evict published Removed=%v, left indexed=%v kept=%v:\n%s", removed, x.SrcIndexed, x.SrcKept, strings.Join(c.DescribeState(&after), "\n"))
	}
}
