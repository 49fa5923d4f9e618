package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// GroupsFile is the JSON form of a grouped transfer profile:
//
//	{"vllm_version": "0.31.0", "groups": [{"name": "attn", "kind": "full_attention",
//	  "block_size_tokens": 16, "transfer_bytes_per_block": 65536, "prefix_cacheable": true}]}
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
			TransferBytesPerBlock: fg.TransferBytesPerBlock, PrefixCacheable: fg.PrefixCacheable})
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
	lineOf := func(key string) int { return jsonfile.LineOfKey(data, key, 0) }
	if err := dec.Decode(&g); err != nil {
		return nil, jsonfile.DecodeError(file, data, err, ErrProfile, `{"vllm_version": ..., "groups": [...]}`)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the groups object", file, jsonfile.Line(data, int(dec.InputOffset())), ErrProfile)
	}
	p, err := g.Profile(role)
	if err != nil {
		// Every problem gets the line of the group it names (or of the
		// version), so that each line of the message points somewhere.
		var lines []string
		for _, msg := range strings.Split(err.Error(), "\n") {
			line := lineOf("vllm_version")
			for _, fg := range g.Groups {
				if fg.Name != "" && strings.Contains(msg, fmt.Sprintf("group %q", fg.Name)) {
					line = lineOf(fg.Name)
					break
				}
			}
			lines = append(lines, fmt.Sprintf("%s:%d: %s", file, line, msg))
		}
		return nil, &profileError{msg: strings.Join(lines, "\n")}
	}
	return p, nil
}

// profileError is a refused groups file: every line names file:line.
type profileError struct{ msg string }

func (e *profileError) Error() string { return e.msg }
func (e *profileError) Unwrap() error { return ErrProfile }
