package model_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/model"
)

// The grouped-transfer rules beyond the payload: the checkpoint blocks of
// vLLM 0.32.0, the prefill's window clip, the topology of a pair and the
// handoff commands a rank takes. Expected values are derived by hand in the
// comments, from docs/lifecycle.md section 6.

func fixture(t *testing.T, name, role string) *model.GroupedProfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(groupsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseGroups(name, data, role)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The pull request's example: a 0.32.0 source of 8,192 tokens frees its 4
// checkpoint blocks at completion and holds 9 blocks. The fixture has one
// full-attention group of 2,048-token blocks, four Mamba-type groups
// marked with checkpoint_blocks and a tail ring (not prefix-cacheable).
//
//	backoff    a Mamba-type group: T = 8192 - 1 = 8191
//	attn       ceil(8191/2048) = 4 blocks (3*2048 = 6144 < 8191): blocks 0-3,
//	           the last holding 8191 - 6144 = 2047 tokens; computed, kept, moved
//	mamba_k    the running block and the checkpoint block the last chunk
//	           takes: computes 2, keeps and moves the running block (1)
//	tail_ring  1 block, computed, kept, moved
//
// computes 4 + 4*2 + 1 = 13; holds 4 + 4 + 1 = 9; frees 13 - 9 = 4, the four
// checkpoint blocks, to the prefix cache. payload 4*25165824 + 4*2621440 +
// 65536 = 100663296 + 10485760 + 65536 = 111214592 bytes.
func TestPrice_CheckpointBlocksPRExample(t *testing.T) {
	mamba := func(i string) model.GroupQuote {
		return model.GroupQuote{Name: "mamba_" + i, Kind: model.StateGroup, Blocks: 1, Bytes: 2621440, Computed: 2, Checkpoint: 1, Kept: 1, Offered: 1}
	}
	want := model.Quote{
		PromptTokens: 8192, TransferredTokens: 8191,
		Groups: []model.GroupQuote{
			{Name: "attn", Kind: model.FullAttention, Blocks: 4, Bytes: 100663296, Computed: 4, Kept: 4, Offered: 4},
			mamba("0"), mamba("1"), mamba("2"), mamba("3"),
			{Name: "tail_ring", Kind: model.StateGroup, Blocks: 1, Bytes: 65536, Computed: 1, Kept: 1, Offered: 1},
		},
		PayloadBytes: 111214592, ReservedBlocks: 9, ComputeBlocks: 13, PinnedBlocks: 9,
		CheckpointBlocks: 4, OfferedBlocks: 9,
	}
	got := mustPrice(t, fixture(t, "glm-flash-checkpoints.json", "prefill"), 8192, 0)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("quote (-want +got):\n%s", d)
	}
	if freed := got.ComputeBlocks - got.PinnedBlocks; freed != 4 || freed != got.CheckpointBlocks {
		t.Errorf("frees %d blocks at completion, want its 4 checkpoint blocks", freed)
	}

	// The same groups on vLLM 0.31.0, which takes no checkpoint blocks:
	// the version changes what the source computes (13 -> 9) and frees
	// (4 -> 0), never what moves.
	old := mustPrice(t, fixture(t, "glm-flash-0.31.json", "prefill"), 8192, 0)
	if old.ComputeBlocks != 9 || old.CheckpointBlocks != 0 || old.PinnedBlocks != 9 ||
		old.PayloadBytes != got.PayloadBytes || old.ReservedBlocks != got.ReservedBlocks {
		t.Errorf("0.31.0: computes %d (%d checkpoint), pins %d, moves %d B in %d blocks; want 9 (0), 9, and 0.32.0's %d B in %d",
			old.ComputeBlocks, old.CheckpointBlocks, old.PinnedBlocks, old.PayloadBytes, old.ReservedBlocks, got.PayloadBytes, got.ReservedBlocks)
	}

	// A destination hit changes what moves, not the source's checkpoints:
	// a hit of 4096 tokens is floor(4096/2048) = 2 attn blocks, so attn
	// moves 2 and the payload drops by 2*25165824 = 50331648.
	hit := mustPrice(t, fixture(t, "glm-flash-checkpoints.json", "prefill"), 8192, 4096)
	if hit.CheckpointBlocks != 4 || hit.ComputeBlocks != 13 || hit.PayloadBytes != 111214592-50331648 {
		t.Errorf("hit 4096: %d checkpoint of %d computed, payload %d; want 4 of 13 and %d", hit.CheckpointBlocks, hit.ComputeBlocks, hit.PayloadBytes, 111214592-50331648)
	}
}

// The pull request's window example: after a 1,024-token prefill, a source
// with a 32-token window keeps 2 of its 64 window blocks. The fixture has
// no Mamba-type group (its ring is not prefix-cacheable), so T = N = 1024.
//
//	attn       ceil(1024/16) = 64 blocks, all kept, offered and moved
//	swa        computes ceil(1024/16) = 64; keeps and moves
//	           64 - floor((1024-32+1)/16) = 64 - floor(993/16) = 64 - 62 = 2;
//	           the prefill offers its clip of ceil(32/16) + 1 = 3 blocks
//	           (blocks 61-63), the decode side trims it to the 2 in the window
//	           (blocks 62-63: positions 992-1023 and the next token's window
//	           993-1024)
//	tail_ring  1 block
//
// computes 64 + 64 + 1 = 129, keeps 64 + 2 + 1 = 67, offers 64 + 3 + 1 = 68,
// moves 67: 64*196608 + 2*393216 + 65536 = 12582912 + 786432 + 65536 = 13434880.
func TestPrice_WindowClipPRExample(t *testing.T) {
	want := model.Quote{
		PromptTokens: 1024, TransferredTokens: 1024,
		Groups: []model.GroupQuote{
			{Name: "attn", Kind: model.FullAttention, Blocks: 64, Bytes: 12582912, Computed: 64, Kept: 64, Offered: 64},
			{Name: "swa", Kind: model.SlidingWindow, Blocks: 2, Bytes: 786432, Computed: 64, Kept: 2, Offered: 3},
			{Name: "tail_ring", Kind: model.StateGroup, Blocks: 1, Bytes: 65536, Computed: 1, Kept: 1, Offered: 1},
		},
		PayloadBytes: 13434880, ReservedBlocks: 67, ComputeBlocks: 129, PinnedBlocks: 67, OfferedBlocks: 68,
	}
	if d := cmp.Diff(want, mustPrice(t, fixture(t, "window-32.json", "prefill"), 1024, 0)); d != "" {
		t.Errorf("quote (-want +got):\n%s", d)
	}
}

func TestTopology_Check(t *testing.T) {
	glm := func(role string) *model.GroupedProfile { return fixture(t, "glm-hybrid.json", role) }
	lin := &model.LinearProfile{BytesPerToken: 131072, BlockSize: 16}
	for _, tc := range []struct {
		name string
		t    model.Topology
		want string // the whole message; empty when the pair may hand off
	}{
		{"same_groups", model.Topology{PrefillGrouped: glm("prefill"), DecodeGrouped: glm("decode")}, ""},
		// A 0.32.0 prefill that checkpoints next to a 0.31.0 decode with
		// the same groups: a checkpoint block never moves, so they pair.
		{"checkpoints_on_one_side_only", model.Topology{
			PrefillGrouped: fixture(t, "glm-flash-checkpoints.json", "prefill"),
			DecodeGrouped:  fixture(t, "glm-flash-0.31.json", "decode")}, ""},
		{"same_linear", model.Topology{PrefillLinear: lin, DecodeLinear: &model.LinearProfile{BytesPerToken: 131072, BlockSize: 16}}, ""},
		{"different_window", model.Topology{PrefillGrouped: glm("prefill"), DecodeGrouped: func() *model.GroupedProfile {
			p := glm("decode")
			p.Groups[1].Window = 256
			return p
		}()}, `model: bad transfer profile: the prefill and decode profiles have different cache groups: group "swa": window_tokens 128 on the prefill role, 256 on the decode role; a grouped rank counts a handoff in blocks, so both roles need the same groups`},
		{"missing_group", model.Topology{PrefillGrouped: glm("prefill"), DecodeGrouped: func() *model.GroupedProfile {
			p := glm("decode")
			p.Groups = p.Groups[:3]
			return p
		}()}, `model: bad transfer profile: the prefill and decode profiles have different cache groups: 4 groups (attn, swa, mamba, tail_ring) on the prefill role, 3 (attn, swa, mamba) on the decode role; a grouped rank counts a handoff in blocks, so both roles need the same groups`},
		{"grouped_prefill_linear_decode", model.Topology{PrefillGrouped: glm("prefill"), DecodeLinear: lin},
			`model: bad transfer profile: the prefill role's profile is grouped and the decode role's is linear: a grouped rank counts a handoff in full-attention blocks and a linear rank in tokens, so the two roles cannot hand off to each other`},
		{"linear_prefill_grouped_decode", model.Topology{PrefillLinear: lin, DecodeGrouped: glm("decode")},
			`model: bad transfer profile: the prefill role's profile is linear and the decode role's is grouped: a grouped rank counts a handoff in full-attention blocks and a linear rank in tokens, so the two roles cannot hand off to each other`},
		{"different_linear", model.Topology{PrefillLinear: lin, DecodeLinear: &model.LinearProfile{BytesPerToken: 65536, BlockSize: 16}},
			`model: bad transfer profile: the prefill role's linear profile (131072 bytes per token, 16-token pages) and the decode role's (65536 bytes per token, 16-token pages) differ: both roles must agree on what a token moves and on the page a hit is counted in`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.t.Check()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, model.ErrProfile) || err.Error() != tc.want {
				t.Errorf("Check:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// Every rank against every handoff command, grouped and linear: a prefill
// rank takes the source's three, a decode rank the destination's four, an
// aggregated linear rank all, an aggregated grouped rank none, and every
// refusal says why.
func TestRank_Accept(t *testing.T) {
	for _, r := range []model.Rank{model.PrefillRank, model.DecodeRank, model.AggregatedRank} {
		for _, grouped := range []bool{false, true} {
			for _, c := range model.HandoffCommands {
				err := r.Accept(c, grouped)
				var want bool
				reason := ""
				switch r {
				case model.PrefillRank:
					want, reason = c.Side() == model.SourceSide, "serves only the source role"
				case model.DecodeRank:
					want, reason = c.Side() == model.DestinationSide, "serves only the destination role"
				case model.AggregatedRank:
					want, reason = !grouped, "it has no transfer rules"
				}
				if got := err == nil; got != want {
					t.Errorf("%s rank (grouped %v) %s: accepted %v, want %v (%v)", r, grouped, c, got, want, err)
					continue
				}
				if err != nil && (!errors.Is(err, model.ErrRefused) || !strings.Contains(err.Error(), c.String()) || !strings.Contains(err.Error(), reason)) {
					t.Errorf("%s rank (grouped %v) %s: refusal %q does not name the command and %q", r, grouped, c, err, reason)
				}
			}
		}
	}
	if len(model.HandoffCommands) != 7 {
		t.Errorf("%d handoff commands, want the source's 3 and the destination's 4", len(model.HandoffCommands))
	}
	err := model.AggregatedRank.Accept(model.SubmitHandoffPrefill, true)
	want := "model: handoff command refused: an aggregated grouped rank refuses SubmitHandoffPrefill: it has no transfer rules (vLLM builds a grouped cache's rules only for a prefill or decode rank of a disaggregated pair), so it never truncates a prompt, holds a source or reserves a destination"
	if err == nil || err.Error() != want {
		t.Errorf("aggregated grouped SubmitHandoffPrefill:\n got %v\nwant %s", err, want)
	}
}
