package conform

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

const (
	variantFile = "../../testdata/variants/release-before-activation.json"
	propsFile   = "../../testdata/props/release-before-activation.props"
	// propName is the property propsFile writes, at propLine.
	propName = "AckAfterActivationApplied"
	propLine = 8
)

func loadPropsFile(t *testing.T, file string) *props.Set {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	set, err := props.Load(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func variantProtocol(t *testing.T, file string) *system.Protocol { return variant.Protocol(t, file) }

// simLogOf is the log the simulator writes of a scenario run by the
// tables of p, source-first (vLLM, whose activation waits in the core as
// a command in the default configuration).
func simLogOf(t *testing.T, name string, p *system.Protocol) []byte {
	t.Helper()
	var sc *sim.Scenario
	for i := range sim.Scenarios {
		if sim.Scenarios[i].Name == name {
			sc = &sim.Scenarios[i]
		}
	}
	if sc == nil {
		t.Fatalf("no scenario %s", name)
	}
	cfg, reqs, faults, err := sc.Setup("source-first")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Faults: faults, FaultFree: sc.FaultFree, Log: w, Protocol: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s: the simulation broke %s", name, res.Violation.Invariant)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The simulator's log of the shipped variant that acknowledges the reads
// before the activation is applied is explained by the variant's tables,
// every built-in invariant holding along the explanation; with the
// property that sees it, every explanation breaks it, and the log is
// rejected at a transfer_done (the step that sends ReaderCompleted while
// the activate command waits), naming the property and where it is
// written. The built-in tables' log of the same scenario conforms with the
// property: it holds there.
func TestProps_RejectsTheVariantsLog(t *testing.T) {
	set := loadPropsFile(t, propsFile)
	variant := variantProtocol(t, variantFile)
	data := simLogOf(t, "stranded-source", variant)

	if rep := judgeBytes(t, "variant.log", data, Options{Protocol: variant}); rep.Verdict != Explained {
		t.Fatalf("without the property: %s: %+v", rep.Verdict, rep.Rejection)
	}
	rep := judgeBytes(t, "variant.log", data, Options{Protocol: variant, Props: set})
	if rep.Verdict != Rejected {
		t.Fatalf("with the property: %s, want rejected", rep.Verdict)
	}
	r := rep.Rejection
	if r.Property != propName || r.PropertyAt != propsFile+":8" {
		t.Fatalf("the rejection names property %q at %q, want %s at %s:%d: %+v", r.Property, r.PropertyAt, propName, propsFile, propLine, r)
	}
	if !strings.HasPrefix(r.Detail, "no step here that this fact describes keeps every property: one that would explain it breaks "+propName+": always "+propName+" does not hold") {
		t.Fatalf("the detail does not give the property's violation: %s", r.Detail)
	}
	lines := strings.Split(string(data), "\n")
	if r.File != "variant.log" || r.Line < 2 || r.Line > len(lines) || !strings.Contains(lines[r.Line-1], `"kind":"transfer_done"`) {
		t.Fatalf("rejected at %s:%d, want the line of a transfer_done", r.File, r.Line)
	}
	if !strings.HasSuffix(r.Fact, "transfer_done") {
		t.Fatalf("the fact rejected is %q, want a transfer_done", r.Fact)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if want := "  property: " + propName + " (" + propsFile + ":8)\n"; !strings.Contains(text.String(), want) {
		t.Fatalf("the text report lacks %q:\n%s", want, text.String())
	}

	builtin := simLogOf(t, "stranded-source", system.Generated())
	rep = judgeBytes(t, "builtin.log", builtin, Options{Props: set})
	if rep.Verdict != Explained || rep.Props != propsFile {
		t.Fatalf("the built-in tables' log with the property: %s (properties %q): %+v", rep.Verdict, rep.Props, rep.Rejection)
	}
	text.Reset()
	rep.WriteText(&text)
	if want := "every invariant and every property of " + propsFile + " holding along it\n"; !strings.Contains(text.String(), want) {
		t.Fatalf("the text report does not say the properties held:\n%s", text.String())
	}
}
