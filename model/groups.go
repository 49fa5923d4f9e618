package model

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// "decode"). Every refusal names the role and the group; the error joins
// one *jsonfile.Problem per defect, whose path is in the file's form.
func (g *GroupsFile) Profile(role string) (*GroupedProfile, error) {
	p := &GroupedProfile{Role: role, VLLMVersion: g.VLLMVersion}
	var errs []*jsonfile.Problem
	for i, fg := range g.Groups {
		k, ok := ParseGroupKind(fg.Kind)
		if !ok {
			name := fg.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			errs = append(errs, jsonfile.Problemf(ErrProfile, groupPath(i, fg.Name),
				"%s profile: group %q: kind %q is not full_attention, sliding_window or state", role, name, fg.Kind))
		}
		p.Groups = append(p.Groups, Group{Name: fg.Name, Kind: k, BlockSize: fg.BlockSize, Window: fg.Window,
			TransferBytesPerBlock: fg.TransferBytesPerBlock, PrefixCacheable: fg.PrefixCacheable, CheckpointBlocks: fg.CheckpointBlocks})
	}
	if len(errs) > 0 {
		return nil, jsonfile.JoinProblems(errs)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// File is the profile in its file form: Profile of the result gives the
// profile back.
func (p *GroupedProfile) File() *GroupsFile {
	g := &GroupsFile{VLLMVersion: p.VLLMVersion}
	for _, pg := range p.Groups {
		g.Groups = append(g.Groups, GroupFile{Name: pg.Name, Kind: pg.Kind.String(), BlockSize: pg.BlockSize, Window: pg.Window,
			TransferBytesPerBlock: pg.TransferBytesPerBlock, PrefixCacheable: pg.PrefixCacheable, CheckpointBlocks: pg.CheckpointBlocks})
	}
	return g
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
		// Every problem gets the line of the value its path names, so that
		// each line of the message points somewhere.
		probs, ok := jsonfile.ProblemsOf(err)
		if !ok {
			return nil, fmt.Errorf("%s:1: %w", file, err)
		}
		var lines []string
		for _, pr := range probs {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", file, pos.Line(pr.Path...), pr.Error()))
		}
		return nil, &profileError{msg: strings.Join(lines, "\n")}
	}
	return p, nil
}

// profileError is a refused groups file: every line names file:line.
type profileError struct{ msg string }

func (e *profileError) Error() string { return e.msg }
func (e *profileError) Unwrap() error { return ErrProfile }
