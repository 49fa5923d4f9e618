package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// The files of the incident at the default workload's scale: the plan's
// cluster with the default number of workers, and the plan's faults
// recurring on a share of the default workload's requests (which
// simulate runs when it is given no workload).
const (
	ScaleSimFile    = "sim-scale.json"
	ScaleFaultsFile = "faults-scale.jsonl"
)

// scaleEvery is the share of the default workload's requests the
// incident's faults recur on: one request in scaleEvery, the first
// included.
const scaleEvery = 10

// Scale is the incident at the default workload's scale: the default
// workload on the plan's cluster with the default number of workers,
// the plan's faults recurring on one request in Every, each aimed at the
// same phase of its request as the plan aims it (a fault placed by time,
// at the same time after its request's arrival). The run keeps going past
// its violations (sim.Options.KeepGoing), so its figures are the whole
// workload's. The same files without the tables (the built-in ones) give
// the run to compare with; that run is not made here: the plan's
// deadlines, tuned to the bug, can keep the built-in tables busy (a
// heartbeat of a microsecond) far longer than the reproduction takes.
type Scale struct {
	Config          *cluster.Config
	Faults          []faultplan.Fault
	Requests, Every int
	// Struck counts the requests the faults recur on.
	Struck int
	// Restarts counts the plan's worker restarts left out: a worker
	// restart is aimed at a worker, not a request's phase.
	Restarts int
	Result   *sim.Result
}

// atScale runs the plan's incident at the default workload's scale.
func (p *Plan) atScale(ctx context.Context, proto *system.Protocol) (*Scale, error) {
	if p == nil || p.Result == nil {
		return nil, nil
	}
	def := cluster.DefaultConfig()
	cc := *p.Config
	cc.Prefill.Workers, cc.Decode.Workers = def.Prefill.Workers, def.Decode.Workers
	back, err := cluster.ParseConfig(ScaleSimFile, cc.JSON())
	if err != nil {
		return nil, fmt.Errorf("repro: the configuration at scale: %w", err)
	}
	reqs, err := defaultRequests()
	if err != nil {
		return nil, err
	}
	sc := &Scale{Config: back, Requests: len(reqs), Every: scaleEvery}
	for i := 0; i+len(p.Requests) <= len(reqs); i += scaleEvery * max(1, len(p.Requests)) {
		sc.Struck++
		for _, f := range p.Faults {
			if f.Request < 0 {
				if i == 0 {
					sc.Restarts++
				}
				continue
			}
			g := f
			g.Request = i + f.Request
			if g.After == "" {
				// Placed by time: at the same time after its request's
				// arrival.
				g.AtUS = f.AtUS - p.Requests[f.Request].ArrivalUS + reqs[g.Request].ArrivalUS
			}
			sc.Faults = append(sc.Faults, g)
		}
	}
	// A plan file lists its faults in time order.
	sortFaults(sc.Faults)
	if sc.Result, err = runKeptGoing(ctx, proto, back, reqs, sc.Faults); err != nil {
		return nil, err
	}
	return sc, nil
}

// runKeptGoing runs a plan to the end of its workload, past its
// violations (simulate --keep-going).
func runKeptGoing(ctx context.Context, proto *system.Protocol, cfg *cluster.Config, reqs []cluster.Request, faults []faultplan.Fault) (*sim.Result, error) {
	res, err := sim.Run(ctx, cfg, &sim.SliceSource{Reqs: slices.Clone(reqs)}, sim.Options{Protocol: proto, Faults: toCluster(faults), KeepGoing: true})
	if err != nil {
		return nil, fmt.Errorf("repro: the plan's run, kept going: %w", err)
	}
	return res, nil
}

// sortFaults orders faults by time, keeping the order of equal times.
func sortFaults(fs []faultplan.Fault) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].AtUS < fs[j-1].AtUS; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// defaultRequests is the default workload, as simulate reads it.
func defaultRequests() ([]cluster.Request, error) {
	rd := workload.Default()
	var out []cluster.Request
	for {
		q, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("repro: the default workload: %w", err)
		}
		r := cluster.Request{Index: q.Index, ID: q.ID, ArrivalUS: q.ArrivalUS, PromptTokens: model.Tokens(q.PromptTokens),
			OutputTokens: model.Tokens(q.OutputTokens), PrefixGroup: q.PrefixGroup, PrefixTokens: model.Tokens(q.PrefixTokens), CancelUS: -1}
		if q.HasCancel {
			r.CancelUS = q.CancelUS
		}
		out = append(out, r)
	}
}

// files adds the files of the incident at scale.
func (sc *Scale) files(out map[string][]byte) error {
	if sc == nil {
		return nil
	}
	var f bytes.Buffer
	if err := faultplan.Write(&f, &faultplan.Plan{Faults: sc.Faults}); err != nil {
		return err
	}
	var c bytes.Buffer
	if err := json.Indent(&c, sc.Config.JSON(), "", "  "); err != nil {
		return err
	}
	c.WriteByte('\n')
	out[ScaleSimFile], out[ScaleFaultsFile] = c.Bytes(), f.Bytes()
	return nil
}
