package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
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

var unknownGroupField = regexp.MustCompile(`unknown field "([^"]*)"`)

// ParseGroups reads a groups file. Errors name the file and line and say
// what was expected; a profile the rules refuse names the role and group.
func ParseGroups(file string, data []byte, role string) (*GroupedProfile, error) {
	var g GroupsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	lineAt := func(off int) int {
		off = min(max(off, 0), len(data))
		return bytes.Count(data[:off], []byte{'\n'}) + 1
	}
	lineOf := func(key string) int {
		i := bytes.Index(data, []byte(`"`+key+`"`))
		if i < 0 {
			return 1
		}
		return lineAt(i)
	}
	if err := dec.Decode(&g); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s:%d: %w: malformed JSON: %v", file, lineAt(int(se.Offset)), ErrProfile, se)
		case errors.As(err, &te):
			return nil, fmt.Errorf("%s:%d: %w: field %q: got JSON %s, want %s", file, lineAt(int(te.Offset)), ErrProfile, te.Field, te.Value, te.Type)
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%s:1: %w: empty file, want {\"vllm_version\": ..., \"groups\": [...]}", file, ErrProfile)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%s:%d: %w: the JSON ends early", file, lineAt(len(data)), ErrProfile)
		}
		if m := unknownGroupField.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("%s:%d: %w: unknown field %q", file, lineOf(m[1]), ErrProfile, m[1])
		}
		return nil, fmt.Errorf("%s:1: %w: %v", file, ErrProfile, strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the groups object", file, lineAt(int(dec.InputOffset())), ErrProfile)
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
