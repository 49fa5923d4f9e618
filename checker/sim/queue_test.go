package sim

import (
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// Two prompts of 2,048 tokens reach one prefill worker together (its
// compute time is read from the configuration). The second computes only
// once the first ended: its wait is the first's compute, reported as
// prefill wait and drawn as a queued phase that ends where its computing
// phase begins, not folded into computing.
func TestQueueWait_PrefillBehindAnother(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := policyConfig(pol)
			cfg.Prefill.Workers, cfg.JitterUS = 1, 0
			reqs := []cluster.Request{
				{Index: 0, ID: "a", ArrivalUS: 0, PromptTokens: 2048, OutputTokens: 4, CancelUS: -1},
				{Index: 1, ID: "b", ArrivalUS: 0, PromptTokens: 2048, OutputTokens: 4, CancelUS: -1},
			}
			rec := NewRecorder(nil)
			res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec})
			if err != nil || res.Violation != nil {
				t.Fatalf("%v %v", err, res.Violation)
			}
			wc := cfg.AttemptWorld(reqs[0].PromptTokens, 0)
			if err := wc.Prepare(); err != nil {
				t.Fatal(err)
			}
			computeMS := float64(cfg.ComputeUS(wc)) / 1000
			w := res.Summary.PrefillWait
			if w.N != 2 {
				t.Fatalf("prefill waits of %d requests, want 2", w.N)
			}
			// One waits about nothing, the other about one compute: the
			// mean is half a compute (the few microseconds of delivery and
			// command time aside).
			if d := w.Mean - computeMS/2; d < -0.05 || d > 0.05 {
				t.Errorf("mean prefill wait %.3f ms, want about %.3f (half of one compute of %.3f ms)", w.Mean, computeMS/2, computeMS)
			}
			var b *HandoffTimeline
			for i := range rec.Timeline().Handoffs {
				if h := &rec.Timeline().Handoffs[i]; h.ID == "b" {
					b = h
				}
			}
			if b == nil {
				t.Fatal("no timeline of request b")
			}
			var queued, computing *Phase
			for i := range b.Phases {
				switch p := &b.Phases[i]; p.Name {
				case "queued":
					if queued == nil {
						queued = p
					}
				case "computing":
					computing = p
				}
			}
			if queued == nil || computing == nil {
				t.Fatalf("request b's phases %+v: want a queued phase before computing", b.Phases)
			}
			if queued.EndMS != computing.StartMS || queued.EndMS-queued.StartMS < computeMS*0.99 {
				t.Errorf("request b queued %.3f-%.3f ms, computed from %.3f ms: want the queue to end where computing begins, one compute (%.3f ms) later", queued.StartMS, queued.EndMS, computing.StartMS, computeMS)
			}
			if d := computing.EndMS - computing.StartMS; d < computeMS*0.99 || d > computeMS*1.01 {
				t.Errorf("request b computed for %.3f ms, want its compute of %.3f ms", d, computeMS)
			}
		})
	}
}

// With one decode slot, a source-first engine activates the second of
// two requests while the first decodes: it waits for the slot, reported
// as decode wait and drawn as a queued phase that ends where its decoding
// begins. A destination-first engine holds the slot from its reservation,
// before prefill is dispatched, so its destinations never wait for one
// once active.
func TestQueueWait_DecodeSlot(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := policyConfig(pol)
			cfg.Decode.Workers, cfg.Decode.Slots, cfg.JitterUS = 1, 1, 0
			reqs := []cluster.Request{
				{Index: 0, ID: "a", ArrivalUS: 0, PromptTokens: 512, OutputTokens: 100, CancelUS: -1},
				{Index: 1, ID: "b", ArrivalUS: 0, PromptTokens: 512, OutputTokens: 100, CancelUS: -1},
			}
			rec := NewRecorder(nil)
			res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec})
			if err != nil || res.Violation != nil {
				t.Fatalf("%v %v", err, res.Violation)
			}
			w := res.Summary.DecodeWait
			if w.N != 2 {
				t.Fatalf("decode waits of %d requests, want 2", w.N)
			}
			decodeMS := float64(cfg.DecodeUS(reqs[0].OutputTokens)) / 1000
			if pol == "destination-first" {
				if w.Mean != 0 {
					t.Errorf("mean decode wait %.3f ms, want 0: the slot is held from the reservation", w.Mean)
				}
				return
			}
			if d := w.Mean - decodeMS/2; d < -0.05 || d > 0.05 {
				t.Errorf("mean decode wait %.3f ms, want about %.3f (half of one decode of %.3f ms)", w.Mean, decodeMS/2, decodeMS)
			}
			for _, h := range rec.Timeline().Handoffs {
				if h.ID != "b" {
					continue
				}
				var queued, decoding *Phase
				for i := range h.Phases {
					switch p := &h.Phases[i]; p.Name {
					case "queued":
						queued = p
					case "decoding":
						decoding = p
					}
				}
				if queued == nil || decoding == nil || queued.EndMS != decoding.StartMS || queued.EndMS-queued.StartMS < decodeMS*0.99 {
					t.Errorf("request b's phases %+v: want a queued phase of about one decode (%.3f ms) ending where decoding begins", h.Phases, decodeMS)
				}
			}
		})
	}
}
