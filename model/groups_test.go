package model_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

const groupsDir = "../testdata/groups"

func TestParseGroups_Testdata(t *testing.T) {
	for _, tc := range []struct {
		file string
		role string
		// want is the whole first line of the error, file:line included;
		// empty for a file that must parse.
		want string
	}{
		{"glm-hybrid.json", "prefill", ""},
		{"glm-hybrid.json", "decode", ""},
		{"llama-full-attention.json", "prefill", ""},
		{"glm-flash-checkpoints.json", "prefill", ""},
		{"glm-flash-0.31.json", "decode", ""},
		{"window-32.json", "prefill", ""},
		{"broken-checkpoints-on-0.31.json", "prefill",
			`broken-checkpoints-on-0.31.json:12: model: bad transfer profile: prefill profile: group "mamba_0": checkpoint_blocks needs vllm_version 0.32.0: vLLM 0.31.0 keeps only the running state of a Mamba-type group and takes no checkpoint blocks`},
		// The message names both groups; its line is the unmarked one's.
		{"broken-checkpoints-partial.json", "decode",
			`broken-checkpoints-partial.json:28: model: bad transfer profile: decode profile: group "mamba_2": checkpoint_blocks is marked on group "mamba_0" but not here: vLLM 0.32.0 takes checkpoint blocks in every Mamba-type state group or in none`},
		{"broken-checkpoints-on-ring.json", "prefill",
			`broken-checkpoints-on-ring.json:44: model: bad transfer profile: prefill profile: group "tail_ring": checkpoint_blocks applies to a Mamba-type state group only (kind state, prefix_cacheable true): no other group takes checkpoint blocks`},
		{"broken-missing-transfer-bytes.json", "prefill",
			`broken-missing-transfer-bytes.json:12: model: bad transfer profile: prefill profile: group "swa": transfer_bytes_per_block is missing`},
		{"broken-missing-prefix-cacheable.json", "decode",
			`broken-missing-prefix-cacheable.json:12: model: bad transfer profile: decode profile: group "mamba": prefix_cacheable is missing`},
		{"broken-bad-version.json", "prefill",
			`broken-bad-version.json:2: model: bad transfer profile: prefill profile: vllm_version "0.30.2" has no transfer rules (want 0.31.0 or 0.32.0)`},
		{"broken-block-size-mismatch.json", "decode",
			`broken-block-size-mismatch.json:12: model: bad transfer profile: decode profile: group "attn_latent": full-attention groups must share one block size (16 and 64)`},
		{"broken-missing-window.json", "prefill",
			`broken-missing-window.json:12: model: bad transfer profile: prefill profile: group "swa": sliding_window needs window_tokens > 0, got 0`},
		{"broken-unknown-kind.json", "decode",
			`broken-unknown-kind.json:12: model: bad transfer profile: decode profile: group "lightning": kind "linear_attention" is not full_attention, sliding_window or state`},
		// Line 7 lacks its comma; the decoder notices at line 8's key.
		{"broken-malformed.json", "prefill",
			`broken-malformed.json:8: model: bad transfer profile: malformed JSON: invalid character '"' after object key:value pair`},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".json")+"_"+tc.role, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(groupsDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			p, err := model.ParseGroups(tc.file, data, tc.role)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ParseGroups: %v", err)
				}
				if p.Role != tc.role {
					t.Errorf("role %q, want %q", p.Role, tc.role)
				}
				return
			}
			if !errors.Is(err, model.ErrProfile) {
				t.Fatalf("ParseGroups: got %v, want an error wrapping %v", err, model.ErrProfile)
			}
			if first, _, _ := strings.Cut(err.Error(), "\n"); first != tc.want {
				t.Errorf("ParseGroups:\n got %s\nwant %s", first, tc.want)
			}
		})
	}
}

func TestParseGroups_GLMHybridShape(t *testing.T) {
	// The hybrid fixture is the profile the CLI tests price, so its shape is
	// pinned here: a change to the file shows up as this failure, not as a
	// puzzling price.
	data, err := os.ReadFile(filepath.Join(groupsDir, "glm-hybrid.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseGroups("glm-hybrid.json", data, "prefill")
	if err != nil {
		t.Fatal(err)
	}
	want := profile(
		fullGroup("attn", 16, 196608),
		windowGroup("swa", 16, 128, 393216),
		model.Group{Name: "mamba", Kind: model.StateGroup, BlockSize: 1024, TransferBytesPerBlock: perBlock(2621440), PrefixCacheable: cacheable(true)},
		model.Group{Name: "tail_ring", Kind: model.StateGroup, BlockSize: 16, TransferBytesPerBlock: perBlock(65536), PrefixCacheable: cacheable(false)},
	)
	if err := model.SameGroups(want, p); err != nil || p.VLLMVersion != "0.32.0" {
		t.Errorf("glm-hybrid.json: %v, version %q", err, p.VLLMVersion)
	}
	// The prefix-cacheable mamba group makes prefill stop one token short.
	if p.Backoff() != 1 || p.FullBlockSize() != 16 {
		t.Errorf("Backoff() = %d, FullBlockSize() = %d, want 1 and 16", p.Backoff(), p.FullBlockSize())
	}
}

func TestParseGroups_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty_file", ``,
			`x.json:1: model: bad transfer profile: empty input, want {"vllm_version": ..., "groups": [...]}`},
		{"ends_early", "{\"vllm_version\": \"0.32.0\",\n",
			`x.json:2: model: bad transfer profile: the JSON ends early`},
		{"unknown_field", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [{\"name\": \"attn\",\n \"block_size\": 16}]}",
			`x.json:3: model: bad transfer profile: unknown field "block_size"`},
		{"wrong_type", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [{\"name\": \"attn\",\n \"block_size_tokens\": \"16\"}]}",
			`x.json:3: model: bad transfer profile: field "groups.block_size_tokens": got JSON string, want an integer from -2147483648 to 2147483647`},
		{"bytes_out_of_range", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [{\"name\": \"attn\",\n \"transfer_bytes_per_block\": 1e30}]}",
			`x.json:3: model: bad transfer profile: field "groups.transfer_bytes_per_block": got JSON number 1e30, want an integer`},
		// encoding/json keeps the last of two equal keys; the file is refused.
		{"duplicate_key", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [{\"name\": \"attn\",\n \"name\": \"swa\"}]}",
			`x.json:3: model: bad transfer profile: key "name" appears twice in groups[0] (first on line 2); want each key once`},
		// A problem of an unnamed group points at that group, not the version.
		{"unnamed_group", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [\n{\"name\": \"attn\", \"kind\": \"full_attention\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1, \"prefix_cacheable\": true},\n{\"kind\": \"state\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1, \"prefix_cacheable\": true}]}",
			`x.json:4: model: bad transfer profile: prefill profile: group #2: name is empty`},
		{"name_declared_twice", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [\n{\"name\": \"attn\", \"kind\": \"full_attention\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1, \"prefix_cacheable\": true},\n{\"name\": \"attn\", \"kind\": \"full_attention\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1, \"prefix_cacheable\": true}]}",
			`x.json:4: model: bad transfer profile: prefill profile: group "attn": declared twice`},
		// Each repeat of a name is at fault at its own line, and a
		// problem of a group is at that group even when an earlier one
		// has the same name.
		{"name_declared_thrice", "{\"vllm_version\": \"0.32.0\",\n \"groups\": [\n{\"name\": \"attn\", \"kind\": \"full_attention\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1, \"prefix_cacheable\": true},\n{\"name\": \"attn\", \"kind\": \"full_attention\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1, \"prefix_cacheable\": true},\n{\"name\": \"attn\", \"kind\": \"full_attention\", \"block_size_tokens\": 16, \"transfer_bytes_per_block\": 1}]}",
			"x.json:4: model: bad transfer profile: prefill profile: group \"attn\": declared twice\n" +
				"x.json:5: model: bad transfer profile: prefill profile: group \"attn\": declared twice\n" +
				"x.json:5: model: bad transfer profile: prefill profile: group \"attn\": prefix_cacheable is missing"},
		{"trailing_data", "{}\n{}",
			`x.json:2: model: bad transfer profile: trailing data after the groups object`},
		{"not_an_object", `[]`,
			`x.json:1: model: bad transfer profile: the document: got JSON array, want an object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := model.ParseGroups("x.json", []byte(tc.data), "prefill")
			if !errors.Is(err, model.ErrProfile) {
				t.Fatalf("ParseGroups: got %v, want an error wrapping %v", err, model.ErrProfile)
			}
			if err.Error() != tc.want {
				t.Errorf("ParseGroups:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestGroupsFile_Profile(t *testing.T) {
	tbpb, yes := model.Bytes(65536), true
	f := model.GroupsFile{VLLMVersion: "0.31.0", Groups: []model.GroupFile{
		{Name: "attn", Kind: "full_attention", BlockSize: 16, TransferBytesPerBlock: &tbpb, PrefixCacheable: &yes},
		{Name: "mla", Kind: "latent_attention", BlockSize: 16, TransferBytesPerBlock: &tbpb, PrefixCacheable: &yes},
	}}
	// An unknown kind is refused by name, with the role.
	_, err := f.Profile("decode")
	if want := `decode profile: group "mla": kind "latent_attention" is not full_attention, sliding_window or state`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Profile: got %v, want it to contain %s", err, want)
	}
	f.Groups = f.Groups[:1]
	p, err := f.Profile("decode")
	if err != nil {
		t.Fatal(err)
	}
	if p.Role != "decode" || p.VLLMVersion != "0.31.0" || len(p.Groups) != 1 || p.Groups[0].Kind != model.FullAttention {
		t.Errorf("Profile: got %+v", p)
	}
}

var fileLine = regexp.MustCompile(`^fuzz\.json:[1-9][0-9]*: `)

// FuzzParseGroups feeds arbitrary bytes to ParseGroups: it must never panic,
// every refusal must carry file:line and wrap ErrProfile, and every profile
// it returns must validate and price.
func FuzzParseGroups(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(groupsDir, "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files in %s: %v", groupsDir, err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := model.ParseGroups("fuzz.json", data, "decode")
		if err != nil {
			if !errors.Is(err, model.ErrProfile) {
				t.Fatalf("error does not wrap ErrProfile: %v", err)
			}
			if !fileLine.MatchString(err.Error()) {
				t.Fatalf("error has no file:line: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("returned profile does not validate: %v", err)
		}
		if p.Role != "decode" {
			t.Fatalf("role %q, want decode", p.Role)
		}
		q, err := p.Price(1000, 0)
		if err != nil {
			t.Fatalf("Price of a returned profile: %v", err)
		}
		if q.PinnedBlocks > q.ComputeBlocks || q.FullHit {
			t.Fatalf("quote without a hit: pinned %d of %d computed, full hit %v", q.PinnedBlocks, q.ComputeBlocks, q.FullHit)
		}
		if q.OfferedBlocks < q.ReservedBlocks || q.ComputeBlocks-q.PinnedBlocks < q.CheckpointBlocks {
			t.Fatalf("offers %d of the %d it moves, frees %d of its %d checkpoint blocks", q.OfferedBlocks, q.ReservedBlocks, q.ComputeBlocks-q.PinnedBlocks, q.CheckpointBlocks)
		}
	})
}
