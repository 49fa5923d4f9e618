package checker

import (
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

func (c *Checker) faults(s *State, ms *moveSet) {
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		hh := int8(h)
		if s.B.Duplicate > 0 || s.B.Loss > 0 {
			for to := model.SourceSide; to <= model.DestinationSide; to++ {
				ch := &x.Ch[to]
				for i := 0; i < int(ch.N); i++ {
					if s.B.Duplicate > 0 && !c.terminal(s, spec.Role(to), h) {
						ms.add(Move{Kind: MvDuplicate, H: hh, Arg: int8(to), Msg: ch.M[i]})
					}
					if s.B.Loss > 0 {
						ms.add(Move{Kind: MvLose, H: hh, Arg: int8(to), Msg: ch.M[i]})
					}
				}
			}
		}
		if s.B.Cancel > 0 && !x.Cancelled && !c.finished(s, h) {
			ms.add(Move{Kind: MvCancel, H: hh})
		}
		if s.B.Abort > 0 {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				if x.Worker(sd) >= 0 && c.can(s, spec.Role(sd), h, abortEvent(sd)) {
					ms.add(Move{Kind: MvAbort, H: hh, Arg: int8(sd)})
				}
			}
		}
		if s.B.TransferFailure > 0 && x.Xfer == model.XferRunning && c.transferCanEnd(s, h, false) {
			ms.add(Move{Kind: MvFailTransfer, H: hh})
		}
		if s.B.NoShow > 0 && c.decodeRoutable(s, h) {
			ms.add(Move{Kind: MvNoShow, H: hh})
		}
	}
	if s.B.Restart > 0 {
		for w := 0; w < c.nW; w++ {
			if c.hostsLive(s, w) {
				ms.add(Move{Kind: MvRestart, H: -1, Arg: int8(w)})
			}
		}
	}
	if s.B.BackgroundLoad > 0 {
		tx := model.Tx{W: &s.W}
		for _, w := range c.decode {
			if tx.CanOccupyBackground(w) {
				ms.add(Move{Kind: MvOccupy, H: -1, Arg: int8(w)})
			}
		}
	}
}
