package live

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// dense is n requests every gapUS with prompts long enough that several
// are in their handoff at any moment.
func dense(n int, gapUS int64) []cluster.Request {
	out := make([]cluster.Request, n)
	for i := range out {
		out[i] = cluster.Request{Index: i, ArrivalUS: int64(i) * gapUS, PromptTokens: model.Tokens(2048 + 512*(i%4)), OutputTokens: 4, CancelUS: -1}
	}
	return out
}

// A live run cut short (the replay harness's teardown): at the teardown
// the workload stops, every attempt the router has not seen end is cut
// by the client cancel, each releases what it holds once (the workers'
// windows judge every step, the leak check reads every ledger, the logs
// conform), and the report says how many were cut, in text and JSON.
func TestLiveTeardown_CutsUnresolvedAndReleasesEachOnce(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := policyConfig(t, policy)
			reqs := dense(60, 15_000)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const until = 400_000
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: reqs}, Rewind: again(reqs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{}, UntilUS: until})
			if err != nil {
				t.Fatal(err)
			}
			td := rep.Teardown
			if td == nil || td.AtMS != until/1000 || td.Cut == 0 || td.Cancelled == 0 || td.Cancelled > td.Cut || td.NotArrived == 0 {
				rep.Write(os.Stderr)
				t.Fatalf("teardown %+v", td)
			}
			if td.Activated > td.Cut {
				t.Errorf("%d of %d cut attempts activated", td.Activated, td.Cut)
			}
			if rep.Requests+td.NotArrived != len(reqs) || rep.Finished != rep.Requests {
				t.Errorf("%d requests arrived, %d finished, %d never arrived, of %d", rep.Requests, rep.Finished, td.NotArrived, len(reqs))
			}
			if !rep.Clean || len(rep.Findings) > 0 {
				rep.Write(os.Stderr)
				t.Fatalf("the cut run left %v held, findings %v", rep.Leaks, rep.Findings)
			}
			var out bytes.Buffer
			rep.Write(&out)
			if !strings.Contains(out.String(), "attempts unresolved for the router cut") || !strings.Contains(out.String(), "each released what it held once, nothing held at the end") {
				t.Errorf("the report does not say what the teardown did:\n%s", out.String())
			}
			js, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Teardown *Teardown `json:"teardown"`
			}
			if err := json.Unmarshal(js, &back); err != nil || back.Teardown == nil || *back.Teardown != *td {
				t.Errorf("the JSON report's teardown is %+v, want %+v (%v)", back.Teardown, td, err)
			}
			judge(t, rep)
			t.Logf("teardown %+v; %d requests, %d succeeded", *td, rep.Requests, rep.Succeeded)
		})
	}
}
