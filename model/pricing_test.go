package model_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/handoffcheck/handoffcheck/model"
)

// The expected values in this file are derived by hand from the rules of
// docs/lifecycle.md section 6, with T transferred tokens and block size B:
//
//	full attention   ceil(T/B) blocks
//	sliding window   ceil(T/B) - floor((T-W+1)/B), clamped to [0, ceil(T/B)]
//	state            1 block
//	backoff          T = N-1 for N > 1 with a prefix-cacheable state group
//	hit of H tokens  floor(H/B) whole full-attention blocks need not move
//
// Each case's comment shows the arithmetic, so a reader can check the
// number without running the code.

func perBlock(b model.Bytes) *model.Bytes { return &b }
func cacheable(v bool) *bool              { return &v }

func fullGroup(name string, bs model.Tokens, bytes model.Bytes) model.Group {
	return model.Group{Name: name, Kind: model.FullAttention, BlockSize: bs, TransferBytesPerBlock: perBlock(bytes), PrefixCacheable: cacheable(true)}
}

func windowGroup(name string, bs, w model.Tokens, bytes model.Bytes) model.Group {
	return model.Group{Name: name, Kind: model.SlidingWindow, BlockSize: bs, Window: w, TransferBytesPerBlock: perBlock(bytes), PrefixCacheable: cacheable(true)}
}

// stateGroup is a Mamba-type running state when prefix is set, and a ring's
// one block (not prefix-cacheable, no backoff) otherwise.
func stateGroup(name string, bytes model.Bytes, prefix bool) model.Group {
	return model.Group{Name: name, Kind: model.StateGroup, BlockSize: 16, TransferBytesPerBlock: perBlock(bytes), PrefixCacheable: cacheable(prefix)}
}

func profile(groups ...model.Group) *model.GroupedProfile {
	return &model.GroupedProfile{Role: "prefill", VLLMVersion: "0.32.0", Groups: groups}
}

func mustPrice(t *testing.T, p *model.GroupedProfile, n, hit model.Tokens) model.Quote {
	t.Helper()
	q, err := p.Price(n, hit)
	if err != nil {
		t.Fatalf("Price(%d, %d): %v", n, hit, err)
	}
	return q
}

func TestPrice_FullAttention(t *testing.T) {
	// One full-attention group, B = 16, 1000 bytes per block, no state group:
	// no backoff, so T = N.
	p := profile(fullGroup("attn", 16, 1000))
	for _, tc := range []struct {
		name   string
		n      model.Tokens
		blocks model.Blocks
	}{
		{"one_token", 1, 1},                  // ceil(1/16) = 1: a partly filled block still moves
		{"exactly_one_block", 16, 1},         // ceil(16/16) = 1
		{"partly_filled_last_block", 17, 2},  // ceil(17/16) = 2: the 17th token opens a second block
		{"thousand_tokens", 1000, 63},        // ceil(1000/16) = 63 (62*16 = 992 < 1000)
		{"block_boundary_1024", 1024, 64},    // ceil(1024/16) = 64, no partial block
		{"one_past_boundary_1025", 1025, 65}, // ceil(1025/16) = 65
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustPrice(t, p, tc.n, 0)
			// bytes = blocks * 1000; every block moves, is reserved, computed,
			// pinned and offered (the decode side reads the ones it lacks).
			b := model.Bytes(tc.blocks) * 1000
			want := model.Quote{
				PromptTokens: tc.n, TransferredTokens: tc.n,
				Groups: []model.GroupQuote{{Name: "attn", Kind: model.FullAttention, Blocks: tc.blocks, Bytes: b,
					Computed: tc.blocks, Kept: tc.blocks, Offered: tc.blocks}},
				PayloadBytes: b, ReservedBlocks: tc.blocks, ComputeBlocks: tc.blocks, PinnedBlocks: tc.blocks, OfferedBlocks: tc.blocks,
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("quote (-want +got):\n%s", d)
			}
		})
	}
}

func TestPrice_SlidingWindow(t *testing.T) {
	// One window group alone, 100 bytes per block, no state group: T = N.
	// compute is ceil(T/B): the footprint while prefill runs; moved is the
	// window rule, and the source keeps only the moved blocks pinned. The
	// prefill offers its last ceil(W/B) + 1 blocks (at most all it computed),
	// and the decode side trims them to the moved ones.
	for _, tc := range []struct {
		name                    string
		n, bs, w                model.Tokens
		moved, compute, offered model.Blocks
	}{
		// The PR's own boundary: a 1,024-token prefill on a 32-token window keeps
		// 2 of its 64 window blocks: ceil(1024/16) = 64, floor((1024-32+1)/16) =
		// floor(993/16) = 62, 64 - 62 = 2. It offers ceil(32/16) + 1 = 3.
		{"pr_example_1024_tokens_window_32", 1024, 16, 32, 2, 64, 3},
		// The window of the next token (position 48) is positions 32..48 and
		// starts exactly on block 2's first slot: ceil(48/16) = 3,
		// floor((48-17+1)/16) = floor(32/16) = 2, 3 - 2 = 1. Offered
		// ceil(17/16) + 1 = 3 of the 3 computed.
		{"window_starts_on_block_boundary", 48, 16, 17, 1, 3, 3},
		// One token wider reaches position 31, the last slot of block 1:
		// floor((48-18+1)/16) = floor(31/16) = 1, 3 - 1 = 2. Offered
		// ceil(18/16) + 1 = 3.
		{"window_starts_one_before_boundary", 48, 16, 18, 2, 3, 3},
		// T - W + 1 = 1023 - 32 + 1 = 992 = 62*16 lies on a boundary:
		// ceil(1023/16) = 64 (63*16 = 1008 < 1023), 64 - 62 = 2. Offered 3.
		{"window_start_on_boundary_partial_last_block", 1023, 16, 32, 2, 64, 3},
		// The window covers everything: ceil(100/16) = 7, floor((100-4096+1)/16)
		// = floor(-3995/16) = -250 (-250*16 = -4000), 7 + 250 = 257, clamped to 7.
		// The clip ceil(4096/16) + 1 = 257 is more than the 7 computed: 7.
		{"window_covers_everything", 100, 16, 4096, 7, 7, 7},
		// W = T + 1 reaches exactly the first token: floor(0/16) = 0, 2 - 0 = 2.
		// Clip ceil(33/16) + 1 = 4, at most the 2 computed.
		{"window_reaches_first_token", 32, 16, 33, 2, 2, 2},
		// A window of the next token alone holds no transferred token on a
		// boundary: floor((32-1+1)/16) = 2, ceil(32/16) - 2 = 0, the lower clamp.
		// The prefill still offers ceil(1/16) + 1 = 2; the decode side keeps none.
		{"window_of_next_token_only", 32, 16, 1, 0, 2, 2},
		// The same window with a partly filled last block: ceil(33/16) = 3,
		// floor(33/16) = 2, 3 - 2 = 1. Offered 2 of the 3 computed.
		{"window_of_next_token_partial_block", 33, 16, 1, 1, 3, 2},
		// A group with its own block size: ceil(1000/64) = 16 (15*64 = 960),
		// floor((1000-256+1)/64) = floor(745/64) = 11 (11*64 = 704), 16 - 11 = 5.
		// Offered ceil(256/64) + 1 = 5: here the clip is exactly the window.
		{"window_block_size_64", 1000, 64, 256, 5, 16, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustPrice(t, profile(windowGroup("swa", tc.bs, tc.w, 100)), tc.n, 0)
			b := model.Bytes(tc.moved) * 100
			want := model.Quote{
				PromptTokens: tc.n, TransferredTokens: tc.n,
				Groups: []model.GroupQuote{{Name: "swa", Kind: model.SlidingWindow, Blocks: tc.moved, Bytes: b,
					Computed: tc.compute, Kept: tc.moved, Offered: tc.offered}},
				PayloadBytes: b, ReservedBlocks: tc.moved, ComputeBlocks: tc.compute, PinnedBlocks: tc.moved, OfferedBlocks: tc.offered,
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("quote (-want +got):\n%s", d)
			}
		})
	}
}

func TestPrice_StateGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *model.GroupedProfile
		n    model.Tokens
		want model.Quote
	}{
		{
			// A state group alone moves its one block whatever the length; a
			// ring is not prefix-cacheable, so T = N = 5000.
			name: "ring_alone_5000_tokens",
			p:    profile(stateGroup("ring", 5000, false)),
			n:    5000,
			want: model.Quote{
				PromptTokens: 5000, TransferredTokens: 5000,
				Groups:       []model.GroupQuote{{Name: "ring", Kind: model.StateGroup, Blocks: 1, Bytes: 5000, Computed: 1, Kept: 1, Offered: 1}},
				PayloadBytes: 5000, ReservedBlocks: 1, ComputeBlocks: 1, PinnedBlocks: 1, OfferedBlocks: 1,
			},
		},
		{
			// Next to full attention (B = 16, 1000 B/block), a ring adds one
			// block: T = N = 1025, attn ceil(1025/16) = 65 -> 65000 B, ring 1 ->
			// 5000 B, payload 70000, blocks 65 + 1 = 66.
			name: "ring_with_full_attention",
			p:    profile(fullGroup("attn", 16, 1000), stateGroup("ring", 5000, false)),
			n:    1025,
			want: model.Quote{
				PromptTokens: 1025, TransferredTokens: 1025,
				Groups: []model.GroupQuote{
					{Name: "attn", Kind: model.FullAttention, Blocks: 65, Bytes: 65000, Computed: 65, Kept: 65, Offered: 65},
					{Name: "ring", Kind: model.StateGroup, Blocks: 1, Bytes: 5000, Computed: 1, Kept: 1, Offered: 1},
				},
				PayloadBytes: 70000, ReservedBlocks: 66, ComputeBlocks: 66, PinnedBlocks: 66, OfferedBlocks: 66,
			},
		},
		{
			// A Mamba state (prefix-cacheable) also moves one block, and backs
			// off: T = 1025 - 1 = 1024, attn ceil(1024/16) = 64 -> 64000 B,
			// mamba 1 -> 7000 B, payload 71000, blocks 64 + 1 = 65.
			name: "mamba_with_full_attention",
			p:    profile(fullGroup("attn", 16, 1000), stateGroup("mamba", 7000, true)),
			n:    1025,
			want: model.Quote{
				PromptTokens: 1025, TransferredTokens: 1024,
				Groups: []model.GroupQuote{
					{Name: "attn", Kind: model.FullAttention, Blocks: 64, Bytes: 64000, Computed: 64, Kept: 64, Offered: 64},
					{Name: "mamba", Kind: model.StateGroup, Blocks: 1, Bytes: 7000, Computed: 1, Kept: 1, Offered: 1},
				},
				PayloadBytes: 71000, ReservedBlocks: 65, ComputeBlocks: 65, PinnedBlocks: 65, OfferedBlocks: 65,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, mustPrice(t, tc.p, tc.n, 0)); d != "" {
				t.Errorf("quote (-want +got):\n%s", d)
			}
		})
	}
}

func TestPrice_Backoff(t *testing.T) {
	mamba := profile(fullGroup("attn", 16, 1000), stateGroup("mamba", 7000, true))
	ring := profile(fullGroup("attn", 16, 1000), stateGroup("ring", 5000, false))
	fullOnly := profile(fullGroup("attn", 16, 1000))
	window := profile(fullGroup("attn", 16, 1000), windowGroup("swa", 16, 64, 100))
	for _, tc := range []struct {
		name      string
		p         *model.GroupedProfile
		n, t      model.Tokens
		attnBlock model.Blocks
		backoff   model.Tokens
	}{
		// T = N - 1 = 1024, attn ceil(1024/16) = 64: the backoff drops a block
		// that N = 1025 would have opened (ceil(1025/16) = 65).
		{"prefix_cacheable_state_stops_one_short", mamba, 1025, 1024, 64, 1},
		// N = 2 > 1: T = 1, ceil(1/16) = 1.
		{"two_tokens_keep_one", mamba, 2, 1, 1, 1},
		// N = 1 is not longer than the backoff: it keeps its token, T = 1.
		{"one_token_keeps_its_token", mamba, 1, 1, 1, 1},
		// A ring is a state group but not prefix-cacheable: no backoff,
		// T = 1025, ceil(1025/16) = 65.
		{"ring_does_not_back_off", ring, 1025, 1025, 65, 0},
		// Prefix-cacheable full attention or window groups mark no Mamba
		// state: T = N = 1025, 65 blocks.
		{"prefix_cacheable_full_attention_does_not_back_off", fullOnly, 1025, 1025, 65, 0},
		{"prefix_cacheable_window_does_not_back_off", window, 1025, 1025, 65, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := mustPrice(t, tc.p, tc.n, 0)
			if q.PromptTokens != tc.n || q.TransferredTokens != tc.t {
				t.Errorf("prompt %d transferred %d, want %d and %d", q.PromptTokens, q.TransferredTokens, tc.n, tc.t)
			}
			if q.Groups[0].Blocks != tc.attnBlock {
				t.Errorf("attn moves %d blocks, want %d", q.Groups[0].Blocks, tc.attnBlock)
			}
			if got := tc.p.Backoff(); got != tc.backoff {
				t.Errorf("Backoff() = %d, want %d", got, tc.backoff)
			}
		})
	}
}

// hybrid is a three-group profile: full attention B = 16 at 4096 B/block, a
// 64-token window at 2048 B/block and a Mamba state of 65536 B.
func hybrid() *model.GroupedProfile {
	return profile(fullGroup("attn", 16, 4096), windowGroup("swa", 16, 64, 2048), stateGroup("mamba", 65536, true))
}

// hybridQuote is the hybrid profile's quote for N = 1001 with hit blocks hb
// (of the 63 full-attention blocks) and full hit fh. With the backoff
// T = 1000:
//
//	attn  ceil(1000/16) = 63 blocks (62*16 = 992 < 1000); moves 63 - hb
//	swa   ceil(1000/16) - floor((1000-64+1)/16) = 63 - floor(937/16) = 63 - 58 = 5
//	mamba 1
//
// compute = 63 + 63 + 1 = 127, pinned = 63 + 5 + 1 = 69, neither depends on
// the hit; locked = hb (one full-attention group); a full hit moves nothing.
// Offered, also whatever the hit: attn its 63, swa the clip ceil(64/16) + 1
// = 5, mamba 1: 69.
func hybridQuote(hb model.Blocks, fh bool) model.Quote {
	attn, swa, mamba := 63-hb, model.Blocks(5), model.Blocks(1)
	if fh {
		attn, swa, mamba = 0, 0, 0
	}
	g := []model.GroupQuote{
		{Name: "attn", Kind: model.FullAttention, Blocks: attn, Bytes: model.Bytes(attn) * 4096, Computed: 63, Kept: 63, Offered: 63},
		{Name: "swa", Kind: model.SlidingWindow, Blocks: swa, Bytes: model.Bytes(swa) * 2048, Computed: 63, Kept: 5, Offered: 5},
		{Name: "mamba", Kind: model.StateGroup, Blocks: mamba, Bytes: model.Bytes(mamba) * 65536, Computed: 1, Kept: 1, Offered: 1},
	}
	return model.Quote{
		PromptTokens: 1001, TransferredTokens: 1000,
		HitBlocks: hb, HitTokens: model.Tokens(hb) * 16, FullHit: fh,
		Groups:         g,
		PayloadBytes:   g[0].Bytes + g[1].Bytes + g[2].Bytes,
		ReservedBlocks: attn + swa + mamba, LockedBlocks: hb,
		ComputeBlocks: 127, PinnedBlocks: 69, OfferedBlocks: 69,
	}
}

func TestPrice_Hits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hit     model.Tokens
		want    model.Quote
		payload model.Bytes // written out by hand, against the sum above
	}{
		// 63*4096 + 5*2048 + 65536 = 258048 + 10240 + 65536 = 333824.
		{"no_hit", 0, hybridQuote(0, false), 333824},
		// floor(15/16) = 0: less than a whole block is no hit.
		{"hit_below_one_block", 15, hybridQuote(0, false), 333824},
		// floor(16/16) = 1: 62*4096 + 10240 + 65536 = 253952 + 75776 = 329728.
		{"hit_of_one_block", 16, hybridQuote(1, false), 329728},
		// Partial hit: floor(500/16) = 31 (31*16 = 496), attn moves 63 - 31 = 32;
		// window and state move as without a hit: 32*4096 + 10240 + 65536 =
		// 131072 + 75776 = 206848.
		{"partial_hit", 500, hybridQuote(31, false), 206848},
		// A hit of the whole prompt is not a full hit when the last block is
		// partly filled: floor(1001/16) = 62 < 63, 1*4096 + 75776 = 79872.
		{"whole_prompt_hit_partial_last_block", 1001, hybridQuote(62, false), 79872},
		// Full hit: floor(1008/16) = 63 = every full-attention block, so nothing
		// moves at all, the window and state groups included.
		{"full_hit", 1008, hybridQuote(63, true), 0},
		// A hit larger than the transfer: floor(100000/16) = 6250, capped at
		// the 63 blocks that exist: a full hit.
		{"hit_larger_than_transfer", 100000, hybridQuote(63, true), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustPrice(t, hybrid(), 1001, tc.hit)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("quote (-want +got):\n%s", d)
			}
			if got.PayloadBytes != tc.payload {
				t.Errorf("payload %d, want %d", got.PayloadBytes, tc.payload)
			}
		})
	}
}

func TestPrice_HitLocksEveryFullAttentionGroup(t *testing.T) {
	// Two full-attention groups share B = 16. N = 100, H = 40: ceil(100/16) =
	// 7 blocks each, floor(40/16) = 2 hit blocks each; each moves 5:
	// 5*1000 + 5*3000 = 20000 B; locked 2 + 2 = 4; reserved 5 + 5 = 10;
	// compute and pinned 7 + 7 = 14.
	p := profile(fullGroup("attn_a", 16, 1000), fullGroup("attn_b", 16, 3000))
	want := model.Quote{
		PromptTokens: 100, TransferredTokens: 100, HitBlocks: 2, HitTokens: 32,
		Groups: []model.GroupQuote{
			{Name: "attn_a", Kind: model.FullAttention, Blocks: 5, Bytes: 5000, Computed: 7, Kept: 7, Offered: 7},
			{Name: "attn_b", Kind: model.FullAttention, Blocks: 5, Bytes: 15000, Computed: 7, Kept: 7, Offered: 7},
		},
		PayloadBytes: 20000, ReservedBlocks: 10, LockedBlocks: 4, ComputeBlocks: 14, PinnedBlocks: 14, OfferedBlocks: 14,
	}
	if d := cmp.Diff(want, mustPrice(t, p, 100, 40)); d != "" {
		t.Errorf("quote (-want +got):\n%s", d)
	}
}

func TestPrice_Linear(t *testing.T) {
	// 1000 bytes per token, 16-token pages, N = 100: ceil(100/16) = 7 pages.
	// A linear cache never backs off, and only the page-aligned missing part
	// moves: moved = N - 16*floor(H/16), never below 0.
	lp := model.LinearProfile{BytesPerToken: 1000, BlockSize: 16}
	linear := func(hb model.Blocks, moved model.Tokens, fh bool) model.Quote {
		return model.Quote{
			PromptTokens: 100, TransferredTokens: 100, HitBlocks: hb, HitTokens: model.Tokens(hb) * 16,
			MovedTokens: moved, FullHit: fh,
			Groups:       []model.GroupQuote{{Name: "linear", Blocks: 7 - hb, Bytes: model.Bytes(moved) * 1000, Computed: 7, Kept: 7, Offered: 7}},
			PayloadBytes: model.Bytes(moved) * 1000, ReservedBlocks: 7 - hb, LockedBlocks: hb,
			ComputeBlocks: 7, PinnedBlocks: 7, OfferedBlocks: 7,
		}
	}
	for _, tc := range []struct {
		name    string
		hit     model.Tokens
		want    model.Quote
		payload model.Bytes
	}{
		// 100 tokens * 1000 B = 100000 B, 7 pages reserved.
		{"no_hit", 0, linear(0, 100, false), 100000},
		// floor(40/16) = 2 pages = 32 tokens; 100 - 32 = 68 move: 68000 B,
		// 7 - 2 = 5 pages reserved.
		{"partial_hit_page_aligned", 40, linear(2, 68, false), 68000},
		// floor(100/16) = 6 pages = 96 tokens: the partly filled 7th page's 4
		// tokens still move: 4000 B.
		{"whole_prompt_hit_partial_last_page", 100, linear(6, 4, false), 4000},
		// floor(112/16) = 7 = every page: full hit, max(0, 100 - 112) = 0 move.
		{"full_hit", 112, linear(7, 0, true), 0},
		// floor(5000/16) = 312, capped at 7 pages: full hit.
		{"hit_larger_than_prompt", 5000, linear(7, 0, true), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lp.Price(100, tc.hit)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("quote (-want +got):\n%s", d)
			}
			if got.PayloadBytes != tc.payload {
				t.Errorf("payload %d, want %d", got.PayloadBytes, tc.payload)
			}
		})
	}
}

func TestPrice_LinearRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lp     model.LinearProfile
		n, hit model.Tokens
	}{
		{"zero_bytes_per_token", model.LinearProfile{BytesPerToken: 0, BlockSize: 16}, 100, 0},
		{"zero_block_size", model.LinearProfile{BytesPerToken: 1000, BlockSize: 0}, 100, 0},
		{"negative_prompt", model.LinearProfile{BytesPerToken: 1000, BlockSize: 16}, -1, 0},
		{"negative_hit", model.LinearProfile{BytesPerToken: 1000, BlockSize: 16}, 100, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.lp.Price(tc.n, tc.hit); !errors.Is(err, model.ErrProfile) {
				t.Errorf("Price: got %v, want an error wrapping %v", err, model.ErrProfile)
			}
		})
	}
}

func TestPrice_PinnedBlocksBelowComputeBlocks(t *testing.T) {
	// Full attention (1000 B/block), the PR's 32-token window (500 B/block)
	// and a ring (200 B); N = T = 1024 (a ring does not back off).
	//   attn  compute 64, pinned 64 (every block moves)
	//   swa   compute ceil(1024/16) = 64, pinned 64 - floor(993/16) = 64 - 62 = 2
	//   ring  compute 1, pinned 1
	// compute 64 + 64 + 1 = 129 > pinned 64 + 2 + 1 = 67: the source drops the
	// 62 window blocks below the window at completion (docs/lifecycle.md section 6).
	// payload 64*1000 + 2*500 + 200 = 65200.
	p := profile(fullGroup("attn", 16, 1000), windowGroup("swa", 16, 32, 500), stateGroup("ring", 200, false))
	q := mustPrice(t, p, 1024, 0)
	if q.ComputeBlocks != 129 || q.PinnedBlocks != 67 || q.ReservedBlocks != 67 || q.PayloadBytes != 65200 {
		t.Errorf("compute %d pinned %d reserved %d payload %d, want 129, 67, 67 and 65200",
			q.ComputeBlocks, q.PinnedBlocks, q.ReservedBlocks, q.PayloadBytes)
	}
}

func TestQuote_TransferMillis(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload model.Bytes
		gbps    float64
		want    float64
	}{
		// 1e9 B at 1e9 B/s = 1 s = 1000 ms.
		{"one_gigabyte_at_1_gbps", 1_000_000_000, 1, 1000},
		// The hybrid no-hit payload: 333824 B / 1e9 B/s = 3.33824e-4 s.
		{"hybrid_at_1_gbps", 333824, 1, 0.333824},
		// 333824 B / 25e9 B/s = 1.335296e-5 s.
		{"hybrid_at_25_gbps", 333824, 25, 0.01335296},
		// 18612224 B / 0.5e9 B/s = 0.037224448 s.
		{"half_gbps", 18612224, 0.5, 37.224448},
		// A full hit takes no time.
		{"nothing_moves", 0, 25, 0},
		// No bandwidth gives no time rather than a division by zero.
		{"zero_bandwidth", 333824, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := model.Quote{PayloadBytes: tc.payload}.TransferMillis(tc.gbps)
			if math.Abs(got-tc.want) > 1e-12*math.Max(1, tc.want) {
				t.Errorf("TransferMillis(%v) = %v, want %v", tc.gbps, got, tc.want)
			}
		})
	}
	// The hybrid no-hit quote priced end to end gives the same 0.333824 ms.
	if got := mustPrice(t, hybrid(), 1001, 0).TransferMillis(1); math.Abs(got-0.333824) > 1e-12 {
		t.Errorf("hybrid TransferMillis(1) = %v, want 0.333824", got)
	}
}

func TestGroupedProfile_Refusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *model.GroupedProfile)
		want   []string // every substring must appear
	}{
		{"missing_transfer_bytes_per_block", func(p *model.GroupedProfile) { p.Groups[1].TransferBytesPerBlock = nil },
			[]string{`decode profile: group "swa": transfer_bytes_per_block is missing`}},
		{"zero_transfer_bytes_per_block", func(p *model.GroupedProfile) { p.Groups[0].TransferBytesPerBlock = perBlock(0) },
			[]string{`decode profile: group "attn": transfer_bytes_per_block 0, want 1 to 1099511627776 (1 TiB)`}},
		{"transfer_bytes_per_block_above_limit", func(p *model.GroupedProfile) {
			p.Groups[0].TransferBytesPerBlock = perBlock(model.MaxTransferBytesPerBlock + 1)
		},
			[]string{`decode profile: group "attn": transfer_bytes_per_block 1099511627777, want 1 to 1099511627776 (1 TiB)`}},
		{"too_many_groups", func(p *model.GroupedProfile) {
			for i := len(p.Groups); i <= model.MaxGroups; i++ {
				p.Groups = append(p.Groups, stateGroup(fmt.Sprintf("ring%d", i), 64, false))
			}
		}, []string{`decode profile: 17 cache groups, at most 16 are supported`}},
		{"missing_prefix_cacheable", func(p *model.GroupedProfile) { p.Groups[2].PrefixCacheable = nil },
			[]string{`decode profile: group "mamba": prefix_cacheable is missing`}},
		{"unknown_kind", func(p *model.GroupedProfile) { p.Groups[1].Kind = model.GroupKind(9) },
			[]string{`decode profile: group "swa": kind is not full_attention, sliding_window or state`}},
		{"vllm_version_0_30_0", func(p *model.GroupedProfile) { p.VLLMVersion = "0.30.0" },
			[]string{`decode profile: vllm_version "0.30.0" has no transfer rules`}},
		{"vllm_version_missing", func(p *model.GroupedProfile) { p.VLLMVersion = "" },
			[]string{`decode profile: vllm_version "" has no transfer rules`}},
		{"full_attention_block_sizes_differ", func(p *model.GroupedProfile) {
			p.Groups = append(p.Groups, fullGroup("attn_latent", 64, 1000))
		}, []string{`decode profile: group "attn_latent": full-attention groups must share one block size (16 and 64)`}},
		{"window_tokens_missing", func(p *model.GroupedProfile) { p.Groups[1].Window = 0 },
			[]string{`decode profile: group "swa": sliding_window needs window_tokens > 0`}},
		{"window_tokens_on_full_attention", func(p *model.GroupedProfile) { p.Groups[0].Window = 128 },
			[]string{`decode profile: group "attn": window_tokens applies to sliding_window groups only`}},
		{"zero_block_size", func(p *model.GroupedProfile) { p.Groups[2].BlockSize = 0 },
			[]string{`decode profile: group "mamba": block_size_tokens must be positive`}},
		{"duplicate_name", func(p *model.GroupedProfile) { p.Groups[2].Name = "swa" },
			[]string{`decode profile: group "swa": declared twice`}},
		{"empty_name", func(p *model.GroupedProfile) { p.Groups[1].Name = "" },
			[]string{`decode profile: group #2: name is empty`}},
		{"no_groups", func(p *model.GroupedProfile) { p.Groups = nil },
			[]string{`decode profile: no cache groups`}},
		// Every problem is reported at once, each naming its group.
		{"every_problem_at_once", func(p *model.GroupedProfile) {
			p.Groups[1].TransferBytesPerBlock = nil
			p.Groups[2].PrefixCacheable = nil
		}, []string{`group "swa": transfer_bytes_per_block is missing`, `group "mamba": prefix_cacheable is missing`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := hybrid()
			p.Role = "decode"
			tc.mutate(p)
			err := p.Validate()
			if !errors.Is(err, model.ErrProfile) {
				t.Fatalf("Validate: got %v, want an error wrapping %v", err, model.ErrProfile)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %q does not contain %q", err, w)
				}
			}
			// Price refuses what Validate refuses rather than pricing garbage.
			if _, perr := p.Price(1000, 0); perr == nil || perr.Error() != err.Error() {
				t.Errorf("Price: got %v, want the Validate error", perr)
			}
		})
	}
}

func TestGroupedProfile_ValidProfilesPass(t *testing.T) {
	for _, v := range model.VLLMVersions {
		t.Run(v, func(t *testing.T) {
			p := hybrid()
			p.VLLMVersion = v
			if err := p.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestPrice_NegativeCountsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, hit model.Tokens
	}{{"negative_prompt", -1, 0}, {"negative_hit", 100, -1}} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := hybrid().Price(tc.n, tc.hit); !errors.Is(err, model.ErrProfile) {
				t.Errorf("Price(%d, %d): got %v, want an error wrapping %v", tc.n, tc.hit, err, model.ErrProfile)
			}
		})
	}
}

func TestSameGroups(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *model.GroupedProfile)
		same   bool
	}{
		// Equal values behind different pointers are the same groups.
		{"identical", func(*model.GroupedProfile) {}, true},
		{"different_transfer_bytes", func(p *model.GroupedProfile) { p.Groups[0].TransferBytesPerBlock = perBlock(8192) }, false},
		{"different_window", func(p *model.GroupedProfile) { p.Groups[1].Window = 128 }, false},
		{"different_block_size", func(p *model.GroupedProfile) { p.Groups[1].BlockSize = 32 }, false},
		{"different_prefix_cacheable", func(p *model.GroupedProfile) { p.Groups[2].PrefixCacheable = cacheable(false) }, false},
		{"prefix_cacheable_missing_on_one_side", func(p *model.GroupedProfile) { p.Groups[2].PrefixCacheable = nil }, false},
		{"different_name", func(p *model.GroupedProfile) { p.Groups[2].Name = "ssm" }, false},
		{"missing_group", func(p *model.GroupedProfile) { p.Groups = p.Groups[:2] }, false},
		{"different_order", func(p *model.GroupedProfile) { p.Groups[0], p.Groups[1] = p.Groups[1], p.Groups[0] }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefill, decode := hybrid(), hybrid()
			decode.Role = "decode"
			tc.mutate(decode)
			err := model.SameGroups(prefill, decode)
			if tc.same {
				if err != nil {
					t.Errorf("SameGroups: %v", err)
				}
				return
			}
			if !errors.Is(err, model.ErrProfile) || !strings.Contains(err.Error(), "different cache groups") {
				t.Errorf("SameGroups: got %v, want a refusal of different cache groups", err)
			}
		})
	}
}

// drawProfile draws a valid grouped profile: one to four groups of any kind,
// full-attention groups sharing one block size.
func drawProfile(t *rapid.T) *model.GroupedProfile {
	p := &model.GroupedProfile{
		Role:        rapid.SampledFrom([]string{"prefill", "decode"}).Draw(t, "role"),
		VLLMVersion: rapid.SampledFrom(model.VLLMVersions).Draw(t, "version"),
	}
	fullBS := model.Tokens(rapid.IntRange(1, 64).Draw(t, "full_block_size"))
	n := rapid.IntRange(1, 4).Draw(t, "groups")
	for i := range n {
		kind := rapid.SampledFrom([]model.GroupKind{model.FullAttention, model.SlidingWindow, model.StateGroup}).Draw(t, fmt.Sprintf("kind_%d", i))
		g := model.Group{
			Name:                  fmt.Sprintf("g%d", i),
			Kind:                  kind,
			TransferBytesPerBlock: perBlock(model.Bytes(rapid.Int64Range(1, 1<<24).Draw(t, fmt.Sprintf("bytes_%d", i)))),
			PrefixCacheable:       cacheable(rapid.Bool().Draw(t, fmt.Sprintf("prefix_%d", i))),
		}
		switch kind {
		case model.FullAttention:
			g.BlockSize = fullBS
		case model.SlidingWindow:
			g.BlockSize = model.Tokens(rapid.IntRange(1, 64).Draw(t, fmt.Sprintf("block_size_%d", i)))
			g.Window = model.Tokens(rapid.IntRange(1, 8192).Draw(t, fmt.Sprintf("window_%d", i)))
		case model.StateGroup:
			g.BlockSize = model.Tokens(rapid.IntRange(1, 2048).Draw(t, fmt.Sprintf("block_size_%d", i)))
		}
		p.Groups = append(p.Groups, g)
	}
	// vLLM 0.32.0 may checkpoint its Mamba-type groups: all of them or none.
	if p.VLLMVersion == "0.32.0" && rapid.Bool().Draw(t, "checkpoints") {
		for i := range p.Groups {
			p.Groups[i].CheckpointBlocks = p.Groups[i].Mamba()
		}
	}
	return p
}

// slowMoves is a second, deliberately plain derivation of what each group
// moves, one block at a time: a full-attention block b exists when it holds
// a transferred token (b*B < T) and is hit when the hit fills it
// ((b+1)*B <= H); a window block moves when it reaches the first position
// of the next token's window ((b+1)*B > T-W+1); a state group moves its one
// block; a hit of every full-attention block moves nothing.
func slowMoves(p *model.GroupedProfile, n, hit model.Tokens) (tr model.Tokens, moves []model.Blocks) {
	tr = n
	for _, g := range p.Groups {
		if g.Kind == model.StateGroup && *g.PrefixCacheable && n > 1 {
			tr = n - 1
		}
	}
	full, hitBlocks, anyFull := 0, 0, false
	for _, g := range p.Groups {
		if g.Kind != model.FullAttention {
			continue
		}
		anyFull = true
		full, hitBlocks = 0, 0
		for b := 0; b*int(g.BlockSize) < int(tr); b++ {
			full++
			if (b+1)*int(g.BlockSize) <= int(hit) {
				hitBlocks++
			}
		}
	}
	fullHit := anyFull && full > 0 && hitBlocks == full
	for _, g := range p.Groups {
		m := 0
		switch g.Kind {
		case model.FullAttention:
			m = full - hitBlocks
		case model.SlidingWindow:
			for b := 0; b*int(g.BlockSize) < int(tr); b++ {
				if (b+1)*int(g.BlockSize) > int(tr-g.Window+1) {
					m++
				}
			}
		case model.StateGroup:
			m = 1
		}
		if fullHit {
			m = 0
		}
		moves = append(moves, model.Blocks(m))
	}
	return tr, moves
}

func TestPrice_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProfile(t)
		n := model.Tokens(rapid.IntRange(1, 1<<16).Draw(t, "prompt"))
		hit1 := model.Tokens(rapid.IntRange(0, 1<<17).Draw(t, "hit"))
		hit2 := hit1 + model.Tokens(rapid.IntRange(0, 1<<16).Draw(t, "more_hit"))
		if err := p.Validate(); err != nil {
			t.Fatalf("drawn profile refused: %v", err)
		}
		price := func(hit model.Tokens) model.Quote {
			q, err := p.Price(n, hit)
			if err != nil {
				t.Fatalf("Price(%d, %d): %v", n, hit, err)
			}
			return q
		}
		cold, q1, q2 := price(0), price(hit1), price(hit2)
		for _, q := range []model.Quote{cold, q1, q2} {
			var sum model.Bytes
			for i, g := range q.Groups {
				if want := model.Bytes(g.Blocks) * *p.Groups[i].TransferBytesPerBlock; g.Bytes != want {
					t.Fatalf("group %s: %d bytes, want %d blocks * %d", g.Name, g.Bytes, g.Blocks, *p.Groups[i].TransferBytesPerBlock)
				}
				sum += g.Bytes
			}
			if q.PayloadBytes != sum {
				t.Fatalf("payload %d, sum of group bytes %d", q.PayloadBytes, sum)
			}
			if q.ReservedBlocks > cold.ReservedBlocks {
				t.Fatalf("reserves %d blocks with hit %d tokens, more than %d without a hit", q.ReservedBlocks, q.HitTokens, cold.ReservedBlocks)
			}
			if q.PinnedBlocks > q.ComputeBlocks {
				t.Fatalf("pins %d blocks, more than the %d it computed", q.PinnedBlocks, q.ComputeBlocks)
			}
			if q.FullHit && (q.PayloadBytes != 0 || q.ReservedBlocks != 0) {
				t.Fatalf("full hit moves %d bytes into %d blocks, want nothing", q.PayloadBytes, q.ReservedBlocks)
			}
			var checkpoints, offered model.Blocks
			for i, g := range q.Groups {
				// The decode side trims what it is offered: it can never
				// need a block the prefill did not offer, nor one the
				// source did not keep.
				if g.Offered < g.Blocks || g.Kept < g.Blocks {
					t.Fatalf("group %s (%s) moves %d blocks, offered %d, kept %d", g.Name, g.Kind, g.Blocks, g.Offered, g.Kept)
				}
				// A checkpoint block is computed and freed, never kept.
				if g.Computed-g.Kept < g.Checkpoint {
					t.Fatalf("group %s computes %d, keeps %d: its %d checkpoint blocks are not all freed", g.Name, g.Computed, g.Kept, g.Checkpoint)
				}
				if want := model.Blocks(0); p.Groups[i].CheckpointBlocks {
					if want = 1; g.Checkpoint != want {
						t.Fatalf("marked group %s takes %d checkpoint blocks, want 1", g.Name, g.Checkpoint)
					}
				} else if g.Checkpoint != want {
					t.Fatalf("unmarked group %s takes %d checkpoint blocks", g.Name, g.Checkpoint)
				}
				checkpoints += g.Checkpoint
				offered += g.Offered
			}
			if q.CheckpointBlocks != checkpoints || q.OfferedBlocks != offered {
				t.Fatalf("quote has %d checkpoint and %d offered blocks, its groups %d and %d", q.CheckpointBlocks, q.OfferedBlocks, checkpoints, offered)
			}
		}
		// More hit never moves more.
		if q2.PayloadBytes > q1.PayloadBytes || q2.ReservedBlocks > q1.ReservedBlocks {
			t.Fatalf("hit %d moves %d B in %d blocks, more than hit %d (%d B in %d blocks)",
				hit2, q2.PayloadBytes, q2.ReservedBlocks, hit1, q1.PayloadBytes, q1.ReservedBlocks)
		}
		// The source side does not depend on the destination's hit.
		if q1.ComputeBlocks != cold.ComputeBlocks || q1.PinnedBlocks != cold.PinnedBlocks {
			t.Fatalf("hit changed the source: compute %d/%d pinned %d/%d", q1.ComputeBlocks, cold.ComputeBlocks, q1.PinnedBlocks, cold.PinnedBlocks)
		}
		// The formulas agree with the block-by-block derivation.
		tr, moves := slowMoves(p, n, hit1)
		if q1.TransferredTokens != tr {
			t.Fatalf("transferred %d tokens, block-by-block derivation says %d", q1.TransferredTokens, tr)
		}
		for i, g := range q1.Groups {
			if g.Blocks != moves[i] {
				t.Fatalf("group %s (%s) moves %d blocks, block-by-block derivation says %d", g.Name, g.Kind, g.Blocks, moves[i])
			}
		}
	})
}

// Totals that do not fit their counts are refused, never wrapped around:
// a wrapped payload would be priced as small, or negative.
func TestPrice_OverflowRefused(t *testing.T) {
	// 1e12 bytes per token × 1e8 tokens = 1e20 bytes, above 2^63.
	if q, err := (model.LinearProfile{BytesPerToken: 1e12, BlockSize: 16}).Price(1e8, 0); !errors.Is(err, model.ErrProfile) ||
		!strings.Contains(err.Error(), "100000000 moved tokens × 1000000000000 bytes per token overflow the byte count") {
		t.Errorf("linear: got %d bytes, %v; want an overflow refusal", q.PayloadBytes, err)
	}
	// The largest block at one token per block: 2^31-1 blocks × 2^40 bytes.
	huge := profile(fullGroup("attn", 1, model.MaxTransferBytesPerBlock))
	if q, err := huge.Price(math.MaxInt32, 0); !errors.Is(err, model.ErrProfile) ||
		!strings.Contains(err.Error(), `group "attn": 2147483647 blocks × 1099511627776 bytes per block overflow the byte count`) {
		t.Errorf("one group: got %d bytes, %v; want an overflow refusal", q.PayloadBytes, err)
	}
	// Each group fits, their sum does not: 2^23 blocks × 2^40 bytes = 2^63.
	sum := profile(fullGroup("a", 256, model.MaxTransferBytesPerBlock), fullGroup("b", 256, model.MaxTransferBytesPerBlock))
	if q, err := sum.Price(1<<31-256, 0); !errors.Is(err, model.ErrProfile) || !strings.Contains(err.Error(), "overflows the byte count") {
		t.Errorf("sum of groups: got %d bytes, %v; want an overflow refusal", q.PayloadBytes, err)
	}
	// Block counts are 32-bit: two full-attention groups of one-token
	// blocks compute twice the prompt in blocks.
	blocks := profile(fullGroup("a", 1, 1), fullGroup("b", 1, 1))
	if q, err := blocks.Price(math.MaxInt32, 0); !errors.Is(err, model.ErrProfile) || !strings.Contains(err.Error(), "more than a block count holds") {
		t.Errorf("block total: got %d compute blocks, %v; want an overflow refusal", q.ComputeBlocks, err)
	}
	// Right below the limits, prices stay exact.
	q, err := (model.LinearProfile{BytesPerToken: math.MaxInt64 / 1000, BlockSize: 16}).Price(1000, 0)
	if err != nil || q.PayloadBytes != math.MaxInt64/1000*1000 {
		t.Errorf("largest linear payload: %d, %v", q.PayloadBytes, err)
	}
}
