package main

import (
	"encoding/json"
	"fmt"
	"math"

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

	out := model.PriceReport{Profile: "linear", RequestedHitTokens: *hit}
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
		out.Decode = &model.PriceDecodeReport{Profile: "grouped", File: *decodeGroups, VLLMVersion: d.VLLMVersion}
	}

	out.SetQuote(q, grouped)
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
	out.WriteText(e.stdout, *groupsFile)
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
