package props

import (
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// ViewVersion names the state view properties are written over. A field
// is never renamed or retyped within a version; docs/props.md lists each
// with its CEL type.
const ViewVersion = "view/v1"

// Handoff is one handoff in view/v1: its two role machines, what the
// world knows of it (routes, holds, registrations, transfer, timers,
// facts in flight, commands) and the lives of its resources.
type Handoff struct {
	Index int64 `cel:"index"`
	// The role machines' state names, as in the spec's tables.
	Source      string `cel:"source"`
	Destination string `cel:"destination"`
	// Records: whether each role's record is terminal, and the outcome
	// each side reported to its router (none, ok, failed, forgotten).
	SourceTerminal      bool   `cel:"source_terminal"`
	DestinationTerminal bool   `cel:"destination_terminal"`
	SourceOutcome       string `cel:"source_outcome"`
	DestinationOutcome  string `cel:"destination_outcome"`
	// The workers the routers chose, -1 before routing.
	SourceWorker      int64 `cel:"source_worker"`
	DestinationWorker int64 `cel:"destination_worker"`
	// The frontend.
	RequestDelivered bool `cel:"request_delivered"`
	Announced        bool `cel:"announced"`
	NoShow           bool `cel:"no_show"`
	Cancelled        bool `cel:"cancelled"`
	SourceFailed     bool `cel:"source_failed"`
	// The source worker: prefill compute and what it holds.
	Compute            string `cel:"compute"`
	SourceHold         string `cel:"source_hold"`
	SourceRegistration string `cel:"source_registration"`
	// The destination worker.
	Pending                 bool   `cel:"pending"`
	DestinationHold         string `cel:"destination_hold"`
	DestinationRegistration string `cel:"destination_registration"`
	Running                 bool   `cel:"running"`
	// The transfer.
	Transfer string `cel:"transfer"`
	Runner   string `cel:"runner"`
	Tainted  bool   `cel:"tainted"`
	Hung     bool   `cel:"hung"`
	// History: the source's pin ended on the reader's acknowledgement;
	// the destination activated from a completed transfer of valid KV.
	Acked     bool `cel:"acked"`
	Activated bool `cel:"activated"`
	// The KV index and the cache after release.
	Published       bool `cel:"published"`
	SourceIndexed   bool `cel:"source_indexed"`
	SourceKept      bool `cel:"source_kept"`
	DestinationKept bool `cel:"destination_kept"`
	// SourceStranded: the source's KV pinned while decode still waits, on
	// an attempt that can still succeed.
	SourceStranded bool   `cel:"source_stranded"`
	Timers         Timers `cel:"timers"`
	Life           Life   `cel:"life"`
	// Facts in flight to each side, oldest first, and the commands
	// waiting in each side's scheduler core.
	ToSource            []string `cel:"to_source"`
	ToDestination       []string `cel:"to_destination"`
	SourceCommands      []string `cel:"source_commands"`
	DestinationCommands []string `cel:"destination_commands"`
}

// Timers says which of a handoff's deadlines are armed.
type Timers struct {
	Lease        bool `cel:"lease"`
	Bootstrap    bool `cel:"bootstrap"`
	Heartbeat    bool `cel:"heartbeat"`
	Reservation  bool `cel:"reservation"`
	PushDeadline bool `cel:"push_deadline"`
	PullDeadline bool `cel:"pull_deadline"`
}

// Life is where each of a handoff's resources is in its one life:
// "never", "held" or "ended".
type Life struct {
	Compute                string `cel:"compute"`
	SourceLease            string `cel:"source_lease"`
	DestinationReservation string `cel:"destination_reservation"`
	PrefillBooking         string `cel:"prefill_booking"`
	DecodeBooking          string `cel:"decode_booking"`
}

// Worker is one worker in view/v1: its pool by category (blocks), its
// admission limits, the routers' ledgers about it and the KV index.
type Worker struct {
	Index      int64  `cel:"index"`
	Role       string `cel:"role"`
	Generation int64  `cel:"generation"`
	// Physical categories, in blocks.
	Free     int64 `cel:"free"`
	Cached   int64 `cel:"cached"`
	Kept     int64 `cel:"kept"`
	Prefix   int64 `cel:"prefix"`
	Active   int64 `cel:"active"`
	Pinned   int64 `cel:"pinned"`
	Reserved int64 `cel:"reserved"`
	KVUsed   int64 `cel:"kv_used"`
	// Admission limits and background load.
	SlotsUsed       int64 `cel:"slots_used"`
	HeadroomUsed    int64 `cel:"headroom_used"`
	Background      int64 `cel:"background"`
	BackgroundSlots int64 `cel:"background_slots"`
	InFlight        int64 `cel:"in_flight"`
	// Router ledgers: the prefill router's compute load and ownership,
	// the decode router's booking.
	PrefillTokens int64 `cel:"prefill_tokens"`
	Owned         int64 `cel:"owned"`
	BookedBlocks  int64 `cel:"booked_blocks"`
	// KV index: blocks published as Stored and not yet Removed.
	StoredBlocks int64 `cel:"stored_blocks"`
}

var lifeNames = [...]string{"never", "held", "ended"}

// handoffView builds handoff h's view.
// The lists of facts and commands are built in buf, which the caller
// keeps until the view is no longer read.
func handoffView(sys *system.System, s *system.State, h int, buf *[4][model.ChannelCap]string) Handoff {
	p := sys.Protocol()
	x := &s.W.H[h]
	src, dst := model.SourceSide, model.DestinationSide
	return Handoff{
		Index:                   int64(h),
		Source:                  p.StateName(spec.Source, s.Src[h]),
		Destination:             p.StateName(spec.Destination, s.Dst[h]),
		SourceTerminal:          sys.Terminal(s, spec.Source, h),
		DestinationTerminal:     sys.Terminal(s, spec.Destination, h),
		SourceOutcome:           x.Outcome[src].String(),
		DestinationOutcome:      x.Outcome[dst].String(),
		SourceWorker:            int64(x.Prefill),
		DestinationWorker:       int64(x.Decode),
		RequestDelivered:        x.RequestDelivered,
		Announced:               x.Announced,
		NoShow:                  x.NoShow,
		Cancelled:               x.Cancelled,
		SourceFailed:            x.SourceFailed,
		Compute:                 x.Compute.String(),
		SourceHold:              x.Src.String(),
		SourceRegistration:      x.SrcReg.String(),
		Pending:                 x.Pending,
		DestinationHold:         x.Dst.String(),
		DestinationRegistration: x.DstReg.String(),
		Running:                 x.Running,
		Transfer:                x.Xfer.String(),
		Runner:                  x.Runner.String(),
		Tainted:                 x.Tainted,
		Hung:                    x.Hung,
		Acked:                   x.Acked,
		Activated:               x.Activated,
		Published:               x.Published,
		SourceIndexed:           x.SrcIndexed,
		SourceKept:              x.SrcKept,
		DestinationKept:         x.DstKept,
		SourceStranded:          x.SourceStranded(),
		Timers: Timers{
			Lease:        x.Armed(model.TimerLease),
			Bootstrap:    x.Armed(model.TimerBootstrap),
			Heartbeat:    x.Armed(model.TimerHeartbeat),
			Reservation:  x.Armed(model.TimerReservation),
			PushDeadline: x.Armed(model.TimerPush),
			PullDeadline: x.Armed(model.TimerPull),
		},
		Life: Life{
			Compute:                lifeNames[x.Life[model.ResCompute]],
			SourceLease:            lifeNames[x.Life[model.ResSourceLease]],
			DestinationReservation: lifeNames[x.Life[model.ResDestReservation]],
			PrefillBooking:         lifeNames[x.Life[model.ResPrefillBooking]],
			DecodeBooking:          lifeNames[x.Life[model.ResDecodeBooking]],
		},
		ToSource:            facts(&x.Ch[src], buf[0][:0]),
		ToDestination:       facts(&x.Ch[dst], buf[1][:0]),
		SourceCommands:      commands(&x.Cmds[src], buf[2][:0]),
		DestinationCommands: commands(&x.Cmds[dst], buf[3][:0]),
	}
}

// noStrings is shared by every empty list, so that a view of a quiet
// handoff allocates no list.
var noStrings = []string{}

func facts(c *model.Channel, out []string) []string {
	if c.N == 0 {
		return noStrings
	}
	for i := 0; i < int(c.N); i++ {
		out = append(out, c.M[i].String())
	}
	return out
}

func commands(q *model.CmdQueue, out []string) []string {
	n := q.Len()
	if n == 0 {
		return noStrings
	}
	for i := 0; i < n; i++ {
		out = append(out, q.Q[i].String())
	}
	return out
}

// workerView builds worker w's view.
func workerView(sys *system.System, s *system.State, w int) Worker {
	k := &s.W.W[w]
	return Worker{
		Index:           int64(w),
		Role:            sys.World().Workers[w].Role.String(),
		Generation:      int64(k.Gen),
		Free:            int64(k.Free),
		Cached:          int64(k.Cached),
		Kept:            int64(k.Kept),
		Prefix:          int64(k.Prefix),
		Active:          int64(k.Active),
		Pinned:          int64(k.Pinned),
		Reserved:        int64(k.Reserved),
		KVUsed:          int64(k.KVUsed()),
		SlotsUsed:       int64(k.SlotsUsed),
		HeadroomUsed:    int64(k.HeadroomUsed),
		Background:      int64(k.Background),
		BackgroundSlots: int64(k.BackgroundSlot),
		InFlight:        int64(k.InFlight),
		PrefillTokens:   int64(k.PrefillTokens),
		Owned:           int64(k.Owned),
		BookedBlocks:    int64(k.BookedBlocks),
		StoredBlocks:    int64(k.StoredBlocks),
	}
}
