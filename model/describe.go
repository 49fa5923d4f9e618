package model

import (
	"fmt"
	"strings"
)

func describePool(k *Worker) string {
	return fmt.Sprintf("free=%d cached=%d active=%d pinned=%d reserved=%d",
		k.Free, k.Cached+k.Kept+k.Prefix, k.Active, k.Pinned, k.Reserved)
}

// DescribeWorker renders one worker's ledgers on one line, deterministically:
// physical categories, kv_used, admission, in-flight and router ledgers.
func (w *World) DescribeWorker(k int) string {
	wk := &w.W[k]
	wc := &w.cfg.Workers[k]
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d gen=%d %s kv_used=%d", wc.Role, k, wk.Gen, describePool(wk), wk.KVUsed())
	if wc.Role == DecodeWorker {
		fmt.Fprintf(&b, " slots=%d/%d headroom=%d/%d", wk.SlotsUsed, wc.Slots, wk.HeadroomUsed, wc.Headroom)
		if wk.Background > 0 {
			fmt.Fprintf(&b, " background=%d", wk.Background)
		}
		fmt.Fprintf(&b, " in_flight=%d booked=%d stored=%d", wk.InFlight, wk.BookedBlocks, wk.StoredBlocks)
	} else {
		fmt.Fprintf(&b, " in_flight=%d owned=%d active_prefill_tokens=%d stored=%d", wk.InFlight, wk.Owned, wk.PrefillTokens, wk.StoredBlocks)
	}
	return b.String()
}

// DescribeHandoff renders one handoff's physical and ledger facts on one
// line, leaving out what is at its zero value so that goldens stay short.
func (w *World) DescribeHandoff(h int) string {
	x := &w.H[h]
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if x.Prefill >= 0 {
		add("prefill=%d", x.Prefill)
	}
	if x.Decode >= 0 {
		add("decode=%d", x.Decode)
	}
	if x.ComputeLoad {
		add("compute_load")
	}
	if x.Compute != ComputeNone {
		add("compute=%s", x.Compute)
	}
	if x.Src != SrcNone {
		add("src=%s", x.Src)
	}
	if x.SrcReg != RegNone {
		add("src_reg=%s", x.SrcReg)
	}
	if x.SrcKept {
		add("src_kept")
	}
	if x.SrcIndexed {
		add("src_indexed")
	}
	if x.Pending {
		add("pending")
	}
	if x.Dst != DstNone {
		add("dst=%s", x.Dst)
	}
	if x.DstReg != RegNone {
		add("dst_reg=%s", x.DstReg)
	}
	if x.Running {
		add("running")
	}
	if x.Published {
		add("stored")
	}
	if x.DstKept {
		add("dst_kept")
	}
	if x.Xfer != XferNone {
		// The bytes come from pricing: only what the destination lacks moves.
		q := w.cfg.DestQuote(h, int(x.Decode), x.PrefixGone&(1<<x.Decode) != 0)
		add("xfer=%s xfer_bytes=%d", x.Xfer, q.PayloadBytes)
	}
	if x.Tainted {
		add("tainted")
	}
	if x.Hung {
		add("hung")
	}
	if x.Acked {
		add("acked")
	}
	if x.Activated {
		add("activated")
	}
	var timers []string
	for t := Timer(0); t < NumTimers; t++ {
		if x.Armed(t) {
			timers = append(timers, t.String())
		}
	}
	if len(timers) > 0 {
		add("timers=%s", strings.Join(timers, ","))
	}
	var life []string
	for r := Res(0); r < NumRes; r++ {
		if x.Life[r] != Never {
			life = append(life, fmt.Sprintf("%s:%s", strings.ReplaceAll(r.String(), " ", "_"), x.Life[r]))
		}
	}
	if len(life) > 0 {
		add("life=%s", strings.Join(life, ","))
	}
	for s := SourceSide; s <= DestinationSide; s++ {
		if x.Outcome[s] != OutcomeNone {
			add("%s_outcome=%s", s, x.Outcome[s])
		}
		if x.Ch[s].N > 0 {
			add("to_%s=%s", s, x.Ch[s].String())
		}
	}
	if x.Cancelled {
		add("cancelled")
	}
	if x.NoShow {
		add("no_show")
	}
	return strings.Join(parts, " ")
}

// DescribeHeld lists what keeps the world from being drained.
func (w *World) DescribeHeld() string {
	var parts []string
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		if x.Src != SrcNone {
			parts = append(parts, fmt.Sprintf("handoff %d source holds %s blocks", h, x.Src))
		}
		if x.Dst != DstNone {
			parts = append(parts, fmt.Sprintf("handoff %d destination holds %s pages", h, x.Dst))
		}
		if x.Pending {
			parts = append(parts, fmt.Sprintf("handoff %d waits for a reservation", h))
		}
		for r := Res(0); r < NumRes; r++ {
			if x.Life[r] == Held {
				parts = append(parts, fmt.Sprintf("handoff %d %s held", h, r))
			}
		}
		for s := SourceSide; s <= DestinationSide; s++ {
			if x.InFlight[s] {
				parts = append(parts, fmt.Sprintf("handoff %d counted in flight on the %s", h, s))
			}
		}
		for t := Timer(0); t < NumTimers; t++ {
			if x.Armed(t) {
				parts = append(parts, fmt.Sprintf("handoff %d %s timer still armed", h, t))
			}
		}
	}
	if len(parts) == 0 {
		return "nothing held by the handoffs; worker ledgers are off: " + w.describeLedgers()
	}
	return strings.Join(parts, "; ")
}

func (w *World) describeLedgers() string {
	var parts []string
	for k := 0; k < w.NumWorkers(); k++ {
		parts = append(parts, w.DescribeWorker(k))
	}
	return strings.Join(parts, "; ")
}
