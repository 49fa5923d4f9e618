package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// GroupsFile is the JSON form of a grouped transfer profile:
//
//	{"vllm_version": "0.31.0", "groups": [{"name": "attn", "kind": "full_attention",
//	  "block_size_tokens": 16, "transfer_bytes_per_block": 65536, "prefix_cacheable": true}]}
//
// A Mamba-type state group (kind state, prefix_cacheable true) of a vLLM
// 0.32.0 profile may add "checkpoint_blocks": true.
type GroupsFile struct {
	VLLMVersion string      `json:"vllm_version"`
	Groups      []GroupFile `json:"groups"`
}

// GroupFile is one group of a GroupsFile.
type GroupFile struct {
	Name                  string `json:"name"`
	Kind                  string `json:"kind"`
	BlockSize             Tokens `json:"block_size_tokens"`
	Window                Tokens `json:"window_tokens"`
	TransferBytesPerBlock *Bytes `json:"transfer_bytes_per_block"`
	PrefixCacheable       *bool  `json:"prefix_cacheable"`
	// CheckpointBlocks marks a Mamba-type state group that takes a
	// checkpoint block (vLLM 0.32.0 only).
	CheckpointBlocks bool `json:"checkpoint_blocks"`
}

// Profile turns the file into a validated profile of a role ("prefill" or
// "decode"). Every refusal names the role and the group.
func (g *GroupsFile) Profile(role string) (*GroupedProfile, error) {
	p := &GroupedProfile{Role: role, VLLMVersion: g.VLLMVersion}
	var errs []error
	for i, fg := range g.Groups {
		k, ok := ParseGroupKind(fg.Kind)
		if !ok {
			name := fg.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			errs = append(errs, fmt.Errorf("%w: %s profile: group %q: kind %q is not full_attention, sliding_window or state", ErrProfile, role, name, fg.Kind))
		}
		p.Groups = append(p.Groups, Group{Name: fg.Name, Kind: k, BlockSize: fg.BlockSize, Window: fg.Window,
			TransferBytesPerBlock: fg.TransferBytesPerBlock, PrefixCacheable: fg.PrefixCacheable, CheckpointBlocks: fg.CheckpointBlocks})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// ParseGroups reads a groups file. Errors name the file and line and say
// what was expected; a profile the rules refuse names the role and group.
func ParseGroups(file string, data []byte, role string) (*GroupedProfile, error) {
	var g GroupsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, jsonfile.DecodeError(file, data, err, ErrProfile, `{"vllm_version": ..., "groups": [...]}`)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the groups object", file, jsonfile.Line(data, int(dec.InputOffset())), ErrProfile)
	}
	pos, err := jsonfile.Scan(file, data, ErrProfile)
	if err != nil {
		return nil, err
	}
	p, err := g.Profile(role)
	if err != nil {
		// Every problem gets the line of the group it names (or of the
		// version), so that each line of the message points somewhere.
		var lines []string
		for _, msg := range strings.Split(err.Error(), "\n") {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", file, GroupsLine(pos, nil, g.Groups, msg), msg))
		}
		return nil, &profileError{msg: strings.Join(lines, "\n")}
	}
	return p, nil
}

// GroupsLine is the line a profile problem msg is about, in a document
// whose positions are pos and where the groups-file object sits at path
// at (nil for a file of its own): the group msg names (its name's line, or
// the group's own for an unnamed one, "#N"), the groups list for a problem
// of the list, else the vllm_version key.
func GroupsLine(pos *jsonfile.Positions, at []any, groups []GroupFile, msg string) int {
	path := func(rest ...any) []any { return append(slices.Clone(at), rest...) }
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	if strings.Contains(msg, "declared twice") {
		slices.Reverse(order) // the second declaration is the one at fault
	}
	// A message is about the group it opens with ("group X: ..."); one
	// that names another group too ("marked on group Y") is still X's.
	for _, subject := range []bool{true, false} {
		for _, i := range order {
			fg := groups[i]
			if fg.Name == "" {
				n := fmt.Sprintf("#%d", i+1)
				if strings.Contains(msg, "group "+n+":") || strings.Contains(msg, fmt.Sprintf("group %q:", n)) ||
					(!subject && strings.Contains(msg, fmt.Sprintf("group %q", n))) {
					return pos.Line(path("groups", i)...)
				}
				continue
			}
			named := fmt.Sprintf("group %q", fg.Name)
			if subject {
				named += ":"
			}
			if strings.Contains(msg, named) {
				// The name's line says which group it is.
				return pos.Line(path("groups", i, "name")...)
			}
		}
	}
	if strings.Contains(msg, "cache groups") {
		return pos.Line(path("groups")...)
	}
	return pos.Line(path("vllm_version")...)
}

// profileError is a refused groups file: every line names file:line.
type profileError struct{ msg string }

func (e *profileError) Error() string { return e.msg }
func (e *profileError) Unwrap() error { return ErrProfile }
