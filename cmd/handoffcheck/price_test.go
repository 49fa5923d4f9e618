package main

import (
	"bytes"
	"encoding/json"
	"math"
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
	PinnedBlocks       int64    `json:"pinned_blocks"`
	BandwidthGbps      *float64 `json:"bandwidth_gbps"`
	TransferMs         *float64 `json:"transfer_ms"`
}

type group struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Blocks int64  `json:"blocks"`
	Bytes  int64  `json:"bytes"`
}

func ptr[T any](v T) *T { return &v }

// glmGroups is the glm-hybrid fixture's group list for the given blocks.
func glmGroups(attn, swa, mamba, ring int64) []group {
	return []group{
		{"attn", "full_attention", attn, attn * 196608},
		{"swa", "sliding_window", swa, swa * 393216},
		{"mamba", "state", mamba, mamba * 2621440},
		{"tail_ring", "state", ring, ring * 65536},
	}
}

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
			// reserved = pinned = 63 + 9 + 1 + 1 = 74; compute 63 + 63 + 1 + 1 = 128;
			// 18612224 B / 25e9 B/s = 0.74448896 ms.
			name: "glm_hybrid_no_hit",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1000", "--bandwidth-gbps", "25", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 1000, TransferredTokens: 999,
				Groups:       glmGroups(63, 9, 1, 1),
				PayloadBytes: 18612224, ReservedBlocks: 74, ComputeBlocks: 128, PinnedBlocks: 74,
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
				Groups:       glmGroups(32, 9, 1, 1),
				PayloadBytes: 12517376, ReservedBlocks: 43, LockedBlocks: 31, ComputeBlocks: 128, PinnedBlocks: 74,
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
				Groups:       glmGroups(1, 9, 1, 1),
				PayloadBytes: 6422528, ReservedBlocks: 12, LockedBlocks: 62, ComputeBlocks: 128, PinnedBlocks: 74,
			},
		},
		{
			// Full hit: N = 1025, T = 1024, ceil(1024/16) = 64 blocks and
			// floor(1025/16) = 64 hit: nothing moves at all, payload 0, so the
			// transfer takes 0 ms. The source still computes attn 64 + swa 64 +
			// 1 + 1 = 130 and pins 64 + (64 - floor(897/16) = 64 - 56 = 8) + 1 + 1 = 74.
			name: "glm_hybrid_full_hit",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--role", "decode", "--prompt-tokens", "1025", "--hit-tokens", "1025", "--bandwidth-gbps", "25", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "decode", VLLMVersion: "0.32.0",
				PromptTokens: 1025, TransferredTokens: 1024, RequestedHitTokens: 1025, HitTokens: 1024, HitBlocks: 64, FullHit: true,
				Groups:       glmGroups(0, 0, 0, 0),
				PayloadBytes: 0, ReservedBlocks: 0, LockedBlocks: 64, ComputeBlocks: 130, PinnedBlocks: 74,
				BandwidthGbps: ptr(25.0), TransferMs: ptr(0.0),
			},
		},
		{
			// N = 1 keeps its token despite the backoff: T = 1. attn ceil(1/16) = 1;
			// swa ceil(1/16) - floor((1-128+1)/16) = 1 - (-8) = 9, clamped to 1;
			// payload 196608 + 393216 + 2621440 + 65536 = 3276800; 4 blocks.
			name: "glm_hybrid_one_token",
			args: []string{"--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1", "--json"},
			want: priceResult{
				Profile: "grouped", Role: "prefill", VLLMVersion: "0.32.0",
				PromptTokens: 1, TransferredTokens: 1,
				Groups:       glmGroups(1, 1, 1, 1),
				PayloadBytes: 3276800, ReservedBlocks: 4, ComputeBlocks: 4, PinnedBlocks: 4,
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
				Groups:       []group{{"attn", "full_attention", 63, 132120576}},
				PayloadBytes: 132120576, ReservedBlocks: 63, ComputeBlocks: 63, PinnedBlocks: 63,
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
				Groups:       []group{{"linear", "linear", 5, 8912896}},
				PayloadBytes: 8912896, ReservedBlocks: 5, LockedBlocks: 2, ComputeBlocks: 7, PinnedBlocks: 7,
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
				Groups:       []group{{"linear", "linear", 3, 8912896}},
				PayloadBytes: 8912896, ReservedBlocks: 3, LockedBlocks: 1, ComputeBlocks: 4, PinnedBlocks: 4,
			},
		},
		{
			// Linear without a hit: 100 * 131072 = 13107200 B, 7 pages.
			name: "linear_no_hit",
			args: []string{"--bytes-per-token", "131072", "--prompt-tokens", "100", "--json"},
			want: priceResult{
				Profile:      "linear",
				PromptTokens: 100, TransferredTokens: 100, MovedTokens: ptr[int64](100),
				Groups:       []group{{"linear", "linear", 7, 13107200}},
				PayloadBytes: 13107200, ReservedBlocks: 7, ComputeBlocks: 7, PinnedBlocks: 7,
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
  group      kind            blocks  bytes
  attn       full_attention  63      12386304
  swa        sliding_window  9       3538944
  mamba      state           1       2621440
  tail_ring  state           1       65536
payload:      18612224 bytes
destination:  reserves 74 blocks, locks 0 cached blocks
source:       computes 128 blocks, keeps 74 pinned
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
				"  attn       full_attention  0       0\n",
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
			// See linear_partial_hit.
			name: "linear",
			args: []string{"--bytes-per-token", "131072", "--prompt-tokens", "100", "--hit-tokens", "40", "--bandwidth-gbps", "1"},
			want: []string{
				"profile:      linear\n",
				"hit:          40 tokens asked, 2 whole pages reused (32 tokens)\n",
				"moved:        68 tokens\n",
				"payload:      8912896 bytes\n",
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
			[]string{`--role "router": want prefill or decode`}},
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
