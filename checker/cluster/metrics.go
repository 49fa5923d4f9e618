package cluster

import "github.com/handoffcheck/handoffcheck/model"

// WorkerMetrics names the worker metrics of the handoff design, in the
// order WorkerMetricValues gives them: kv_used_blocks (active + pinned
// source + reserved destination), active_decode_blocks (a decode
// worker's active blocks with its destination reservations; zero on a
// prefill worker) and decode_booked_blocks (the decode router's
// selection-time booking, which may precede the physical reservation).
// Every driver that reports them reports them by these definitions.
var WorkerMetrics = [3]string{"kv_used_blocks", "active_decode_blocks", "decode_booked_blocks"}

// WorkerMetricValues is a worker's metrics (WorkerMetrics) from its
// counters k, the worker being of role role. A driver that keeps the
// router's booking apart from the worker's physical counters (a live
// run) reads decode_booked_blocks from the router's ledger of it.
func WorkerMetricValues(k *model.Worker, role model.WorkerRole) [3]model.Blocks {
	return [3]model.Blocks{k.KVUsed(), ActiveDecodeBlocks(k, role), k.BookedBlocks}
}

// ActiveDecodeBlocks is active_decode_blocks: on a decode worker its
// active blocks and its destination reservations.
func ActiveDecodeBlocks(k *model.Worker, role model.WorkerRole) model.Blocks {
	if role != model.DecodeWorker {
		return 0
	}
	return k.Active + k.Reserved
}

// StrandedSource is the source KV a request strands, as the handoff
// design means it (model.Handoff.SourceStranded): the source blocks it
// holds pinned (src, what it holds on its prefill worker) while its
// compute has finished and its decode waits; zero otherwise.
func StrandedSource(x *model.Handoff, src model.Holdings) model.Blocks {
	if x.SourceStranded() {
		return src.Pinned()
	}
	return 0
}
