package model

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// The report of `handoffcheck price` renders itself here, next to the
// pricing rules it shows, so that the command line only parses flags.

// PriceReport is what `handoffcheck price` reports of one quote, and its
// stable --json form: field names are part of the CLI contract (docs/cli.md:
// price is a stable CLI with JSON output).
type PriceReport struct {
	Profile            string             `json:"profile"` // "grouped" or "linear"
	Role               string             `json:"role,omitempty"`
	VLLMVersion        string             `json:"vllm_version,omitempty"`
	PromptTokens       int64              `json:"prompt_tokens"`
	TransferredTokens  int64              `json:"transferred_tokens"`
	RequestedHitTokens int64              `json:"requested_hit_tokens"`
	HitTokens          int64              `json:"hit_tokens"`
	HitBlocks          int64              `json:"hit_blocks"`
	FullHit            bool               `json:"full_hit"`
	MovedTokens        *int64             `json:"moved_tokens,omitempty"`
	Groups             []PriceGroupReport `json:"groups"`
	PayloadBytes       int64              `json:"payload_bytes"`
	ReservedBlocks     int64              `json:"reserved_blocks"`
	LockedBlocks       int64              `json:"locked_blocks"`
	ComputeBlocks      int64              `json:"compute_blocks"`
	CheckpointBlocks   int64              `json:"checkpoint_blocks"`
	PinnedBlocks       int64              `json:"pinned_blocks"`
	FreedBlocks        int64              `json:"freed_blocks"`
	OfferedBlocks      int64              `json:"offered_blocks"`
	Decode             *PriceDecodeReport `json:"decode,omitempty"`
	BandwidthGbps      *float64           `json:"bandwidth_gbps,omitempty"`
	TransferMs         *float64           `json:"transfer_ms,omitempty"`
}

// PriceGroupReport is one group's line: blocks (moved) and bytes as before,
// then the source's side of it.
type PriceGroupReport struct {
	Name             string `json:"name"`
	Kind             string `json:"kind"`
	Blocks           int64  `json:"blocks"`
	Bytes            int64  `json:"bytes"`
	ComputedBlocks   int64  `json:"computed_blocks"`
	CheckpointBlocks int64  `json:"checkpoint_blocks"`
	KeptBlocks       int64  `json:"kept_blocks"`
	OfferedBlocks    int64  `json:"offered_blocks"`
}

// PriceDecodeReport is the decode role's own profile, given with
// --decode-groups and checked against the prefill role's.
type PriceDecodeReport struct {
	Profile     string `json:"profile"`
	File        string `json:"file"`
	VLLMVersion string `json:"vllm_version"`
}

// SetQuote fills the report's figures from a quote; grouped tells a
// grouped profile's quote from a linear one's (which also reports the
// moved tokens).
func (o *PriceReport) SetQuote(q Quote, grouped bool) {
	o.PromptTokens = int64(q.PromptTokens)
	o.TransferredTokens = int64(q.TransferredTokens)
	o.HitTokens = int64(q.HitTokens)
	o.HitBlocks = int64(q.HitBlocks)
	o.FullHit = q.FullHit
	if !grouped {
		moved := int64(q.MovedTokens)
		o.MovedTokens = &moved
	}
	o.Groups = make([]PriceGroupReport, 0, len(q.Groups))
	for _, g := range q.Groups {
		o.Groups = append(o.Groups, PriceGroupReport{Name: g.Name, Kind: priceKindName(g.Kind), Blocks: int64(g.Blocks), Bytes: int64(g.Bytes),
			ComputedBlocks: int64(g.Computed), CheckpointBlocks: int64(g.Checkpoint), KeptBlocks: int64(g.Kept), OfferedBlocks: int64(g.Offered)})
	}
	o.PayloadBytes = int64(q.PayloadBytes)
	o.ReservedBlocks = int64(q.ReservedBlocks)
	o.LockedBlocks = int64(q.LockedBlocks)
	o.ComputeBlocks = int64(q.ComputeBlocks)
	o.CheckpointBlocks = int64(q.CheckpointBlocks)
	o.PinnedBlocks = int64(q.PinnedBlocks)
	o.FreedBlocks = int64(q.ComputeBlocks - q.PinnedBlocks)
	o.OfferedBlocks = int64(q.OfferedBlocks)
}

// priceKindName names a group's kind for output; the single group of a
// linear quote has no grouped kind.
func priceKindName(k GroupKind) string {
	if k == 0 {
		return "linear"
	}
	return k.String()
}

// WriteText prints the report as price shows it; file names the groups
// file of a grouped profile.
func (o *PriceReport) WriteText(w io.Writer, file string) {
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
