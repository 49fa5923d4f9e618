package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// The integer helpers under pricing and packing, at the edges where a
// slip would go unseen by the larger tests: zero, negative numerators,
// exact multiples, and products at the limit.
func TestUnits_Edges(t *testing.T) {
	for _, tc := range []struct{ a, b, floor, ceil int64 }{
		{0, 16, 0, 0}, {1, 16, 0, 1}, {16, 16, 1, 1}, {17, 16, 1, 2},
		{-1, 16, -1, 0}, {-16, 16, -1, 0}, {-17, 16, -2, 0}, {-32, 16, -2, 0},
	} {
		if got := floorDiv(tc.a, tc.b); got != tc.floor {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.floor)
		}
		if got := ceilDiv(tc.a, tc.b); got != tc.ceil {
			t.Errorf("ceilDiv(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.ceil)
		}
	}
	for _, tc := range []struct {
		n   int64
		per Bytes
		out Bytes
		ok  bool
	}{
		{5, 0, 0, true}, {0, 7, 0, true}, {3, 7, 21, true}, {-1, 7, 0, false}, {1, -1, 0, false},
		{math.MaxInt64, 1, math.MaxInt64, true}, {math.MaxInt64, 2, 0, false}, {1 << 32, 1 << 32, 0, false},
	} {
		if out, ok := mulBytes(tc.n, tc.per); out != tc.out || ok != tc.ok {
			t.Errorf("mulBytes(%d, %d) = %d, %v; want %d, %v", tc.n, tc.per, out, ok, tc.out, tc.ok)
		}
	}
}

// A handoff's channels survive packing: every length and every message in
// every position, so that a field shifted onto its neighbour is noticed.
func TestPack_ChannelsRoundTrip(t *testing.T) {
	for n := uint8(0); n <= uint8(len(Channel{}.M)); n++ {
		for m := Msg(1); m < NumMsgs; m++ {
			var c Channel
			c.N = n
			for i := range c.M[:n] {
				c.M[i] = Msg((int(m)+i)%(int(NumMsgs)-1) + 1)
			}
			var got Channel
			unpackChannel(&got, packChannel(&c))
			if got != c {
				t.Fatalf("channel %v came back as %v", c, got)
			}
			var x Handoff
			x.Prefill, x.Decode = -1, -1
			x.Ch[0], x.Ch[1] = c, c
			x.Ch[1].M[0], x.Ch[1].M[len(c.M)-1] = c.M[len(c.M)-1], c.M[0]
			var w World
			w.H[0] = x
			var back Handoff
			unpackHandoff(&back, w.PackHandoff(0, 0))
			if back.Ch != x.Ch {
				t.Fatalf("channels %v came back as %v", x.Ch, back.Ch)
			}
		}
	}
}

// A handoff's command queues and slow cores survive packing, each side's
// apart from the other's and from the fields beside them: every order of
// kinds a queue can hold, with every release cause.
func TestPack_CommandsRoundTrip(t *testing.T) {
	orders := [][]Cmd{{}}
	for _, a := range []Cmd{CmdActivate, CmdRelease, CmdCancel} {
		orders = append(orders, []Cmd{a})
		for _, b := range []Cmd{CmdActivate, CmdRelease, CmdCancel} {
			if b == a {
				continue
			}
			orders = append(orders, []Cmd{a, b})
			orders = append(orders, []Cmd{a, b, CmdActivate + CmdRelease + CmdCancel - a - b})
		}
	}
	for i, o := range orders {
		for cause := CauseOther; cause <= CauseDecodeDone; cause++ {
			var x Handoff
			x.Prefill, x.Decode = -1, -1
			x.SrcIndexed = true
			for _, c := range o {
				x.Cmds[SourceSide].push(c, cause)
			}
			for _, c := range orders[(i+1)%len(orders)] {
				x.Cmds[DestinationSide].push(c, CauseAbort)
			}
			x.Slow = [2]bool{i%2 == 0, i%3 == 0}
			var w World
			w.H[0] = x
			var back Handoff
			unpackHandoff(&back, w.PackHandoff(0, 0))
			if back.Cmds != x.Cmds || back.Slow != x.Slow || !back.SrcIndexed {
				t.Fatalf("queues %v slow %v came back as %v slow %v", x.Cmds, x.Slow, back.Cmds, back.Slow)
			}
		}
	}
}

// The start-up checks of the registries refuse an entry without a name or
// meaning, an invariant whose halves do not match its kind, and an engine
// that reserves without page alignment; every shipped entry passes.
func TestRegistries_WellFormed(t *testing.T) {
	for e := range Engines {
		if !Engines[e].wellFormed() {
			t.Errorf("engine %d is not well formed", e)
		}
	}
	for _, tc := range []struct {
		t  EngineTraits
		ok bool
	}{
		{EngineTraits{Name: "x"}, true},
		{EngineTraits{Name: "x", CanReserve: true, PageAligned: true}, true},
		{EngineTraits{Name: "x", PageAligned: true}, true},
		{EngineTraits{Name: "x", CanReserve: true}, false},
		{EngineTraits{CanReserve: true, PageAligned: true}, false},
	} {
		if got := tc.t.wellFormed(); got != tc.ok {
			t.Errorf("%+v: wellFormed %v, want %v", tc.t, got, tc.ok)
		}
	}
	good := Invariants[0]
	if !good.wellFormed() {
		t.Fatalf("%s is not well formed", good.Name)
	}
	for name, spoil := range map[string]func(*Invariant){
		"no name":    func(inv *Invariant) { inv.Name = "" },
		"no meaning": func(inv *Invariant) { inv.Meaning = "" },
		"no halves":  func(inv *Invariant) { inv.step = nil },
	} {
		inv := good
		spoil(&inv)
		if inv.wellFormed() {
			t.Errorf("%s: counted as well formed", name)
		}
	}
}

// The prefix caches a configuration places on a decode worker must fit in
// its pool from the start, with the background load when that starts held:
// otherwise the initial state already breaks CapacityRespected.
func TestPrepare_PrefixCachesMustFit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hit        Tokens
		background Blocks
		atStart    bool
		want       string
	}{
		{"fits", 16, 0, false, ""},
		{"prefix caches overflow", 48, 0, false, "worker 1: prefix cache (6 blocks) exceed its capacity of 5"},
		{"with background held", 32, 2, true, "worker 1: prefix cache and background load at start (6 blocks) exceed its capacity of 5"},
		{"background not held at start", 32, 2, false, ""},
	} {
		c := &Config{
			Workers: []WorkerConfig{
				{Role: PrefillWorker, Capacity: 12},
				{Role: DecodeWorker, Capacity: 5, Slots: 2, PrefixHit: []Tokens{tc.hit, tc.hit},
					BackgroundBlocks: tc.background, BackgroundAtStart: tc.atStart},
			},
			Handoffs: []HandoffConfig{{PromptTokens: 48}, {PromptTokens: 48}},
			Linear:   &LinearProfile{BytesPerToken: 1024, BlockSize: 16},
		}
		switch err := c.Prepare(); {
		case err == nil && tc.want != "":
			t.Errorf("%s: accepted, want %q", tc.name, tc.want)
		case err != nil && (tc.want == "" || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Prepare refuses, with a message and no panic, a negative background
// load and more prefix hits than there are handoffs.
func TestPrepare_RefusesNegativeBackgroundAndExtraHits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*WorkerConfig)
		want  string
	}{
		{"negative background blocks", func(w *WorkerConfig) { w.BackgroundBlocks = -1 }, "worker 1: background load of -1 blocks and 0 slots, want neither negative"},
		{"negative background slots", func(w *WorkerConfig) { w.BackgroundSlots = -1 }, "worker 1: background load of 0 blocks and -1 slots, want neither negative"},
		{"more hits than handoffs", func(w *WorkerConfig) { w.PrefixHit = []Tokens{16, 16, 16} }, "worker 1: prefix hits for 3 handoffs, but there are 2"},
	} {
		c := &Config{
			Workers: []WorkerConfig{
				{Role: PrefillWorker, Capacity: 12},
				{Role: DecodeWorker, Capacity: 12, Slots: 2},
			},
			Handoffs: []HandoffConfig{{PromptTokens: 48}, {PromptTokens: 48}},
			Linear:   &LinearProfile{BytesPerToken: 1024, BlockSize: 16},
		}
		tc.spoil(&c.Workers[1])
		if err := c.Prepare(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Every refusal of Prepare is a located problem whose path names the
// value at fault in the configuration file's form, so that a reader
// places it without reading its words.
func TestPrepare_ProblemsNameTheirValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*Config)
		path  []any
		msg   string
	}{
		{"capacity", func(c *Config) { c.Workers[1].Capacity = 0 }, []any{"workers", 1, "capacity_blocks"}, "worker 1: capacity_blocks 0"},
		{"slots", func(c *Config) { c.Workers[1].Slots = 0 }, []any{"workers", 1, "slots"}, "worker 1: slots 0"},
		{"negative background blocks", func(c *Config) { c.Workers[1].BackgroundBlocks = -1 }, []any{"workers", 1, "background_blocks"}, "background load of -1 blocks"},
		{"negative background slots", func(c *Config) { c.Workers[1].BackgroundSlots = -1 }, []any{"workers", 1, "background_slots"}, "background load of 0 blocks and -1 slots"},
		{"background above slots", func(c *Config) { c.Workers[1].BackgroundSlots = 3 }, []any{"workers", 1, "background_slots"}, "background_slots 3, more than its 2 slots"},
		{"headroom", func(c *Config) { c.Workers[1].Headroom = -1 }, []any{"workers", 1, "headroom_tokens"}, "headroom_tokens -1"},
		{"extra hit", func(c *Config) { c.Workers[1].PrefixHit = []Tokens{16, 16, 16} }, []any{"workers", 1, "prefix_hit_tokens", 2}, "prefix hits for 3 handoffs"},
		{"hit on prefill", func(c *Config) { c.Workers[0].PrefixHit = []Tokens{0, 16} }, []any{"workers", 0, "prefix_hit_tokens", 1}, "prefix hit for handoff 1 on a prefill worker"},
		{"hit above prompt", func(c *Config) { c.Workers[1].PrefixHit = []Tokens{64} }, []any{"workers", 1, "prefix_hit_tokens", 0}, "more than its prompt of 48 tokens"},
		{"prompt", func(c *Config) { c.Handoffs[1].PromptTokens = 0 }, []any{"handoffs", 1, "prompt_tokens"}, "handoff 1: prompt_tokens 0"},
		{"handoff headroom", func(c *Config) { c.Handoffs[0].HeadroomTokens = -1 }, []any{"handoffs", 0, "headroom_tokens"}, "handoff 0: headroom_tokens -1"},
		{"no handoffs", func(c *Config) { c.Handoffs = nil }, []any{"handoffs"}, "handoffs: 0 given"},
		{"no decode worker", func(c *Config) { c.Workers[1].Role = PrefillWorker }, []any{"workers"}, "workers: 2 prefill and 0 decode"},
		{"engine", func(c *Config) { c.Engine = NumEngines }, []any{"engine"}, "engine: unknown engine"},
		{"no transfer", func(c *Config) { c.Linear = nil }, []any{"transfer"}, "transfer: exactly one of"},
		{"decode profile differs", func(c *Config) { c.DecodeLinear = &LinearProfile{BytesPerToken: 512, BlockSize: 16} }, []any{"transfer", "decode"}, "transfer: the prefill role's linear profile"},
		{"decode profile bad", func(c *Config) { c.DecodeLinear = &LinearProfile{} }, []any{"transfer", "decode"}, "the decode role's linear profile needs"},
		{"grouped profile", func(c *Config) {
			c.Linear, c.Grouped = nil, &GroupedProfile{VLLMVersion: "0.30.0", Groups: []Group{{Name: "attn", Kind: FullAttention, BlockSize: 16, TransferBytesPerBlock: new(Bytes(1)), PrefixCacheable: new(true)}}}
		}, []any{"transfer", "groups", "vllm_version"}, `vllm_version "0.30.0" has no transfer rules`},
		{"compute above capacity", func(c *Config) { c.Workers[0].Capacity = 2 }, []any{"workers", 0, "capacity_blocks"}, "worker 0: handoff 0 needs 3 compute blocks"},
		{"prefix caches above capacity", func(c *Config) { c.Workers[1].PrefixHit = []Tokens{48, 48}; c.Workers[1].Capacity = 5 }, []any{"workers", 1, "capacity_blocks"}, "prefix cache (6 blocks) exceed"},
		{"transfer overflows", func(c *Config) { c.Linear.BytesPerToken = math.MaxInt64 / 2 }, []any{"handoffs", 0}, "handoff 0: linear profile: 48 moved tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{
				Workers: []WorkerConfig{
					{Role: PrefillWorker, Capacity: 12},
					{Role: DecodeWorker, Capacity: 12, Slots: 2},
				},
				Handoffs: []HandoffConfig{{PromptTokens: 48}, {PromptTokens: 48}},
				Linear:   &LinearProfile{BytesPerToken: 1024, BlockSize: 16},
			}
			tc.spoil(c)
			err := c.Prepare()
			probs, ok := jsonfile.ProblemsOf(err)
			if err == nil || !ok || len(probs) != 1 {
				t.Fatalf("got %v (%d located problems, all located %v), want one problem", err, len(probs), ok)
			}
			if p := probs[0]; !slices.Equal(p.Path, tc.path) || !strings.Contains(p.Msg, tc.msg) {
				t.Errorf("got %v %q, want %v and a message containing %q", p.Path, p.Msg, tc.path, tc.msg)
			}
			if want := fmt.Sprintf("%s: %s", ErrConfig, probs[0].Msg); tc.name != "grouped profile" && err.Error() != want {
				t.Errorf("text %q, want %q", err, want)
			}
		})
	}
}
