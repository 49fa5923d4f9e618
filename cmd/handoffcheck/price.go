package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

var priceCommand = &command{
	name:    "price",
	args:    "--groups FILE | --bytes-per-token B, --prompt-tokens N [flags]",
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
	PinnedBlocks       int64            `json:"pinned_blocks"`
	BandwidthGbps      *float64         `json:"bandwidth_gbps,omitempty"`
	TransferMs         *float64         `json:"transfer_ms,omitempty"`
}

type priceGroupJSON struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Blocks int64  `json:"blocks"`
	Bytes  int64  `json:"bytes"`
}

func cmdPrice(c *command, e *env, args []string) int {
	fs := c.flags()
	groupsFile := fs.String("groups", "", "grouped transfer profile (JSON); exclusive with --bytes-per-token")
	bytesPerToken := fs.Int64("bytes-per-token", 0, "linear profile: bytes one token moves; exclusive with --groups")
	blockSize := fs.Int64("block-size", 16, "linear profile: page size in tokens that aligns destination hits")
	prompt := fs.Int64("prompt-tokens", 0, "tokens of the prompt (> 0)")
	hit := fs.Int64("hit-tokens", 0, "tokens of the prompt the destination's prefix cache already holds")
	gbps := fs.Float64("bandwidth-gbps", 0, "transfer bandwidth in GB/s (1 GB/s = 1e9 bytes/s); prints the transfer time")
	role := fs.String("role", "prefill", "role the groups file describes: prefill or decode")
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
	}
	if *role != "prefill" && *role != "decode" {
		return fail("--role %q: want prefill or decode", *role)
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
	if grouped {
		data, rerr := jsonfile.ReadFile(*groupsFile)
		if rerr != nil {
			return fail("%v", rerr)
		}
		p, perr := model.ParseGroups(*groupsFile, data, *role)
		if perr != nil {
			return fail("%v", perr)
		}
		out.Profile, out.Role, out.VLLMVersion = "grouped", p.Role, p.VLLMVersion
		q, err = p.Price(n, h)
	} else {
		lp := model.LinearProfile{BytesPerToken: model.Bytes(*bytesPerToken), BlockSize: model.Tokens(*blockSize)}
		q, err = lp.Price(n, h)
	}
	if err != nil {
		return fail("%v", err)
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
		out.Groups = append(out.Groups, priceGroupJSON{Name: g.Name, Kind: kindName(g.Kind), Blocks: int64(g.Blocks), Bytes: int64(g.Bytes)})
	}
	out.PayloadBytes = int64(q.PayloadBytes)
	out.ReservedBlocks = int64(q.ReservedBlocks)
	out.LockedBlocks = int64(q.LockedBlocks)
	out.ComputeBlocks = int64(q.ComputeBlocks)
	out.PinnedBlocks = int64(q.PinnedBlocks)
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
	fmt.Fprintln(tw, "  group\tkind\tblocks\tbytes")
	for _, g := range o.Groups {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\n", g.Name, g.Kind, g.Blocks, g.Bytes)
	}
	tw.Flush()
	fmt.Fprintf(w, "payload:      %d bytes\n", o.PayloadBytes)
	fmt.Fprintf(w, "destination:  reserves %d blocks, locks %d cached blocks\n", o.ReservedBlocks, o.LockedBlocks)
	fmt.Fprintf(w, "source:       computes %d blocks, keeps %d pinned\n", o.ComputeBlocks, o.PinnedBlocks)
	if o.TransferMs != nil {
		fmt.Fprintf(w, "transfer:     %s ms at %s GB/s\n",
			strconv.FormatFloat(*o.TransferMs, 'f', -1, 64), strconv.FormatFloat(*o.BandwidthGbps, 'f', -1, 64))
	}
}
