package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/handoffcheck/handoffcheck/model"
)

var priceCommand = &command{
	name:    "price",
	args:    "--groups FILE | --bytes-per-token B, --prompt-tokens N [--decode-groups FILE] [flags]",
	summary: "price the bytes a handoff transfer moves",
	exits:   []exitDoc{{exitOK, "the quote was printed"}, {exitUsage, ""}},
	run:     cmdPrice,
}

func init() { registerCommand(priceCommand) }

// priceJSON is the stable --json form of one quote. Field names are part of
// the CLI contract (docs/cli.md: price is a stable CLI with JSON output).
type priceJSON struct {
	Profile            string           `json:"profile"` // "grouped" or "linear"
	Role               string           `json:"role,omitempty"`
	VLLMVersion        string           `json:"vllm_version,omitempty"`
	PromptTokens       int64            `json:"prompt_tokens"`
	TransferredTokens  int64            `json:"transferred_tokens"`
	RequestedHitTokens int64            `json:"requested_hit_tokens"`
	HitTokens          int64            `json:"hit_tokens"`
	HitBlocks          int64            `json:"hit_blocks"`
	FullHit            bool             `json:"full_hit"`
	MovedTokens        *int64           `json:"moved_tokens,omitempty"`
	Groups             []priceGroupJSON `json:"groups"`
	PayloadBytes       int64            `json:"payload_bytes"`
	ReservedBlocks     int64            `json:"reserved_blocks"`
	LockedBlocks       int64            `json:"locked_blocks"`
	ComputeBlocks      int64            `json:"compute_blocks"`
	CheckpointBlocks   int64            `json:"checkpoint_blocks"`
	PinnedBlocks       int64            `json:"pinned_blocks"`
	FreedBlocks        int64            `json:"freed_blocks"`
	OfferedBlocks      int64            `json:"offered_blocks"`
	Decode             *priceDecodeJSON `json:"decode,omitempty"`
	BandwidthGbps      *float64         `json:"bandwidth_gbps,omitempty"`
	TransferMs         *float64         `json:"transfer_ms,omitempty"`
}

// priceGroupJSON is one group's line: blocks (moved) and bytes as before,
// then the source's side of it.
type priceGroupJSON struct {
	Name             string `json:"name"`
	Kind             string `json:"kind"`
	Blocks           int64  `json:"blocks"`
	Bytes            int64  `json:"bytes"`
	ComputedBlocks   int64  `json:"computed_blocks"`
	CheckpointBlocks int64  `json:"checkpoint_blocks"`
	KeptBlocks       int64  `json:"kept_blocks"`
	OfferedBlocks    int64  `json:"offered_blocks"`
}

// priceDecodeJSON is the decode role's own profile, given with
// --decode-groups and checked against the prefill role's.
type priceDecodeJSON struct {
	Profile     string `json:"profile"`
	File        string `json:"file"`
	VLLMVersion string `json:"vllm_version"`
}

func cmdPrice(c *command, e *env, args []string) int {
	fs := c.flags()
	groupsFile := fs.String("groups", "", "grouped transfer profile (JSON); exclusive with --bytes-per-token")
	bytesPerToken := fs.Int64("bytes-per-token", 0, "linear profile: bytes one token moves; exclusive with --groups")
	blockSize := fs.Int64("block-size", 16, "linear profile: page size in tokens that aligns destination hits")
	prompt := fs.Int64("prompt-tokens", 0, "tokens of the prompt (> 0)")
	hit := fs.Int64("hit-tokens", 0, "tokens of the prompt the destination's prefix cache already holds")
	gbps := fs.Float64("bandwidth-gbps", 0, "transfer bandwidth in GB/s (1 GB/s = 1e9 bytes/s); prints the transfer time")
	role := fs.String("role", "prefill", "rank the groups file describes: prefill, decode or aggregated (which takes no handoff)")
	decodeGroups := fs.String("decode-groups", "", "the decode role's own grouped profile (JSON): checked against the prefill role's, and prices the destination")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	set := setFlags(fs)
	fail := func(format string, a ...any) int { return c.bad(e, format, a...) }

	grouped := set["groups"]
	switch {
	case grouped && set["bytes-per-token"]:
		return fail("give either --groups or --bytes-per-token, not both")
	case !grouped && !set["bytes-per-token"]:
		return fail("give --groups FILE or --bytes-per-token B")
	case grouped && *groupsFile == "":
		return fail("--groups needs a file name")
	case grouped && set["block-size"]:
		return fail("--block-size applies to --bytes-per-token; a groups file gives each group's block size")
	case !grouped && set["role"]:
		return fail("--role applies to --groups only")
	case set["decode-groups"] && *decodeGroups == "":
		return fail("--decode-groups needs a file name")
	case set["decode-groups"] && set["role"] && *role != "prefill":
		return fail("--role %s with --decode-groups: --groups then describes the prefill role and --decode-groups the decode role", *role)
	}
	rank, ok := model.ParseRank(*role)
	if !ok {
		return fail("--role %q: want prefill, decode or aggregated", *role)
	}
	if *prompt <= 0 || *prompt > math.MaxInt32 {
		return fail("--prompt-tokens %d: want a count between 1 and %d", *prompt, math.MaxInt32)
	}
	switch {
	case *hit < 0:
		return fail("--hit-tokens %d: want a count between 0 and --prompt-tokens (%d)", *hit, *prompt)
	case *hit > *prompt:
		// A prefix cache holds at most the whole prompt: a larger hit
		// would be priced as more reused tokens than the prompt has.
		return fail("--hit-tokens %d: more than the %d tokens of the prompt (a prefix cache holds at most the whole prompt); want 0 to %d", *hit, *prompt, *prompt)
	}
	if set["bandwidth-gbps"] && (!(*gbps > 0) || math.IsInf(*gbps, 0)) {
		return fail("--bandwidth-gbps %v: want a positive finite number", *gbps)
	}
	if !grouped && *bytesPerToken <= 0 {
		return fail("--bytes-per-token %d: want a positive number", *bytesPerToken)
	}
	if !grouped && (*blockSize <= 0 || *blockSize > math.MaxInt32) {
		return fail("--block-size %d: want a page size between 1 and %d", *blockSize, math.MaxInt32)
	}

	out := priceJSON{Profile: "linear", RequestedHitTokens: *hit}
	var q model.Quote
	var err error
	n, h := model.Tokens(*prompt), model.Tokens(*hit)
	var topo model.Topology
	if grouped {
		p, code, ok := readGroups(c, e, *groupsFile, *role)
		if !ok {
			return code
		}
		// A rank takes part in a handoff from its first command on: a
		// decode rank's reservation, otherwise the prefill's submission.
		// A rank that refuses it (an aggregated grouped rank) has no
		// handoff to price.
		first := model.SubmitHandoffPrefill
		if rank == model.DecodeRank {
			first = model.ReserveDestination
		}
		if err := rank.Accept(first, true); err != nil {
			return fail("%s: %v", *groupsFile, err)
		}
		out.Profile, out.Role, out.VLLMVersion = "grouped", p.Role, p.VLLMVersion
		topo.PrefillGrouped = p
		q, err = p.Price(n, h)
	} else {
		lp := model.LinearProfile{BytesPerToken: model.Bytes(*bytesPerToken), BlockSize: model.Tokens(*blockSize)}
		topo.PrefillLinear = &lp
		q, err = lp.Price(n, h)
	}
	if err != nil {
		return fail("%v", err)
	}
	if set["decode-groups"] {
		d, code, ok := readGroups(c, e, *decodeGroups, "decode")
		if !ok {
			return code
		}
		topo.DecodeGrouped = d
		prefillName := fmt.Sprintf("linear profile (--bytes-per-token %d)", *bytesPerToken)
		if grouped {
			prefillName = *groupsFile
		}
		if err := topo.Check(); err != nil {
			return fail("prefill %s, decode %s: %v", prefillName, *decodeGroups, err)
		}
		// The destination's side comes from the decode role's profile:
		// the same groups, so the same blocks move.
		dq, err := d.Price(n, h)
		if err != nil {
			return fail("%v", err)
		}
		q.ReservedBlocks, q.LockedBlocks = dq.ReservedBlocks, dq.LockedBlocks
		out.Decode = &priceDecodeJSON{Profile: "grouped", File: *decodeGroups, VLLMVersion: d.VLLMVersion}
	}

	out.PromptTokens = int64(q.PromptTokens)
	out.TransferredTokens = int64(q.TransferredTokens)
	out.HitTokens = int64(q.HitTokens)
	out.HitBlocks = int64(q.HitBlocks)
	out.FullHit = q.FullHit
	if !grouped {
		moved := int64(q.MovedTokens)
		out.MovedTokens = &moved
	}
	out.Groups = make([]priceGroupJSON, 0, len(q.Groups))
	for _, g := range q.Groups {
		out.Groups = append(out.Groups, priceGroupJSON{Name: g.Name, Kind: kindName(g.Kind), Blocks: int64(g.Blocks), Bytes: int64(g.Bytes),
			ComputedBlocks: int64(g.Computed), CheckpointBlocks: int64(g.Checkpoint), KeptBlocks: int64(g.Kept), OfferedBlocks: int64(g.Offered)})
	}
	out.PayloadBytes = int64(q.PayloadBytes)
	out.ReservedBlocks = int64(q.ReservedBlocks)
	out.LockedBlocks = int64(q.LockedBlocks)
	out.ComputeBlocks = int64(q.ComputeBlocks)
	out.CheckpointBlocks = int64(q.CheckpointBlocks)
	out.PinnedBlocks = int64(q.PinnedBlocks)
	out.FreedBlocks = int64(q.ComputeBlocks - q.PinnedBlocks)
	out.OfferedBlocks = int64(q.OfferedBlocks)
	if set["bandwidth-gbps"] {
		ms := q.TransferMillis(*gbps)
		out.BandwidthGbps, out.TransferMs = gbps, &ms
	}

	if *asJSON {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintln(e.stdout, string(b))
		return exitOK
	}
	writePriceText(e.stdout, *groupsFile, out)
	return exitOK
}

// readGroups reads and validates one role's groups file.
func readGroups(c *command, e *env, file, role string) (*model.GroupedProfile, int, bool) {
	data, err := readInput(e.ctx, file)
	if err != nil {
		return nil, c.bad(e, "%v", err), false
	}
	p, err := model.ParseGroups(file, data, role)
	if err != nil {
		return nil, c.bad(e, "%v", err), false
	}
	return p, exitOK, true
}

// kindName names a group's kind for output; the single group of a linear
// quote has no grouped kind.
func kindName(k model.GroupKind) string {
	if k == 0 {
		return "linear"
	}
	return k.String()
}

func writePriceText(w io.Writer, file string, o priceJSON) {
	if o.Profile == "grouped" {
		fmt.Fprintf(w, "profile:      %s (%s, vllm %s)\n", file, o.Role, o.VLLMVersion)
	} else {
		fmt.Fprintf(w, "profile:      linear\n")
	}
	if o.Decode != nil {
		fmt.Fprintf(w, "decode:       %s (decode, vllm %s): the same cache groups\n", o.Decode.File, o.Decode.VLLMVersion)
	}
	fmt.Fprintf(w, "prompt:       %d tokens\n", o.PromptTokens)
	switch short := o.PromptTokens - o.TransferredTokens; {
	case short == 1:
		fmt.Fprintf(w, "transferred:  %d tokens (decode computes the last prompt token)\n", o.TransferredTokens)
	case short > 1:
		fmt.Fprintf(w, "transferred:  %d tokens (decode computes the last %d prompt tokens)\n", o.TransferredTokens, short)
	default:
		fmt.Fprintf(w, "transferred:  %d tokens\n", o.TransferredTokens)
	}
	unit := "full-attention blocks"
	if o.Profile == "linear" {
		unit = "pages"
	}
	fmt.Fprintf(w, "hit:          %d tokens asked, %d whole %s reused (%d tokens)", o.RequestedHitTokens, o.HitBlocks, unit, o.HitTokens)
	if o.FullHit {
		fmt.Fprint(w, "; full hit, nothing moves")
	}
	fmt.Fprintln(w)
	if o.MovedTokens != nil {
		fmt.Fprintf(w, "moved:        %d tokens\n", *o.MovedTokens)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  group\tkind\tcomputed\tcheckpoint\tkept\toffered\tmoved\tbytes")
	for _, g := range o.Groups {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", g.Name, g.Kind, g.ComputedBlocks, g.CheckpointBlocks, g.KeptBlocks, g.OfferedBlocks, g.Blocks, g.Bytes)
	}
	tw.Flush()
	fmt.Fprintf(w, "payload:      %d bytes\n", o.PayloadBytes)
	fmt.Fprintf(w, "source:       computes %d blocks", o.ComputeBlocks)
	if o.CheckpointBlocks > 0 {
		fmt.Fprintf(w, " (%d of them checkpoint blocks)", o.CheckpointBlocks)
	}
	if o.FreedBlocks == 0 {
		fmt.Fprintf(w, " and keeps them all pinned; offers %d\n", o.OfferedBlocks)
	} else {
		fmt.Fprintf(w, "; at completion frees %d to the prefix cache and keeps %d pinned; offers %d\n", o.FreedBlocks, o.PinnedBlocks, o.OfferedBlocks)
	}
	fmt.Fprintf(w, "destination:  reserves %d blocks, locks %d cached blocks\n", o.ReservedBlocks, o.LockedBlocks)
	if o.TransferMs != nil {
		fmt.Fprintf(w, "transfer:     %s ms at %s GB/s\n",
			strconv.FormatFloat(*o.TransferMs, 'f', -1, 64), strconv.FormatFloat(*o.BandwidthGbps, 'f', -1, 64))
	}
}
