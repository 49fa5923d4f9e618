package model

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// ErrProfile is wrapped by every refusal of a pricing profile.
var ErrProfile = errors.New("model: bad transfer profile")

// Limits of a grouped profile. Both are far above any real model and keep
// every price of a prompt up to a million tokens well inside the 64-bit
// byte count; larger prompts are priced with checked arithmetic and
// refused when a total would not fit.
const (
	// MaxGroups bounds the cache groups of a grouped profile: 16. Real
	// hybrid models have a handful (GLM hybrid: 4).
	MaxGroups = 16
	// MaxTransferBytesPerBlock bounds transfer_bytes_per_block: 1 TiB
	// (1<<40 bytes). A real block moves kilobytes to a few megabytes.
	MaxTransferBytesPerBlock Bytes = 1 << 40
)

// GroupKind is the kind of a KV cache group (docs/lifecycle.md section 6).
type GroupKind uint8

const (
	// FullAttention moves every block of the transferred tokens.
	FullAttention GroupKind = iota + 1
	// SlidingWindow (or convolution) moves the blocks inside the window of
	// the next token.
	SlidingWindow
	// StateGroup (Mamba-type running state, or a ring's one block) moves one block.
	StateGroup
)

var groupKindNames = map[GroupKind]string{FullAttention: "full_attention", SlidingWindow: "sliding_window", StateGroup: "state"}

func (k GroupKind) String() string {
	if s, ok := groupKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("GroupKind(%d)", uint8(k))
}

// ParseGroupKind reads a kind by its JSON name.
func ParseGroupKind(s string) (GroupKind, bool) {
	for _, k := range []GroupKind{FullAttention, SlidingWindow, StateGroup} {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// VLLMVersions are the releases whose NIXL transfer rules the grouped
// pricing follows. No other rules exist.
var VLLMVersions = []string{"0.31.0", "0.32.0"}

// Group is one cache group of a grouped profile. TransferBytesPerBlock and
// PrefixCacheable are pointers because a profile that lacks them must be
// refused, not read as zero.
type Group struct {
	Name                  string
	Kind                  GroupKind
	BlockSize             Tokens
	Window                Tokens // sliding_window only
	TransferBytesPerBlock *Bytes
	PrefixCacheable       *bool
	// CheckpointBlocks marks a Mamba-type state group whose prefill takes a
	// checkpoint block when it reaches the end of the prompt (vLLM 0.32.0
	// with Mamba prefix caching): computed and cached, never moved.
	CheckpointBlocks bool
}

// Mamba is whether g is a Mamba-type running state: a prefix-cacheable
// state group (a ring's one block is a state group that is not).
func (g *Group) Mamba() bool {
	return g.Kind == StateGroup && g.PrefixCacheable != nil && *g.PrefixCacheable
}

// GroupedProfile is the cache layout of a hybrid-attention model on one role.
type GroupedProfile struct {
	// Role names the side the profile describes ("prefill" or "decode"), for messages.
	Role        string
	VLLMVersion string
	Groups      []Group
}

// LinearProfile prices a cache with a single bytes-per-token rate. BlockSize
// is the page size used to align destination prefix hits.
type LinearProfile struct {
	BytesPerToken Bytes
	BlockSize     Tokens
}

// Validate refuses a profile the vLLM 0.31.0/0.32.0 rules cannot price. Every
// message names the role and, where it applies, the group. The error joins
// one *jsonfile.Problem per defect, located in the profile's file form
// (GroupsFile): the group a problem is about (its name, or the group
// itself when it has none), the groups list, or the version.
func (p *GroupedProfile) Validate() error {
	role := p.Role
	if role == "" {
		role = "prefill"
	}
	var errs []*jsonfile.Problem
	bad := func(path []any, format string, args ...any) {
		errs = append(errs, jsonfile.Problemf(ErrProfile, path, "%s profile: %s", role, fmt.Sprintf(format, args...)))
	}
	if !slices.Contains(VLLMVersions, p.VLLMVersion) {
		bad([]any{"vllm_version"}, "vllm_version %q has no transfer rules (want 0.31.0 or 0.32.0)", p.VLLMVersion)
	}
	if len(p.Groups) == 0 {
		bad([]any{"groups"}, "no cache groups")
	}
	if len(p.Groups) > MaxGroups {
		bad([]any{"groups"}, "%d cache groups, at most %d are supported", len(p.Groups), MaxGroups)
	}
	var fullBS Tokens
	seen := map[string]bool{}
	// The Mamba-type groups with and without the checkpoint marker: the
	// first of each.
	marked, unmarked, unmarkedAt := "", "", -1
	for i, g := range p.Groups {
		name := g.Name
		at := groupPath(i, name)
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
			bad(at, "group %s: name is empty", name)
		} else if seen[name] {
			// The repeat is at fault, not the first declaration.
			bad(at, "group %q: declared twice", name)
		}
		seen[name] = true
		switch g.Kind {
		case FullAttention, SlidingWindow, StateGroup:
		default:
			bad(at, "group %q: kind is not full_attention, sliding_window or state", name)
		}
		if g.BlockSize <= 0 {
			bad(at, "group %q: block_size_tokens must be positive, got %d", name, int64(g.BlockSize))
		}
		if g.Kind == SlidingWindow && g.Window <= 0 {
			bad(at, "group %q: sliding_window needs window_tokens > 0, got %d", name, int64(g.Window))
		}
		if g.Kind != SlidingWindow && g.Window != 0 {
			bad(at, "group %q: window_tokens applies to sliding_window groups only", name)
		}
		if g.TransferBytesPerBlock == nil {
			bad(at, "group %q: transfer_bytes_per_block is missing", name)
		} else if b := *g.TransferBytesPerBlock; b <= 0 || b > MaxTransferBytesPerBlock {
			bad(at, "group %q: transfer_bytes_per_block %d, want 1 to %d (1 TiB)", name, int64(b), int64(MaxTransferBytesPerBlock))
		}
		if g.PrefixCacheable == nil {
			bad(at, "group %q: prefix_cacheable is missing", name)
		}
		switch {
		case g.CheckpointBlocks && !g.Mamba():
			bad(at, "group %q: checkpoint_blocks applies to a Mamba-type state group only (kind state, prefix_cacheable true): no other group takes checkpoint blocks", name)
		case g.CheckpointBlocks && p.VLLMVersion == "0.31.0":
			bad(at, "group %q: checkpoint_blocks needs vllm_version 0.32.0: vLLM 0.31.0 keeps only the running state of a Mamba-type group and takes no checkpoint blocks", name)
		case g.CheckpointBlocks && marked == "":
			marked = name
		case g.Mamba() && !g.CheckpointBlocks && unmarked == "":
			unmarked, unmarkedAt = name, i
		}
		if g.Kind == FullAttention && g.BlockSize > 0 {
			if fullBS == 0 {
				fullBS = g.BlockSize
			} else if g.BlockSize != fullBS {
				bad(at, "group %q: full-attention groups must share one block size (%d and %d)", name, int64(fullBS), int64(g.BlockSize))
			}
		}
	}
	if marked != "" && unmarked != "" {
		// One setting of the engine (its Mamba cache mode) decides it for
		// every Mamba-type group at once. The unmarked group is at fault:
		// the marker is what the other group states.
		bad(groupPath(unmarkedAt, p.Groups[unmarkedAt].Name), "group %q: checkpoint_blocks is marked on group %q but not here: vLLM 0.32.0 takes checkpoint blocks in every Mamba-type state group or in none", unmarked, marked)
	}
	return jsonfile.JoinProblems(errs)
}

// groupPath is where the i-th group is in a groups file: its name, which
// says which group it is, or the group itself when it has none.
func groupPath(i int, name string) []any {
	if name == "" {
		return []any{"groups", i}
	}
	return []any{"groups", i, "name"}
}

// profileProblem is a refusal of a profile that no value of its file is
// at fault for alone (a pair of roles, a price): it is reported where the
// profile is.
func profileProblem(format string, args ...any) error {
	return jsonfile.Problemf(ErrProfile, nil, format, args...)
}

// SameGroups refuses a disaggregated pair whose roles have different cache
// groups: a grouped rank counts the handoff in blocks, so both sides must
// agree on what a block is and what it moves. The message names both roles
// and the first difference. The checkpoint marker is not compared: it is
// what one role's engine computes and caches, and a checkpoint block never
// moves.
func SameGroups(prefill, decode *GroupedProfile) error {
	diff := groupsDiff(prefill.Groups, decode.Groups)
	if diff == "" {
		return nil
	}
	return profileProblem("the prefill and decode profiles have different cache groups: %s; a grouped rank counts a handoff in blocks, so both roles need the same groups",
		diff)
}

// groupsDiff describes the first difference between two lists of cache
// groups, prefill's first, or is empty when they agree.
func groupsDiff(a, b []Group) string {
	names := func(gs []Group) string {
		var s []string
		for _, g := range gs {
			s = append(s, g.Name)
		}
		return strings.Join(s, ", ")
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d groups (%s) on the prefill role, %d (%s) on the decode role", len(a), names(a), len(b), names(b))
	}
	opt := func(b *Bytes) string {
		if b == nil {
			return "missing"
		}
		return fmt.Sprint(int64(*b))
	}
	flag := func(v *bool) string {
		if v == nil {
			return "missing"
		}
		return fmt.Sprint(*v)
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name {
			return fmt.Sprintf("group %d is %q on the prefill role, %q on the decode role", i+1, x.Name, y.Name)
		}
		for _, f := range []struct{ field, p, d string }{
			{"kind", x.Kind.String(), y.Kind.String()},
			{"block_size_tokens", fmt.Sprint(int64(x.BlockSize)), fmt.Sprint(int64(y.BlockSize))},
			{"window_tokens", fmt.Sprint(int64(x.Window)), fmt.Sprint(int64(y.Window))},
			{"transfer_bytes_per_block", opt(x.TransferBytesPerBlock), opt(y.TransferBytesPerBlock)},
			{"prefix_cacheable", flag(x.PrefixCacheable), flag(y.PrefixCacheable)},
		} {
			if f.p != f.d {
				return fmt.Sprintf("group %q: %s %s on the prefill role, %s on the decode role", x.Name, f.field, f.p, f.d)
			}
		}
	}
	return ""
}

// Topology is the transfer profile of each role of a disaggregated pair:
// exactly one of Linear and Grouped per role.
type Topology struct {
	PrefillLinear  *LinearProfile
	PrefillGrouped *GroupedProfile
	DecodeLinear   *LinearProfile
	DecodeGrouped  *GroupedProfile
}

// Check refuses a pair that cannot hand off: a grouped role next to a
// linear one (a grouped rank counts a handoff in full-attention blocks, a
// linear rank in tokens), two grouped roles with different cache groups,
// or two linear roles that disagree on bytes per token or page size.
func (t Topology) Check() error {
	pg, dg := t.PrefillGrouped != nil, t.DecodeGrouped != nil
	kind := func(g bool) string {
		if g {
			return "grouped"
		}
		return "linear"
	}
	switch {
	case pg != dg:
		return profileProblem("the prefill role's profile is %s and the decode role's is %s: a grouped rank counts a handoff in full-attention blocks and a linear rank in tokens, so the two roles cannot hand off to each other",
			kind(pg), kind(dg))
	case pg:
		return SameGroups(t.PrefillGrouped, t.DecodeGrouped)
	case t.PrefillLinear != nil && t.DecodeLinear != nil && *t.PrefillLinear != *t.DecodeLinear:
		p, d := t.PrefillLinear, t.DecodeLinear
		return profileProblem("the prefill role's linear profile (%d bytes per token, %d-token pages) and the decode role's (%d bytes per token, %d-token pages) differ: both roles must agree on what a token moves and on the page a hit is counted in",
			int64(p.BytesPerToken), int64(p.BlockSize), int64(d.BytesPerToken), int64(d.BlockSize))
	}
	return nil
}

// GroupQuote is what one cache group computes, keeps, offers and moves.
type GroupQuote struct {
	Name string
	Kind GroupKind
	// Blocks are the blocks that move (the destination reserves them).
	Blocks Blocks
	Bytes  Bytes
	// Computed is the group's footprint on the source while prefill runs,
	// its checkpoint block included.
	Computed Blocks
	// Checkpoint is the checkpoint block a Mamba-type group takes on vLLM
	// 0.32.0 when marked: computed, freed to the cache at completion,
	// never moved.
	Checkpoint Blocks
	// Kept is what the source keeps pinned at completion; the rest of
	// Computed is freed to the cache.
	Kept Blocks
	// Offered is what the prefill offers the decode side: a window group's
	// clip of its last ceil(W/B)+1 blocks, which the decode side trims to
	// the Blocks inside the window; every computed block of a full-attention
	// group (the decode side reads those it lacks); a state group's one.
	Offered Blocks
}

// Quote is the price of one handoff: what the prefill computes, what the
// destination already has, and what actually moves.
type Quote struct {
	PromptTokens Tokens
	// TransferredTokens is what prefill computes and hands off: the prompt,
	// or one token short with a prefix-cacheable state group.
	TransferredTokens Tokens
	// HitBlocks are the whole full-attention blocks (linear: pages) the
	// destination already caches and locks instead of receiving.
	HitBlocks Blocks
	// HitTokens is HitBlocks in tokens.
	HitTokens Tokens
	// MovedTokens is the page-aligned missing part (linear profiles).
	MovedTokens Tokens
	// FullHit is set when every full-attention block is cached: nothing moves.
	FullHit bool
	Groups  []GroupQuote
	// PayloadBytes is the sum of what every group moves.
	PayloadBytes Bytes
	// ReservedBlocks are the pages the destination reserves: what moves.
	ReservedBlocks Blocks
	// LockedBlocks are the cached prefix blocks the destination locks in
	// its snapshot: the hit blocks of every full-attention group.
	LockedBlocks Blocks
	// ComputeBlocks is the source's footprint while computing.
	ComputeBlocks Blocks
	// PinnedBlocks is what the source keeps pinned at completion: only the
	// blocks that will move (window groups drop blocks below the window,
	// Mamba-type groups their checkpoint blocks).
	PinnedBlocks Blocks
	// CheckpointBlocks are the checkpoint blocks of the Mamba-type groups
	// (vLLM 0.32.0, marked profiles): part of ComputeBlocks, freed to the
	// cache at completion with the blocks below a window, never moved.
	CheckpointBlocks Blocks
	// OfferedBlocks is what the prefill offers the decode side, summed
	// over the groups; the decode side trims it to ReservedBlocks.
	OfferedBlocks Blocks
}

// TransferMillis is the transfer time at a bandwidth of gbps GB/s
// (1 GB/s = 1e9 bytes/s).
func (q Quote) TransferMillis(gbps float64) float64 {
	if gbps <= 0 {
		return 0
	}
	return float64(q.PayloadBytes) / (gbps * 1e9) * 1e3
}

// Price prices a handoff of a prompt of n tokens to a destination that
// already caches hit tokens of it, by the linear rule: bytes = moved tokens
// × bytes per token, where only the page-aligned missing part moves.
func (p LinearProfile) Price(n, hit Tokens) (Quote, error) {
	if p.BytesPerToken <= 0 || p.BlockSize <= 0 {
		return Quote{}, profileProblem("linear profile needs bytes per token and block size > 0")
	}
	if n < 0 || hit < 0 {
		return Quote{}, profileProblem("negative token count")
	}
	q := Quote{PromptTokens: n, TransferredTokens: n}
	total := BlocksFor(n, p.BlockSize)
	q.HitBlocks = min(WholeBlocks(hit, p.BlockSize), total)
	q.HitTokens = Tokens(q.HitBlocks) * p.BlockSize
	q.MovedTokens = max(0, n-q.HitTokens)
	q.FullHit = total > 0 && q.HitBlocks == total
	q.ReservedBlocks = total - q.HitBlocks
	q.LockedBlocks = q.HitBlocks
	payload, ok := mulBytes(int64(q.MovedTokens), p.BytesPerToken)
	if !ok {
		return Quote{}, profileProblem("linear profile: %d moved tokens × %d bytes per token overflow the byte count (more than %d bytes)",
			int64(q.MovedTokens), int64(p.BytesPerToken), int64(math.MaxInt64))
	}
	q.PayloadBytes = payload
	q.ComputeBlocks = total
	q.PinnedBlocks = total
	q.OfferedBlocks = total
	q.Groups = []GroupQuote{{Name: "linear", Blocks: q.ReservedBlocks, Bytes: q.PayloadBytes, Computed: total, Kept: total, Offered: total}}
	return q, nil
}

// Backoff is how many tokens prefill leaves to decode: one for a model with
// a prefix-cacheable state group (vLLM stops such a prefill one token short
// and decode computes the last prompt token), zero otherwise.
func (p *GroupedProfile) Backoff() Tokens {
	for _, g := range p.Groups {
		if g.Kind == StateGroup && g.PrefixCacheable != nil && *g.PrefixCacheable {
			return 1
		}
	}
	return 0
}

// FullBlockSize is the shared block size of the full-attention groups, or
// 0 when there are none.
func (p *GroupedProfile) FullBlockSize() Tokens {
	for _, g := range p.Groups {
		if g.Kind == FullAttention {
			return g.BlockSize
		}
	}
	return 0
}

// windowBlocks is ⌈T/B⌉ − ⌊(T − W + 1)/B⌋, clamped to [0, ⌈T/B⌉]: the
// blocks of the transferred tokens inside the window of the next token.
func windowBlocks(t, bs, w Tokens) Blocks {
	all := BlocksFor(t, bs)
	below := Blocks(floorDiv(int64(t-w+1), int64(bs)))
	return min(max(all-below, 0), all)
}

// Price prices a handoff of a prompt of n tokens to a destination that
// already caches hit tokens of it, by the vLLM 0.31.0/0.32.0 NIXL rules.
func (p *GroupedProfile) Price(n, hit Tokens) (Quote, error) {
	if err := p.Validate(); err != nil {
		return Quote{}, err
	}
	if n < 0 || hit < 0 {
		return Quote{}, profileProblem("negative token count")
	}
	t := n
	if b := p.Backoff(); n > b {
		t = n - b
	}
	q := Quote{PromptTokens: n, TransferredTokens: t}
	if bs := p.FullBlockSize(); bs > 0 {
		full := BlocksFor(t, bs)
		q.HitBlocks = min(max(WholeBlocks(hit, bs), 0), full)
		q.HitTokens = Tokens(q.HitBlocks) * bs
		q.FullHit = full > 0 && q.HitBlocks == full
	}
	// Totals over the groups are summed in 64 bits and checked, so that a
	// huge prompt is refused instead of wrapping around.
	var reserved, computed, pinnedAll, locked, checkpoints, offered int64
	for _, g := range p.Groups {
		var move, compute, pinned, checkpoint, offer Blocks
		switch g.Kind {
		case FullAttention:
			compute = BlocksFor(t, g.BlockSize)
			pinned, offer = compute, compute
			move = compute - q.HitBlocks
			locked += int64(q.HitBlocks)
		case SlidingWindow:
			compute = BlocksFor(t, g.BlockSize)
			pinned = windowBlocks(t, g.BlockSize, g.Window)
			move = pinned
			// The prefill clips the group to its last ceil(W/B)+1 blocks:
			// enough for any window's placement, so the decode side can
			// always trim the clip to the blocks inside the window.
			offer = Blocks(min(int64(compute), ceilDiv(int64(g.Window), int64(g.BlockSize))+1))
		case StateGroup:
			compute, pinned, move, offer = 1, 1, 1, 1
			if g.CheckpointBlocks {
				checkpoint = 1
				compute++
			}
		}
		if q.FullHit {
			move = 0
		}
		bytes, ok := mulBytes(int64(move), *g.TransferBytesPerBlock)
		if !ok {
			return Quote{}, profileProblem("%s profile: group %q: %d blocks × %d bytes per block overflow the byte count (more than %d bytes)",
				p.roleName(), g.Name, int64(move), int64(*g.TransferBytesPerBlock), int64(math.MaxInt64))
		}
		gq := GroupQuote{Name: g.Name, Kind: g.Kind, Blocks: move, Bytes: bytes,
			Computed: compute, Checkpoint: checkpoint, Kept: pinned, Offered: offer}
		q.Groups = append(q.Groups, gq)
		if q.PayloadBytes, ok = addBytes(q.PayloadBytes, gq.Bytes); !ok {
			return Quote{}, profileProblem("%s profile: the payload of %d tokens overflows the byte count (more than %d bytes)",
				p.roleName(), int64(t), int64(math.MaxInt64))
		}
		reserved += int64(move)
		computed += int64(compute)
		pinnedAll += int64(pinned)
		checkpoints += int64(checkpoint)
		offered += int64(offer)
	}
	for _, c := range []struct {
		sum  int64
		dst  *Blocks
		what string
	}{
		{reserved, &q.ReservedBlocks, "reserved"}, {computed, &q.ComputeBlocks, "computed"},
		{pinnedAll, &q.PinnedBlocks, "pinned"}, {locked, &q.LockedBlocks, "locked"},
		{checkpoints, &q.CheckpointBlocks, "checkpoint"}, {offered, &q.OfferedBlocks, "offered"},
	} {
		if c.sum > math.MaxInt32 {
			return Quote{}, profileProblem("%s profile: %d tokens make %d %s blocks, more than a block count holds (%d)",
				p.roleName(), int64(t), c.sum, c.what, int64(math.MaxInt32))
		}
		*c.dst = Blocks(c.sum)
	}
	return q, nil
}

func (p *GroupedProfile) roleName() string {
	if p.Role == "" {
		return "prefill"
	}
	return p.Role
}

// mulBytes is n × per for non-negative operands, and false when the
// product does not fit a Bytes.
func mulBytes(n int64, per Bytes) (Bytes, bool) {
	if n < 0 || per < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(n), uint64(per))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return Bytes(lo), true
}

// addBytes is a + b for non-negative operands, and false on overflow.
func addBytes(a, b Bytes) (Bytes, bool) {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}
