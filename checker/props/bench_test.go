package props

import (
	"context"
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// threeAlways are three always properties of the shape the shipped files
// hold: two implications and a disjunction, each per handoff.
const threeAlways = `handoffcheck.props/v1
always ActivatedKVKept per handoff: h.activated ? h.destination_hold == "active" || h.destination_outcome != "none" : true
always AckAfterActivationApplied per handoff: "activate" in h.destination_commands ? !("ReaderCompleted" in h.to_source) : true
always PinnedHasLease per handoff: h.source_hold != "pinned" || h.life.source_lease == "held"
`

// benchProps explores run vllm of testdata/configs/commands.json (420,051
// states) on one worker, safety only and without partial-order reduction
// (check --props turns it off), with the properties given or none. The
// default vllm search is minutes long on one core: this configuration
// measures the same per-state cost in a second.
func benchProps(b *testing.B, file string) {
	data, err := os.ReadFile("../../testdata/configs/commands.json")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := system.ParseConfig("commands.json", data)
	if err != nil {
		b.Fatal(err)
	}
	if file != "" {
		set, err := Load("three.props", []byte(file))
		if err != nil {
			b.Fatal(err)
		}
		cfg.Judge = set
	}
	runs, err := checker.SelectRuns(cfg, []string{"vllm"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		rep, err := checker.Check(context.Background(), system.Generated(), cfg, runs, checker.Limits{Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		if r := rep.Runs[0]; !r.Complete || r.Violation != nil {
			b.Fatalf("want a complete search without violation, got complete=%v violation=%v", r.Complete, r.Violation)
		}
	}
}

func BenchmarkProps_None(b *testing.B)        { benchProps(b, "") }
func BenchmarkProps_ThreeAlways(b *testing.B) { benchProps(b, threeAlways) }
