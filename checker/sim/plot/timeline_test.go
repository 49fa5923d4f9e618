package plot

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// handMade is a timeline built by hand, shaped like a run of the default
// cluster (two prefill and two decode workers) in which worker 0 leaks
// pinned blocks: its pinned count climbs and the blocks strand. policy
// names it; shift moves its handoffs later, so two of them differ.
func handMade(policy string, shift float64) *sim.Timeline {
	tl := &sim.Timeline{Format: sim.TimelineFormatV1, Policy: policy, Engine: "vllm", SampleMS: 10}
	const n = 300
	for w := range 4 {
		ws := sim.WorkerSeries{Worker: w, Role: "prefill", Capacity: 8192}
		if w >= 2 {
			ws.Role, ws.Capacity, ws.Slots = "decode", 4096, 32
		}
		for i := range n {
			t := float64(i) * 10
			s := sim.Sample{TMS: t}
			wave := int64((i*37 + w*101) % 400)
			switch ws.Role {
			case "prefill":
				s.Active = 600 + wave
				s.Cached = 1500 + int64(i%50)*10
				if w == 0 {
					s.Pinned = int64(i) * 15
					s.StrandedSource = min(s.Pinned, int64(i)*9)
					s.Stranded = max(0, int64(i-100)*12)
				} else {
					s.Pinned = 100 + wave/4
				}
				s.ComputeLoad = 2000 + wave*20
				s.InFlight = 3 + int64(i%7)
			default:
				s.Active = 900 + wave*2
				s.Reserved = 200 + wave/2
				s.Booked = 3000 + wave
				s.Cached = 400
				s.Headroom = 4096 + wave*16
				s.InFlight = 10 + int64(i%9)
				s.Slots = s.InFlight
			}
			s.Free = ws.Capacity - s.Active - s.Cached - s.Pinned - s.Reserved
			ws.Samples = append(ws.Samples, s)
		}
		tl.Workers = append(tl.Workers, ws)
	}
	for r := range 12 {
		a := float64(r)*80 + shift
		h := sim.HandoffTimeline{
			Request: r, ID: fmt.Sprintf("req-%d", r), Attempt: fmt.Sprintf("attempt-%d", r),
			Prefill: r % 2, Decode: 2 + r%2, ArrivalMS: a, Source: "ok", Destination: "ok",
			Phases: []sim.Phase{
				{Name: "waiting", StartMS: a, EndMS: a + 5},
				{Name: "queued", StartMS: a + 5, EndMS: a + 20},
				{Name: "computing", StartMS: a + 20, EndMS: a + 90},
				{Name: "reserved", StartMS: a + 60, EndMS: a + 110},
				{Name: "pinned", StartMS: a + 90, EndMS: a + 130},
				{Name: "transferring", StartMS: a + 95, EndMS: a + 125},
				{Name: "decoding", StartMS: a + 130, EndMS: a + 400},
			},
		}
		if r == 7 {
			h.Source, h.Destination = "forgotten", "failed"
			h.Phases = h.Phases[:5]
			h.Phases[4].EndMS = a + 900
		}
		tl.Handoffs = append(tl.Handoffs, h)
	}
	tl.Summary = &sim.Summary{
		Policy: policy, Engine: "vllm", Seed: 1,
		Requests: 12, Succeeded: 11, Failed: 1, Cancelled: 0, FaultsStruck: 1,
		MakespanMS: 2990, ThroughputRPS: 3.679, OutputTokensPerS: 98.765,
		TTFT:      sim.Pcts{N: 11, P50: 41.25, P90: 77.5, P99: 123.456},
		E2E:       sim.Pcts{N: 11, P50: 402.5, P90: 455.125, P99: 987.654},
		Transfers: 11, TransfersFailed: 1, TransferBytes: 1234567890, TransferMeanMS: 30.125,
		StrandedBlockSeconds: 4321.5, Events: 5555,
		StrandedSourceBlockSeconds: 8765.25, StrandedSourcePeak: 2691,
	}
	for w := range tl.Workers {
		ws := &tl.Workers[w]
		wsum := sim.WorkerSummary{Worker: w, Role: ws.Role, Capacity: ws.Capacity, Series: map[string]sim.PeakMean{}}
		for k, name := range sim.Series {
			wsum.Series[name] = sim.PeakMean{Peak: float64(1000*w + 10*k + 7), Mean: float64(100*w+k) + 0.25}
		}
		if w == 0 {
			wsum.StrandedBlockSeconds = 4321.5
			wsum.StrandedSourceBlockSeconds, wsum.StrandedSourcePeak = 8765.25, 2691
		}
		tl.Summary.Workers = append(tl.Summary.Workers, wsum)
	}
	return tl
}
