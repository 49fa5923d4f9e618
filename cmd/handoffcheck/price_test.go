package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The expected prices below are derived by hand from docs/lifecycle.md section
// 6 for the fixture testdata/groups/glm-hybrid.json:
//
//	attn       full_attention  B = 16             196608 B/block
//	swa        sliding_window  B = 16, W = 128    393216 B/block
//	mamba      state, prefix-cacheable            2621440 B
//	tail_ring  state, not prefix-cacheable        65536 B
//
// The prefix-cacheable mamba group makes prefill stop one token short:
// T = N - 1 for N > 1.

func groupsFile(name string) string { return filepath.Join("..", "..", "testdata", "groups", name) }

func runPrice(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"price"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// priceResult is the --json object read back with the types a consumer
// would use; transfer_ms is a pointer because it is absent without a
// bandwidth.
type priceResult struct {
	Profile            string   `json:"profile"`
	Role               string   `json:"role"`
	VLLMVersion        string   `json:"vllm_version"`
	PromptTokens       int64    `json:"prompt_tokens"`
	TransferredTokens  int64    `json:"transferred_tokens"`
	RequestedHitTokens int64    `json:"requested_hit_tokens"`
	HitTokens          int64    `json:"hit_tokens"`
	HitBlocks          int64    `json:"hit_blocks"`
	FullHit            bool     `json:"full_hit"`
	MovedTokens        *int64   `json:"moved_tokens"`
	Groups             []group  `json:"groups"`
	PayloadBytes       int64    `json:"payload_bytes"`
	ReservedBlocks     int64    `json:"reserved_blocks"`
	LockedBlocks       int64    `json:"locked_blocks"`
	ComputeBlocks      int64    `json:"compute_blocks"`
	CheckpointBlocks   int64    `json:"checkpoint_blocks"`
	PinnedBlocks       int64    `json:"pinned_blocks"`
	FreedBlocks        int64    `json:"freed_blocks"`
	OfferedBlocks      int64    `json:"offered_blocks"`
	Decode             *decode  `json:"decode"`
	BandwidthGbps      *float64 `json:"bandwidth_gbps"`
	TransferMs         *float64 `json:"transfer_ms"`
}

type group struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Blocks     int64  `json:"blocks"`
	Bytes      int64  `json:"bytes"`
	Computed   int64  `json:"computed_blocks"`
	Checkpoint int64  `json:"checkpoint_blocks"`
	Kept       int64  `json:"kept_blocks"`
	Offered    int64  `json:"offered_blocks"`
}

type decode struct {
	Profile     string `json:"profile"`
	File        string `json:"file"`
	VLLMVersion string `json:"vllm_version"`
}

func ptr[T any](v T) *T { return &v }

// glmSource is the glm-hybrid fixture's source side: the blocks attn and
// swa compute, and swa's kept blocks and clip (the state groups compute,
// keep and offer their one block; attn keeps and offers all it computes).
type glmSource struct{ attn, swa, swaKept, swaOffered int64 }

// glmGroups is the glm-hybrid fixture's group list for the given moved
// blocks and source side.
func glmGroups(attn, swa, mamba, ring int64, src glmSource) []group {
	return []group{
		{"attn", "full_attention", attn, attn * 196608, src.attn, 0, src.attn, src.attn},
		{"swa", "sliding_window", swa, swa * 393216, src.swa, 0, src.swaKept, src.swaOffered},
		{"mamba", "state", mamba, mamba * 2621440, 1, 0, 1, 1},
		{"tail_ring", "state", ring, ring * 65536, 1, 0, 1, 1},
	}
}

// flashGroups is the glm-flash-checkpoints fixture's group list at
// T = 8191 when attn moves attn of its 4 blocks (25165824 B each): every
// Mamba-type group computes its running block and its checkpoint block,
// keeps, offers and moves the running one; the ring its one block.
func flashGroups(attn int64) []group {
	gs := []group{{"attn", "full_attention", attn, attn * 25165824, 4, 0, 4, 4}}
	for _, m := range []string{"mamba_0", "mamba_1", "mamba_2", "mamba_3"} {
		gs = append(gs, group{m, "state", 1, 2621440, 2, 1, 1, 1})
	}
	return append(gs, group{"tail_ring", "state", 1, 65536, 1, 0, 1, 1})
}

// glm999 is the source side of T = 999 (see glm_hybrid_no_hit).
var glm999 = glmSource{attn: 63, swa: 63, swaKept: 9, swaOffered: 9}

func TestCmdPrice_JSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want priceResult
	}{
		{
			// N = 1000, T = 999:
			//   attn  ceil(999/16) = 63 (62*16 = 992)        63*196608 = 12386304
			//   swa   63 - floor((999-128+1)/16) = 63 - 54 = 9 9*393216 = 3538944
			//   mamba 1                                       2621440
			//   ring  1                                       65536
			// payload 12386304 + 3538944 + 2621440 + 65536 = 18612224;
			// reserved = pinned = 63 + 9 + 1 + 1 = 74; compute 63 + 63 + 1 + 1 = 128,
			// so 128 - 74 = 54 blocks (swa's below the window) are freed at
			// completion; swa offers its clip of ceil(128/16) + 1 = 9 blocks, so
			// offered = 63 + 9 + 1 + 1 = 74; 18612224 B / 25e9 B/s = 0.74448896 ms.
			name: "glm_hybrid_no_hit",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1000", "--bandwidth-gbps", "25", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 1000, TransferredTokens: 999,
				Groups:       glmGroups(63, 9, 1, 1, glm999),
				PayloadBytes: 18612224, ReservedBlocks: 74, ComputeBlocks: 128, PinnedBlocks: 74, FreedBlocks: 54, OfferedBlocks: 74,
				BandwidthGbps: ptr(25.0), TransferMs: ptr(0.74448896),
			},
		},
		{
			// Partial hit of 500 tokens: floor(500/16) = 31 blocks (496 tokens);
			// attn moves 63 - 31 = 32 = 6291456 B; window and state move as
			// without a hit: 6291456 + 3538944 + 2621440 + 65536 = 12517376;
			// reserved 32 + 9 + 1 + 1 = 43, locked 31; the source is unchanged.
			name: "glm_hybrid_partial_hit",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1000", "--hit-tokens", "500", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 1000, TransferredTokens: 999, RequestedHitTokens: 500, HitTokens: 496, HitBlocks: 31,
				Groups:       glmGroups(32, 9, 1, 1, glm999),
				PayloadBytes: 12517376, ReservedBlocks: 43, LockedBlocks: 31, ComputeBlocks: 128, PinnedBlocks: 74, FreedBlocks: 54, OfferedBlocks: 74,
			},
		},
		{
			// Hit of the whole 1000-token prompt: floor(1000/16) = 62 < 63, the
			// last transferred block (tokens 992..998) is partly filled and not
			// cached, so it is not a full hit: attn moves 1 = 196608 B;
			// 196608 + 3538944 + 2621440 + 65536 = 6422528; reserved 1 + 9 + 1 + 1 = 12.
			name: "glm_hybrid_whole_prompt_partial_block",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1000", "--hit-tokens", "1000", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 1000, TransferredTokens: 999, RequestedHitTokens: 1000, HitTokens: 992, HitBlocks: 62,
				Groups:       glmGroups(1, 9, 1, 1, glm999),
				PayloadBytes: 6422528, ReservedBlocks: 12, LockedBlocks: 62, ComputeBlocks: 128, PinnedBlocks: 74, FreedBlocks: 54, OfferedBlocks: 74,
			},
		},
		{
			// Full hit: N = 1025, T = 1024, ceil(1024/16) = 64 blocks and
			// floor(1025/16) = 64 hit: nothing moves at all, payload 0, so the
			// transfer takes 0 ms. The source still computes attn 64 + swa 64 +
			// 1 + 1 = 130 and pins 64 + (64 - floor(897/16) = 64 - 56 = 8) + 1 + 1 = 74,
			// freeing 56; it offers 64 + 9 + 1 + 1 = 75.
			name: "glm_hybrid_full_hit",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--role", "decode", "--prompt-tokens", "1025", "--hit-tokens", "1025", "--bandwidth-gbps", "25", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "decode", VLLMVersion: "0.32.0",
				PromptTokens: 1025, TransferredTokens: 1024, RequestedHitTokens: 1025, HitTokens: 1024, HitBlocks: 64, FullHit: true,
				Groups:       glmGroups(0, 0, 0, 0, glmSource{attn: 64, swa: 64, swaKept: 8, swaOffered: 9}),
				PayloadBytes: 0, ReservedBlocks: 0, LockedBlocks: 64, ComputeBlocks: 130, PinnedBlocks: 74, FreedBlocks: 56, OfferedBlocks: 75,
				BandwidthGbps: ptr(25.0), TransferMs: ptr(0.0),
			},
		},
		{
			// N = 1 keeps its token despite the backoff: T = 1. attn ceil(1/16) = 1;
			// swa ceil(1/16) - floor((1-128+1)/16) = 1 - (-8) = 9, clamped to 1;
			// payload 196608 + 393216 + 2621440 + 65536 = 3276800; 4 blocks. The
			// clip of 9 is cut to the 1 block computed; nothing is freed.
			name: "glm_hybrid_one_token",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 1, TransferredTokens: 1,
				Groups:       glmGroups(1, 1, 1, 1, glmSource{attn: 1, swa: 1, swaKept: 1, swaOffered: 1}),
				PayloadBytes: 3276800, ReservedBlocks: 4, ComputeBlocks: 4, PinnedBlocks: 4, OfferedBlocks: 4,
			},
		},
		{
			// Full attention only: no state group, no backoff, T = N = 1000:
			// ceil(1000/16) = 63 * 2097152 = 132120576 B;
			// 132120576 B / 50e9 B/s = 2.64241152 ms.
			name: "full_attention_only",
			args: []string{"--groups", groupsFile("llama-full-attention.json"), "--prompt-tokens", "1000", "--bandwidth-gbps", "50", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.31.0",
				PromptTokens: 1000, TransferredTokens: 1000,
				Groups:       []group{{"attn", "full_attention", 63, 132120576, 63, 0, 63, 63}},
				PayloadBytes: 132120576, ReservedBlocks: 63, ComputeBlocks: 63, PinnedBlocks: 63, OfferedBlocks: 63,
				BandwidthGbps: ptr(50.0), TransferMs: ptr(2.64241152),
			},
		},
		{
			// Linear, 16-token pages: ceil(100/16) = 7 pages; hit floor(40/16) = 2
			// pages = 32 tokens; 100 - 32 = 68 tokens move, 68 * 131072 = 8912896 B
			// into 7 - 2 = 5 pages; 8912896 B / 1e9 B/s = 8.912896 ms.
			name: "linear_partial_hit",
			args: []string{"--bytes-per-token", "131072", "--prompt-tokens", "100", "--hit-tokens", "40", "--bandwidth-gbps", "1", "--json"},
			want: priceResult{
				Profile:      "linear",
				PromptTokens: 100, TransferredTokens: 100, RequestedHitTokens: 40, HitTokens: 32, HitBlocks: 2, MovedTokens: ptr[int64](68),
				Groups:       []group{{"linear", "linear", 5, 8912896, 7, 0, 7, 7}},
				PayloadBytes: 8912896, ReservedBlocks: 5, LockedBlocks: 2, ComputeBlocks: 7, PinnedBlocks: 7, OfferedBlocks: 7,
				BandwidthGbps: ptr(1.0), TransferMs: ptr(8.912896),
			},
		},
		{
			// Linear, 32-token pages: ceil(100/32) = 4 pages; hit floor(60/32) = 1
			// page = 32 tokens (with 16-token pages it would be 48); 68 tokens
			// move, 8912896 B into 3 pages.
			name: "linear_block_size_32",
			args: []string{"--bytes-per-token", "131072", "--block-size", "32", "--prompt-tokens", "100", "--hit-tokens", "60", "--json"},
			want: priceResult{
				Profile:      "linear",
				PromptTokens: 100, TransferredTokens: 100, RequestedHitTokens: 60, HitTokens: 32, HitBlocks: 1, MovedTokens: ptr[int64](68),
				Groups:       []group{{"linear", "linear", 3, 8912896, 4, 0, 4, 4}},
				PayloadBytes: 8912896, ReservedBlocks: 3, LockedBlocks: 1, ComputeBlocks: 4, PinnedBlocks: 4, OfferedBlocks: 4,
			},
		},
		{
			// Linear without a hit: 100 * 131072 = 13107200 B, 7 pages.
			name: "linear_no_hit",
			args: []string{"--bytes-per-token", "131072", "--prompt-tokens", "100", "--json"},
			want: priceResult{
				Profile:      "linear",
				PromptTokens: 100, TransferredTokens: 100, MovedTokens: ptr[int64](100),
				Groups:       []group{{"linear", "linear", 7, 13107200, 7, 0, 7, 7}},
				PayloadBytes: 13107200, ReservedBlocks: 7, ComputeBlocks: 7, PinnedBlocks: 7, OfferedBlocks: 7,
			},
		},
		{
			// The pull request's checkpoint example (model's
			// TestPrice_CheckpointBlocksPRExample derives it): N = 8192,
			// T = 8191; attn ceil(8191/2048) = 4; each of the four marked
			// Mamba-type groups computes its running block and a checkpoint
			// block and keeps the running one; the ring 1. Computes
			// 4 + 8 + 1 = 13, frees the 4 checkpoint blocks, keeps 9.
			name: "checkpoint_blocks_pr_example",
			args: []string{"--groups", groupsFile("glm-flash-checkpoints.json"), "--prompt-tokens", "8192", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 8192, TransferredTokens: 8191,
				Groups:       flashGroups(4),
				PayloadBytes: 111214592, ReservedBlocks: 9, ComputeBlocks: 13, CheckpointBlocks: 4, PinnedBlocks: 9, FreedBlocks: 4, OfferedBlocks: 9,
			},
		},
		{
			// The pull request's window example (TestPrice_WindowClipPRExample):
			// T = N = 1024; swa computes 64, offers ceil(32/16) + 1 = 3 and keeps
			// and moves 64 - floor(993/16) = 2: it frees 62 of its 64 blocks.
			name: "window_clip_pr_example",
			args: []string{"--groups", groupsFile("window-32.json"), "--prompt-tokens", "1024", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.31.0",
				PromptTokens: 1024, TransferredTokens: 1024,
				Groups: []group{
					{"attn", "full_attention", 64, 12582912, 64, 0, 64, 64},
					{"swa", "sliding_window", 2, 786432, 64, 0, 2, 3},
					{"tail_ring", "state", 1, 65536, 1, 0, 1, 1},
				},
				PayloadBytes: 13434880, ReservedBlocks: 67, ComputeBlocks: 129, PinnedBlocks: 67, FreedBlocks: 62, OfferedBlocks: 68,
			},
		},
		{
			// A pair: the 0.32.0 prefill that checkpoints next to a 0.31.0 decode
			// with the same groups. A hit of 4096 tokens is floor(4096/2048) = 2
			// attn blocks, which the decode side locks; attn moves 4 - 2 = 2:
			// 2*25165824 + 4*2621440 + 65536 = 50331648 + 10485760 + 65536 =
			// 60882944 B into 2 + 4 + 1 = 7 blocks. The source side is the
			// prefill's own: 13 computed, 4 of them checkpoint blocks.
			name: "pair_checkpoints_prefill_0_31_decode",
			args: []string{"--groups", groupsFile("glm-flash-checkpoints.json"), "--decode-groups", groupsFile("glm-flash-0.31.json"),
				"--prompt-tokens", "8192", "--hit-tokens", "4096", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 8192, TransferredTokens: 8191, RequestedHitTokens: 4096, HitTokens: 4096, HitBlocks: 2,
				Groups:       flashGroups(2),
				PayloadBytes: 60882944, ReservedBlocks: 7, LockedBlocks: 2, ComputeBlocks: 13, CheckpointBlocks: 4, PinnedBlocks: 9, FreedBlocks: 4, OfferedBlocks: 9,
				Decode: &decode{Profile: "grouped", File: groupsFile("glm-flash-0.31.json"), VLLMVersion: "0.31.0"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runPrice(t, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr: %s", code, stderr)
			}
			var got priceResult
			dec := json.NewDecoder(strings.NewReader(stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("output is not one price object: %v\n%s", err, stdout)
			}
			if dec.More() {
				t.Errorf("more than one JSON value:\n%s", stdout)
			}
			near := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) })
			if d := cmp.Diff(tc.want, got, near); d != "" {
				t.Errorf("price (-want +got):\n%s", d)
			}
			// transfer_ms is present exactly when a bandwidth is given.
			if has := strings.Contains(stdout, `"transfer_ms"`); has != (tc.want.TransferMs != nil) {
				t.Errorf("transfer_ms present = %v, want %v", has, tc.want.TransferMs != nil)
			}
		})
	}
}

func TestCmdPrice_Text(t *testing.T) {
	// The same glm-hybrid quote as the JSON case glm_hybrid_no_hit, as a reader
	// sees it.
	file := groupsFile("glm-hybrid.json")
	code, stdout, stderr := runPrice(t, "--groups", file, "--prompt-tokens", "1000", "--bandwidth-gbps", "25")
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr)
	}
	want := "profile:      " + file + ` (prefill, vllm 0.32.0)
prompt:       1000 tokens
transferred:  999 tokens (decode computes the last prompt token)
hit:          0 tokens asked, 0 whole full-attention blocks reused (0 tokens)
  group      kind            computed  checkpoint  kept  offered  moved  bytes
  attn       full_attention  63        0           63    63       63     12386304
  swa        sliding_window  63        0           9     9        9      3538944
  mamba      state           1         0           1     1        1      2621440
  tail_ring  state           1         0           1     1        1      65536
payload:      18612224 bytes
source:       computes 128 blocks; at completion frees 54 to the prefix cache and keeps 74 pinned; offers 74
destination:  reserves 74 blocks, locks 0 cached blocks
transfer:     0.74448896 ms at 25 GB/s
`
	if d := cmp.Diff(want, stdout); d != "" {
		t.Errorf("text (-want +got):\n%s", d)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestCmdPrice_TextHitsAndLinear(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // lines the summary must contain
		not  []string // lines it must not contain
	}{
		{
			// Full hit (see glm_hybrid_full_hit): every group moves 0 bytes.
			name: "full_hit",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1025", "--hit-tokens", "1025"},
			want: []string{
				"hit:          1025 tokens asked, 64 whole full-attention blocks reused (1024 tokens); full hit, nothing moves\n",
				"  attn       full_attention  64        0           64    64       0      0\n",
				"payload:      0 bytes\n",
			},
			not: []string{"transfer:"},
		},
		{
			// Full attention only: T = N, so no backoff note.
			name: "no_backoff",
			args: []string{"--groups", groupsFile("llama-full-attention.json"), "--prompt-tokens", "1000"},
			want: []string{"transferred:  1000 tokens\n", "payload:      132120576 bytes\n"},
			not:  []string{"decode computes"},
		},
		{
			// See checkpoint_blocks_pr_example.
			name: "checkpoints",
			args: []string{"--groups", groupsFile("glm-flash-checkpoints.json"), "--prompt-tokens", "8192"},
			want: []string{
				"  mamba_0    state           2         1           1     1        1      2621440\n",
				"source:       computes 13 blocks (4 of them checkpoint blocks); at completion frees 4 to the prefix cache and keeps 9 pinned; offers 9\n",
				"destination:  reserves 9 blocks, locks 0 cached blocks\n",
			},
			not: []string{"decode:"},
		},
		{
			// See pair_checkpoints_prefill_0_31_decode.
			name: "pair",
			args: []string{"--groups", groupsFile("glm-flash-checkpoints.json"), "--decode-groups", groupsFile("glm-flash-0.31.json"), "--prompt-tokens", "8192", "--hit-tokens", "4096"},
			want: []string{
				"decode:       " + groupsFile("glm-flash-0.31.json") + " (decode, vllm 0.31.0): the same cache groups\n",
				"destination:  reserves 7 blocks, locks 2 cached blocks\n",
			},
		},
		{
			// See linear_partial_hit.
			name: "linear",
			args: []string{"--bytes-per-token", "131072", "--prompt-tokens", "100", "--hit-tokens", "40", "--bandwidth-gbps", "1"},
			want: []string{
				"profile:      linear\n",
				"hit:          40 tokens asked, 2 whole pages reused (32 tokens)\n",
				"moved:        68 tokens\n",
				"payload:      8912896 bytes\n",
				"source:       computes 7 blocks and keeps them all pinned; offers 7\n",
				"transfer:     8.912896 ms at 1 GB/s\n",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runPrice(t, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stdout, n) {
					t.Errorf("output has %q:\n%s", n, stdout)
				}
			}
		})
	}
}

func TestCmdPrice_Deterministic(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text", []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "4097", "--hit-tokens", "300", "--bandwidth-gbps", "12.5"}},
		{"json", []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "4097", "--hit-tokens", "300", "--bandwidth-gbps", "12.5", "--json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, first, _ := runPrice(t, tc.args...)
			for range 5 {
				if _, again, _ := runPrice(t, tc.args...); again != first {
					t.Fatalf("output changed between runs:\n%s\n---\n%s", first, again)
				}
			}
		})
	}
}

func TestCmdPrice_Refusals(t *testing.T) {
	glm := groupsFile("glm-hybrid.json")
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"both_profiles", []string{"--groups", glm, "--bytes-per-token", "1000", "--prompt-tokens", "10"},
			[]string{"either --groups or --bytes-per-token, not both"}},
		{"no_profile", []string{"--prompt-tokens", "10"},
			[]string{"give --groups FILE or --bytes-per-token B"}},
		{"empty_groups_name", []string{"--groups", "", "--prompt-tokens", "10"},
			[]string{"--groups needs a file name"}},
		{"zero_prompt", []string{"--groups", glm, "--prompt-tokens", "0"},
			[]string{"--prompt-tokens 0: want a count between 1 and"}},
		{"negative_prompt", []string{"--groups", glm, "--prompt-tokens", "-5"},
			[]string{"--prompt-tokens -5"}},
		{"missing_prompt", []string{"--groups", glm},
			[]string{"--prompt-tokens 0"}},
		{"prompt_beyond_token_range", []string{"--groups", glm, "--prompt-tokens", "3000000000"},
			[]string{"--prompt-tokens 3000000000: want a count between 1 and 2147483647"}},
		{"negative_hit", []string{"--groups", glm, "--prompt-tokens", "10", "--hit-tokens", "-1"},
			[]string{"--hit-tokens -1"}},
		{"zero_bandwidth", []string{"--groups", glm, "--prompt-tokens", "10", "--bandwidth-gbps", "0"},
			[]string{"--bandwidth-gbps 0: want a positive finite number"}},
		{"negative_bandwidth", []string{"--groups", glm, "--prompt-tokens", "10", "--bandwidth-gbps", "-3"},
			[]string{"--bandwidth-gbps -3"}},
		{"nan_bandwidth", []string{"--groups", glm, "--prompt-tokens", "10", "--bandwidth-gbps", "NaN"},
			[]string{"--bandwidth-gbps NaN"}},
		{"infinite_bandwidth", []string{"--groups", glm, "--prompt-tokens", "10", "--bandwidth-gbps", "+Inf"},
			[]string{"--bandwidth-gbps +Inf"}},
		{"unknown_role", []string{"--groups", glm, "--prompt-tokens", "10", "--role", "router"},
			[]string{`--role "router": want prefill, decode or aggregated`}},
		// An aggregated grouped rank takes no handoff command, so it has
		// no handoff to price; the message says why.
		{"aggregated_grouped_rank", []string{"--groups", glm, "--prompt-tokens", "10", "--role", "aggregated"},
			[]string{glm + ": model: handoff command refused: an aggregated grouped rank refuses SubmitHandoffPrefill: it has no transfer rules"}},
		// Two roles, one topology: both roles named, and both files.
		{"pair_different_groups", []string{"--groups", groupsFile("glm-flash-checkpoints.json"), "--decode-groups", glm, "--prompt-tokens", "10"},
			[]string{"prefill " + groupsFile("glm-flash-checkpoints.json") + ", decode " + glm + ": model: bad transfer profile: the prefill and decode profiles have different cache groups: 6 groups (attn, mamba_0, mamba_1, mamba_2, mamba_3, tail_ring) on the prefill role, 4 (attn, swa, mamba, tail_ring) on the decode role"}},
		{"pair_different_window", []string{"--groups", glm, "--decode-groups", groupsFile("glm-hybrid-window-256.json"), "--prompt-tokens", "10"},
			[]string{`different cache groups: group "swa": window_tokens 128 on the prefill role, 256 on the decode role`}},
		{"pair_linear_prefill_grouped_decode", []string{"--bytes-per-token", "131072", "--decode-groups", glm, "--prompt-tokens", "10"},
			[]string{"prefill linear profile (--bytes-per-token 131072), decode " + glm + ": model: bad transfer profile: the prefill role's profile is linear and the decode role's is grouped: a grouped rank counts a handoff in full-attention blocks and a linear rank in tokens"}},
		{"pair_bad_decode_file", []string{"--groups", glm, "--decode-groups", groupsFile("broken-missing-prefix-cacheable.json"), "--prompt-tokens", "10"},
			[]string{`broken-missing-prefix-cacheable.json:12: model: bad transfer profile: decode profile: group "mamba": prefix_cacheable is missing`}},
		{"pair_with_decode_role", []string{"--groups", glm, "--decode-groups", glm, "--role", "decode", "--prompt-tokens", "10"},
			[]string{"--role decode with --decode-groups: --groups then describes the prefill role"}},
		{"pair_empty_decode_name", []string{"--groups", glm, "--decode-groups", "", "--prompt-tokens", "10"},
			[]string{"--decode-groups needs a file name"}},
		// The checkpoint marker: refused on 0.31.0, saying why.
		{"checkpoints_on_0_31", []string{"--groups", groupsFile("broken-checkpoints-on-0.31.json"), "--prompt-tokens", "10"},
			[]string{`broken-checkpoints-on-0.31.json:12: model: bad transfer profile: prefill profile: group "mamba_0": checkpoint_blocks needs vllm_version 0.32.0: vLLM 0.31.0 keeps only the running state of a Mamba-type group and takes no checkpoint blocks`}},
		{"role_with_linear", []string{"--bytes-per-token", "1000", "--prompt-tokens", "10", "--role", "decode"},
			[]string{"--role applies to --groups only"}},
		{"block_size_with_groups", []string{"--groups", glm, "--prompt-tokens", "10", "--block-size", "32"},
			[]string{"--block-size applies to --bytes-per-token"}},
		{"zero_bytes_per_token", []string{"--bytes-per-token", "0", "--prompt-tokens", "10"},
			[]string{"--bytes-per-token 0: want a positive number"}},
		{"zero_block_size", []string{"--bytes-per-token", "1000", "--block-size", "0", "--prompt-tokens", "10"},
			[]string{"--block-size 0"}},
		{"not_a_number", []string{"--groups", glm, "--prompt-tokens", "many"},
			[]string{`invalid value "many" for flag -prompt-tokens`}},
		{"unknown_flag", []string{"--groups", glm, "--prompt-tokens", "10", "--tokens", "3"},
			[]string{"flag provided but not defined: -tokens"}},
		{"extra_argument", []string{"--groups", glm, "--prompt-tokens", "10", "extra"},
			[]string{`unexpected argument "extra"`}},
		{"missing_file", []string{"--groups", groupsFile("no-such-profile.json"), "--prompt-tokens", "10"},
			[]string{"no-such-profile.json", "no such file"}},
		// A bad file is reported as file:line, naming the group and the role.
		{"missing_transfer_bytes", []string{"--groups", groupsFile("broken-missing-transfer-bytes.json"), "--prompt-tokens", "10"},
			[]string{`broken-missing-transfer-bytes.json:12: model: bad transfer profile: prefill profile: group "swa": transfer_bytes_per_block is missing`}},
		{"missing_prefix_cacheable_decode", []string{"--groups", groupsFile("broken-missing-prefix-cacheable.json"), "--role", "decode", "--prompt-tokens", "10"},
			[]string{`broken-missing-prefix-cacheable.json:12: model: bad transfer profile: decode profile: group "mamba": prefix_cacheable is missing`}},
		{"bad_version", []string{"--groups", groupsFile("broken-bad-version.json"), "--prompt-tokens", "10"},
			[]string{`broken-bad-version.json:2: model: bad transfer profile: prefill profile: vllm_version "0.30.2" has no transfer rules`}},
		{"block_size_mismatch", []string{"--groups", groupsFile("broken-block-size-mismatch.json"), "--prompt-tokens", "10"},
			[]string{`broken-block-size-mismatch.json:12: model: bad transfer profile: prefill profile: group "attn_latent": full-attention groups must share one block size (16 and 64)`}},
		{"missing_window", []string{"--groups", groupsFile("broken-missing-window.json"), "--prompt-tokens", "10"},
			[]string{`broken-missing-window.json:12: model: bad transfer profile: prefill profile: group "swa": sliding_window needs window_tokens > 0`}},
		{"unknown_kind", []string{"--groups", groupsFile("broken-unknown-kind.json"), "--role", "decode", "--prompt-tokens", "10"},
			[]string{`broken-unknown-kind.json:12: model: bad transfer profile: decode profile: group "lightning": kind "linear_attention" is not`}},
		{"malformed_json", []string{"--groups", groupsFile("broken-malformed.json"), "--prompt-tokens", "10"},
			[]string{`broken-malformed.json:8: model: bad transfer profile: malformed JSON`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runPrice(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stderr: %s)", code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout not empty on a refusal: %s", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestCmdPrice_Help(t *testing.T) {
	code, stdout, stderr := runPrice(t, "-h")
	if code != exitOK || stderr != "" || !strings.Contains(stdout, "-bytes-per-token") || !strings.Contains(stdout, "-groups") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	var out, errb bytes.Buffer
	run([]string{"help"}, &out, &errb)
	if !regexp.MustCompile(`(?m)^  price +price the bytes a handoff transfer moves$`).MatchString(out.String()) {
		t.Errorf("price is not in the command list:\n%s", out.String())
	}
}

// Every price example docs/price.md shows is what the command prints today:
// the page is part of the product, and its pricing figures are read as
// the rules' worked examples.
func TestCmdPrice_READMEExamples(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "price.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join("..", ".."))
	type example struct {
		args []string
		want string
	}
	var examples []example
	var cur *example
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock
			cur = nil
		case !inBlock:
		case strings.HasPrefix(line, "$ "):
			cur = nil
			if rest, ok := strings.CutPrefix(line, "$ handoffcheck price "); ok {
				examples = append(examples, example{args: strings.Fields(rest)})
				cur = &examples[len(examples)-1]
			}
		case cur != nil:
			cur.want += line + "\n"
		}
	}
	if len(examples) < 10 {
		t.Fatalf("found %d price examples in docs/price.md, want the section's 10 or more", len(examples))
	}
	for _, ex := range examples {
		var out, errb bytes.Buffer
		run(append([]string{"price"}, ex.args...), &out, &errb)
		if d := cmp.Diff(ex.want, out.String()+errb.String()); d != "" {
			t.Errorf("docs/price.md: handoffcheck price %s (-README +today):\n%s", strings.Join(ex.args, " "), d)
		}
	}
}
