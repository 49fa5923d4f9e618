package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// The simulation report renders itself: a summary per run (a blank line
// between runs), the violation with the request's history, the interrupt,
// and one JSON object with --json.
func TestWriteResults(t *testing.T) {
	a := &Result{Summary: Summary{Policy: "source-first", Engine: "vllm", Seed: 1, Requests: 2, MakespanMS: 1500, Events: 40},
		Violation: &Violation{Invariant: "BoundedReclaim", AtUS: 1550900, Request: 1, Detail: "held too long", History: []string{"1200.000ms arrives"}}}
	b := &Result{Summary: Summary{Policy: "destination-first", Engine: "sglang", Seed: 1, Requests: 2}, Interrupted: true}
	var w strings.Builder
	if err := WriteResults(&w, []*Result{a, b}, false); err != nil {
		t.Fatal(err)
	}
	text := w.String()
	for _, want := range []string{
		"simulate: source-first on vllm, seed 1: 2 requests in 1.500 s of virtual time (40 events)\n",
		"VIOLATION BoundedReclaim at 1550.900 ms, request 1: held too long\nhistory of the request:\n  1200.000ms arrives\n\nsimulate: destination-first on sglang",
		"interrupted: the figures cover the virtual time simulated so far\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	w.Reset()
	if err := WriteResults(&w, []*Result{a, b}, true); err != nil {
		t.Fatal(err)
	}
	var runs struct {
		Runs []struct {
			Violation   *Violation `json:"violation"`
			Interrupted bool       `json:"interrupted"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(w.String()), &runs); err != nil || len(runs.Runs) != 2 || runs.Runs[0].Violation == nil || !runs.Runs[1].Interrupted {
		t.Errorf("--json of two runs: %v\n%s", err, w.String())
	}
}
