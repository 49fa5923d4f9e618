package cluster

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A grouped configuration reads, prices a request's world by its groups,
// counts a prompt's blocks by them, and its JSON form reads back to the
// same profiles (the live workers start from that form).
func TestParseConfig_Grouped(t *testing.T) {
	data, err := os.ReadFile("../../testdata/sim/grouped.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig("grouped.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Grouped == nil || c.DecodeGrouped == nil || c.BlockSize() != 2048 {
		t.Fatalf("grouped %v, decode grouped %v, block size %d", c.Grouped != nil, c.DecodeGrouped != nil, c.BlockSize())
	}
	// 8,192 tokens: 4 attention blocks, 2 per mamba group (state and its
	// checkpoint), 1 ring block.
	if n, err := c.PromptBlocks(8192); err != nil || n != 13 {
		t.Errorf("a prompt of 8192 tokens takes %d blocks (%v), want 13", n, err)
	}
	back, err := ParseConfig("back.json", c.JSON())
	if err != nil {
		t.Fatalf("the JSON form does not read back: %v", err)
	}
	if !cmp.Equal(c.Grouped, back.Grouped) || !cmp.Equal(c.DecodeGrouped, back.DecodeGrouped) {
		t.Error("the JSON form reads back to other grouped profiles")
	}
}

// A transfer with groups and a linear rate both, or a group the rules
// refuse, is one clear line naming the file and line.
func TestParseConfig_GroupedRefused(t *testing.T) {
	data, err := os.ReadFile("../../testdata/sim/grouped.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"groups and a rate", `"transfer": {`, `"transfer": {"bytes_per_token": 4,`, "transfer takes either groups or bytes_per_token with block_size_tokens, not both"},
		{"unknown kind", `"kind": "state"`, `"kind": "mamba"`, `kind "mamba" is not full_attention, sliding_window or state`},
		{"decode groups and a rate", "\"decode\": {\n      \"groups\"", "\"decode\": {\n      \"bytes_per_token\": 4,\n      \"groups\"", "transfer decode takes either groups or bytes_per_token with block_size_tokens, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(data), tc.old, tc.new, 1)
			if bad == string(data) {
				t.Fatalf("testdata/sim/grouped.json has no %s", tc.old)
			}
			_, err := ParseConfig("g.json", []byte(bad))
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "g.json:") {
				t.Fatalf("got %v, want g.json:LINE: ... %s", err, tc.want)
			}
		})
	}
}
