package model

import "testing"

// SourceStranded is the stranding the handoff design names: computed
// source KV pinned while decode still waits, on an attempt that can still
// succeed. Once the destination holds a reservation the transfer can run;
// once the attempt is doomed its blocks count as held for a doomed
// attempt instead.
func TestSourceStranded(t *testing.T) {
	waiting := Handoff{Prefill: 0, Decode: -1, Src: SrcPinned}
	for _, c := range []struct {
		name string
		edit func(x *Handoff)
		want bool
	}{
		{"pinned, decode not routed", func(x *Handoff) {}, true},
		{"pinned, reservation waits for capacity", func(x *Handoff) { x.Decode, x.Pending = 1, true }, true},
		{"still computing", func(x *Handoff) { x.Src, x.Compute = SrcActive, ComputeRunning }, false},
		{"destination reserved", func(x *Handoff) { x.Decode, x.Dst = 1, DstReserved }, false},
		{"destination activated", func(x *Handoff) { x.Decode, x.Dst, x.Activated = 1, DstActive, true }, false},
		{"decode finished, release pending", func(x *Handoff) { x.Decode, x.Activated, x.Outcome[DestinationSide] = 1, true, OutcomeOK }, false},
		{"client cancelled", func(x *Handoff) { x.Cancelled = true }, false},
		{"transfer failed", func(x *Handoff) { x.Xfer = XferFailed }, false},
		{"destination failed", func(x *Handoff) { x.Outcome[DestinationSide] = OutcomeFailed }, false},
	} {
		x := waiting
		c.edit(&x)
		if got := x.SourceStranded(); got != c.want {
			t.Errorf("%s: SourceStranded = %v, want %v", c.name, got, c.want)
		}
	}
}
