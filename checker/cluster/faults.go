package cluster

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// planned lists the fault kinds a plan may schedule: the checker's kinds
// a driver strikes at a time. The others are the drivers' own doing
// (reorder by latency jitter, early_timer by the clock, no_show by the
// router, background_load by the other requests).
var planned = [system.NumFaults]bool{
	system.Duplicate: true, system.Loss: true, system.Cancel: true, system.Abort: true,
	system.TransferFailure: true, system.Restart: true, system.Hang: true, system.Evict: true, system.Delay: true,
}

// FaultKind is the kind of a planned fault, read from the plan's name of
// it: the one place a driver turns a plan's string into the checker's
// fault. A name the checker does not know, or a kind no plan schedules,
// is an input error naming the plan's file and line.
func (f *Fault) FaultKind() (system.Fault, error) {
	k, ok := system.ParseFault(f.Kind)
	if !ok || !planned[k] {
		var names []string
		for k := range planned {
			if planned[k] {
				names = append(names, system.Fault(k).String())
			}
		}
		return 0, fmt.Errorf("%s:%d: %w: fault kind %q, want one of %s", f.File, f.Line, ErrInput, f.Kind, strings.Join(names, ", "))
	}
	return k, nil
}

// WorkerRestart reports whether f restarts a worker at its time (not a
// side of a request at a phase).
func (f *Fault) WorkerRestart() bool {
	k, err := f.FaultKind()
	return err == nil && k == system.Restart && f.Request < 0
}

// Marks are the faults a plan holds for one request until they can
// strike, the same record in every driver.
type Marks struct {
	Lose, Dup      FactMark
	Hang, FailXfer bool
	Cancel         bool
	Delay          [2]bool
	Abort, Evict   [2]bool
	// RestartAfter is, per side, the log kind after which that side's
	// worker restarts ("" for none).
	RestartAfter [2]string
}

// Mark holds the planned fault f, aimed at the request, until it can
// strike: the one dispatch on a plan's fault kinds. A kind it does not
// handle is an error, never a fault silently dropped.
func (m *Marks) Mark(f *Fault) error {
	k, err := f.FaultKind()
	if err != nil {
		return err
	}
	sd, hasSide := SideNamed(f.Side)
	to, hasTo := SideNamed(f.To)
	switch k {
	case system.Loss:
		m.Lose.Add(to, hasTo, f.Msg)
	case system.Duplicate:
		m.Dup.Add(to, hasTo, f.Msg)
	case system.Hang:
		m.Hang = true
	case system.TransferFailure:
		m.FailXfer = true
	case system.Cancel:
		m.Cancel = true
	case system.Delay:
		if hasSide {
			m.Delay[sd] = true
		}
	case system.Abort:
		if hasSide {
			m.Abort[sd] = true
		}
	case system.Evict:
		if hasSide {
			m.Evict[sd] = true
		}
	case system.Restart:
		if f.Request < 0 {
			return fmt.Errorf("%s:%d: %w: a restart of worker %d holds no mark on a request", f.File, f.Line, ErrInput, f.Worker)
		}
		if hasSide {
			m.RestartAfter[sd] = f.After
		}
	case system.Reorder, system.EarlyTimer, system.NoShow, system.BackgroundLoad, system.NumFaults:
		return fmt.Errorf("%s:%d: %w: fault kind %s is no plan's to strike", f.File, f.Line, ErrInput, k)
	default:
		return fmt.Errorf("%s:%d: %w: fault kind %s has no rule here", f.File, f.Line, ErrInput, k)
	}
	return nil
}

// Left counts the faults held that never struck.
func (m *Marks) Left() int {
	n := m.Lose.Left() + m.Dup.Left()
	for _, b := range []bool{m.Hang, m.FailXfer, m.Cancel, m.Delay[0], m.Delay[1], m.Abort[0], m.Abort[1], m.Evict[0], m.Evict[1],
		m.RestartAfter[0] != "", m.RestartAfter[1] != ""} {
		if b {
			n++
		}
	}
	return n
}
