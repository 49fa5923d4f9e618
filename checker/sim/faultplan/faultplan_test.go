package faultplan

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

const example = `{"format":"handoffcheck.faults/v1"}
{"at_ms":0,"kind":"hang","request":4}
{"at_ms":0,"kind":"transfer_failure","request":4}
{"at_ms":0,"kind":"delay","request":4,"side":"destination"}
{"side":"source","request":4,"kind":"evict","at_ms":10}
{"at_ms":50,"kind":"cancel","request":7}
{"at_ms":80.0,"kind":"abort","request":7,"side":"source"}
{"at_ms":120,"kind":"loss","request":3,"to":"destination"}
{"at_ms":120.0004,"kind":"duplicate","request":3,"to":"source","msg":"ReceiveCompleted"}
{"at_ms": 120.5, "kind": "loss", "request": 2147483647, "msg": "ReaderCompleted"}
{"at_ms":300,"kind":"restart","worker":2}
{"at_ms":300,"after":"transfer_started","side":"destination","kind":"restart","request":5}
{"at_ms":300,"after_side":"destination","after":"reserved","side":"source","kind":"abort","request":6}
`

const exampleCanonical = `{"format":"handoffcheck.faults/v1"}
{"at_ms":0,"kind":"hang","request":4}
{"at_ms":0,"kind":"transfer_failure","request":4}
{"at_ms":0,"kind":"delay","request":4,"side":"destination"}
{"at_ms":10,"kind":"evict","request":4,"side":"source"}
{"at_ms":50,"kind":"cancel","request":7}
{"at_ms":80,"kind":"abort","request":7,"side":"source"}
{"at_ms":120,"kind":"loss","request":3,"to":"destination"}
{"at_ms":120,"kind":"duplicate","request":3,"to":"source","msg":"ReceiveCompleted"}
{"at_ms":120.5,"kind":"loss","request":2147483647,"msg":"ReaderCompleted"}
{"at_ms":300,"kind":"restart","worker":2}
{"at_ms":300,"kind":"restart","request":5,"side":"destination","after":"transfer_started"}
{"at_ms":300,"kind":"abort","request":6,"side":"source","after":"reserved","after_side":"destination"}
`

func parse(data string) (*Plan, error) { return Parse(strings.NewReader(data), "p.jsonl") }

func TestParse_Example(t *testing.T) {
	p, err := parse(example)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{Line: 2, AtUS: 0, Kind: "hang", Request: 4, Worker: -1},
		{Line: 3, AtUS: 0, Kind: "transfer_failure", Request: 4, Worker: -1},
		{Line: 4, AtUS: 0, Kind: "delay", Request: 4, Worker: -1, Side: "destination"},
		{Line: 5, AtUS: 10000, Kind: "evict", Request: 4, Worker: -1, Side: "source"},
		{Line: 6, AtUS: 50000, Kind: "cancel", Request: 7, Worker: -1},
		{Line: 7, AtUS: 80000, Kind: "abort", Request: 7, Worker: -1, Side: "source"},
		{Line: 8, AtUS: 120000, Kind: "loss", Request: 3, Worker: -1, To: "destination"},
		{Line: 9, AtUS: 120000, Kind: "duplicate", Request: 3, Worker: -1, To: "source", Msg: "ReceiveCompleted"},
		{Line: 10, AtUS: 120500, Kind: "loss", Request: MaxIndex, Worker: -1, Msg: "ReaderCompleted"},
		{Line: 11, AtUS: 300000, Kind: "restart", Request: -1, Worker: 2},
		{Line: 12, AtUS: 300000, Kind: "restart", Request: 5, Worker: -1, Side: "destination", After: "transfer_started"},
		{Line: 13, AtUS: 300000, Kind: "abort", Request: 6, Worker: -1, Side: "source", After: "reserved", AfterSide: "destination"},
	}
	if d := cmp.Diff(want, p.Faults); d != "" {
		t.Fatalf("faults (-want +got):\n%s", d)
	}
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	if b.String() != exampleCanonical {
		t.Fatalf("canonical form:\n%s\nwant:\n%s", b.String(), exampleCanonical)
	}
}

// Every form of every kind a plan may schedule (the table rules, from the
// checker's fault table) is written and read back the same, with each
// field it takes given: a kind added to the table is covered without an
// example of its own.
func TestRoundTrip_EveryKind(t *testing.T) {
	var plan Plan
	for i := range rules {
		for r := &rules[i]; r != nil; r = r.alt {
			f := Fault{AtUS: int64(len(plan.Faults)) * 1000, Kind: r.kind, Request: -1, Worker: -1}
			for _, field := range r.fields() {
				if field.need == forbidden {
					continue
				}
				switch field.name {
				case "request":
					f.Request = 3
				case "worker":
					f.Worker = 1
				case "to":
					f.To = "source"
				case "side":
					f.Side = "destination"
				case "msg":
					f.Msg = "ReceiveCompleted"
				case "after":
					f.After = "transfer_started"
				case "after_side":
					f.AfterSide = "source"
				}
			}
			f.Line = len(plan.Faults) + 2
			plan.Faults = append(plan.Faults, f)
		}
	}
	if len(plan.Faults) <= len(Kinds()) {
		t.Fatalf("%d forms of %d kinds; want a second form of restart at least", len(plan.Faults), len(Kinds()))
	}
	var b bytes.Buffer
	if err := Write(&b, &plan); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(&b, "plan.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plan.Faults, got.Faults); d != "" {
		t.Fatalf("read back (-written +read):\n%s", d)
	}
}

func TestParse_HeaderOnly(t *testing.T) {
	for _, data := range []string{`{"format":"handoffcheck.faults/v1"}`, "{\"format\":\"handoffcheck.faults/v1\"}\r\n"} {
		p, err := parse(data)
		if err != nil || len(p.Faults) != 0 {
			t.Fatalf("%q: %v, %v", data, p, err)
		}
	}
}

const header = `{"format":"handoffcheck.faults/v1"}` + "\n"

// TestParse_Refusals: each refusal names the file, the line and, for a
// fault, its kind; says what is wrong and what was expected; and wraps
// ErrFaultPlan.
func TestParse_Refusals(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"empty", "", `p.jsonl:1: faultplan: bad fault plan: empty fault plan, want a header line {"format": "handoffcheck.faults/v1"}`},
		{"no header", `{"at_ms":0,"kind":"hang","request":4}`, `p.jsonl:1: faultplan: bad fault plan: unknown field "at_ms"; want {"format": "handoffcheck.faults/v1"} first`},
		{"header without format", `{}`, `p.jsonl:1: faultplan: bad fault plan: the header has no format`},
		{"workload header", `{"format":"handoffcheck.workload/v1"}`, `p.jsonl:1: faultplan: bad fault plan: format "handoffcheck.workload/v1", want "handoffcheck.faults/v1"`},
		{"header extra", `{"format":"handoffcheck.faults/v1","name":"x"}`, `p.jsonl:1: faultplan: bad fault plan: unknown field "name"`},
		{"blank line", header + "\n" + `{"at_ms":0,"kind":"hang","request":4}`, `p.jsonl:2: faultplan: bad fault plan: blank line`},
		{"malformed", header + `{"at_ms":0,"kind":"hang","request":4`, `p.jsonl:2: faultplan: bad fault plan: the JSON ends early; want a fault such as`},
		{"trailing", header + `{"at_ms":0,"kind":"hang","request":4} 5`, `p.jsonl:2: faultplan: bad fault plan: "5" after the JSON object`},
		{"duplicate key", header + `{"at_ms":0,"kind":"hang","request":4,"request":5}`, `p.jsonl:2: faultplan: bad fault plan: key "request" appears twice`},
		{"unknown field", header + `{"at_ms":0,"kind":"hang","request":4,"handoff":4}`, `p.jsonl:2: faultplan: bad fault plan: unknown field "handoff"`},
		{"no kind", header + `{"at_ms":0,"request":4}`, `p.jsonl:2: faultplan: bad fault plan: no kind; want one of duplicate, loss, cancel, abort, transfer_failure, restart, hang, evict, delay`},
		{"kind not a string", header + `{"at_ms":0,"kind":3}`, `p.jsonl:2: faultplan: bad fault plan: kind 3, want a string`},
		{"unknown kind", header + `{"at_ms":0,"kind":"lose","request":4}`, `p.jsonl:2: faultplan: bad fault plan: kind "lose" is not a fault kind a plan may schedule; want one of duplicate, loss`},
		{"reorder", header + `{"at_ms":0,"kind":"reorder","request":4}`, `p.jsonl:2: faultplan: bad fault plan: kind "reorder" cannot be scheduled in a plan: facts are reordered by the simulator's latency jitter`},
		{"early_timer", header + `{"at_ms":0,"kind":"early_timer"}`, `p.jsonl:2: faultplan: bad fault plan: kind "early_timer" cannot be scheduled in a plan: timers fire on the simulator's clock`},
		{"no_show", header + `{"at_ms":0,"kind":"no_show","request":1}`, `p.jsonl:2: faultplan: bad fault plan: kind "no_show" cannot be scheduled in a plan`},
		{"background_load", header + `{"at_ms":0,"kind":"background_load","worker":1}`, `p.jsonl:2: faultplan: bad fault plan: kind "background_load" cannot be scheduled in a plan: the other requests of the workload are the load`},
		{"no time", header + `{"kind":"hang","request":4}`, `p.jsonl:2: faultplan: bad fault plan: hang: no at_ms; want the time of the fault in milliseconds (hang takes at_ms, kind, request)`},
		{"negative time", header + `{"at_ms":-1,"kind":"hang","request":4}`, `p.jsonl:2: faultplan: bad fault plan: hang: at_ms -1, want 0 to 100000000000`},
		{"infinite time", header + `{"at_ms":1e999,"kind":"hang","request":4}`, `p.jsonl:2: faultplan: bad fault plan: hang: at_ms 1e999 is not a finite number`},
		{"time string", header + `{"at_ms":"5","kind":"hang","request":4}`, `p.jsonl:2: faultplan: bad fault plan: hang: at_ms "5", want a number of milliseconds`},
		{"time null", header + `{"at_ms":null,"kind":"hang","request":4}`, `p.jsonl:2: faultplan: bad fault plan: hang: at_ms null, want a number of milliseconds`},
		{"out of order", header + `{"at_ms":5,"kind":"hang","request":4}` + "\n" + `{"at_ms":4.5,"kind":"hang","request":3}`, `p.jsonl:3: faultplan: bad fault plan: at_ms 4.5 is before the previous fault's at_ms 5; want faults in time order`},
		{"missing request", header + `{"at_ms":0,"kind":"loss","to":"source"}`, `p.jsonl:2: faultplan: bad fault plan: loss needs request (loss takes at_ms, kind, request, to (optional), msg (optional))`},
		{"restart of both forms", header + `{"at_ms":0,"kind":"restart","worker":1,"request":1,"side":"source","after":"pinned"}`, `p.jsonl:2: faultplan: bad fault plan: restart does not take worker (restart takes at_ms, kind, worker; or at_ms, kind, request, side, after)`},
		{"after without side", header + `{"at_ms":0,"kind":"restart","request":1,"after":"pinned"}`, `p.jsonl:2: faultplan: bad fault plan: restart needs side (restart takes at_ms, kind, worker; or at_ms, kind, request, side, after)`},
		{"after on a loss", header + `{"at_ms":0,"kind":"loss","request":1,"after":"pinned"}`, `p.jsonl:2: faultplan: bad fault plan: loss does not take after`},
		{"after_side of no side", header + `{"at_ms":0,"kind":"abort","request":1,"side":"source","after":"reserved","after_side":"decode"}`, `p.jsonl:2: faultplan: bad fault plan: abort: after_side "decode", want "source" or "destination"`},
		{"after_side without after", header + `{"at_ms":0,"kind":"abort","request":1,"side":"source","after_side":"destination"}`, `p.jsonl:2: faultplan: bad fault plan: abort does not take after_side (abort takes at_ms, kind, request, side; or at_ms, kind, request, side, after, after_side (optional))`},
		{"after_side on a restart", header + `{"at_ms":0,"kind":"restart","request":1,"side":"source","after":"reserved","after_side":"destination"}`, `p.jsonl:2: faultplan: bad fault plan: restart does not take after_side (restart takes at_ms, kind, worker; or at_ms, kind, request, side, after)`},
		{"missing worker", header + `{"at_ms":0,"kind":"restart"}`, `p.jsonl:2: faultplan: bad fault plan: restart needs worker (restart takes at_ms, kind, worker; or at_ms, kind, request, side, after)`},
		{"missing side", header + `{"at_ms":0,"kind":"abort","request":1}`, `p.jsonl:2: faultplan: bad fault plan: abort needs side (abort takes at_ms, kind, request, side; or at_ms, kind, request, side, after, after_side (optional))`},
		{"extra worker", header + `{"at_ms":0,"kind":"hang","request":1,"worker":0}`, `p.jsonl:2: faultplan: bad fault plan: hang does not take worker (hang takes at_ms, kind, request)`},
		{"extra request", header + `{"at_ms":0,"kind":"restart","worker":0,"request":1}`, `p.jsonl:2: faultplan: bad fault plan: restart does not take request`},
		{"to on abort", header + `{"at_ms":0,"kind":"abort","request":1,"side":"source","to":"source"}`, `p.jsonl:2: faultplan: bad fault plan: abort does not take to`},
		{"side on loss", header + `{"at_ms":0,"kind":"loss","request":1,"side":"source"}`, `p.jsonl:2: faultplan: bad fault plan: loss does not take side`},
		{"msg on cancel", header + `{"at_ms":0,"kind":"cancel","request":1,"msg":"X"}`, `p.jsonl:2: faultplan: bad fault plan: cancel does not take msg`},
		{"null request", header + `{"at_ms":0,"kind":"cancel","request":null}`, `p.jsonl:2: faultplan: bad fault plan: cancel: request null, want an integer from 0 to 2147483647`},
		{"negative request", header + `{"at_ms":0,"kind":"cancel","request":-1}`, `p.jsonl:2: faultplan: bad fault plan: cancel: request -1, want 0 to 2147483647`},
		{"fraction request", header + `{"at_ms":0,"kind":"cancel","request":1.5}`, `p.jsonl:2: faultplan: bad fault plan: cancel: request 1.5, want an integer from 0 to 2147483647`},
		{"huge worker", header + `{"at_ms":0,"kind":"restart","worker":2147483648}`, `p.jsonl:2: faultplan: bad fault plan: restart: worker 2147483648, want 0 to 2147483647`},
		{"bad to", header + `{"at_ms":0,"kind":"loss","request":1,"to":"decode"}`, `p.jsonl:2: faultplan: bad fault plan: loss: to "decode", want "source" or "destination"`},
		{"bad side", header + `{"at_ms":0,"kind":"evict","request":1,"side":1}`, `p.jsonl:2: faultplan: bad fault plan: evict: side 1, want "source" or "destination"`},
		{"empty msg", header + `{"at_ms":0,"kind":"loss","request":1,"msg":""}`, `p.jsonl:2: faultplan: bad fault plan: loss: msg of 0 bytes, want the name of a fact, 1 to 128 bytes`},
		{"long msg", header + `{"at_ms":0,"kind":"loss","request":1,"msg":"` + strings.Repeat("m", 129) + `"}`, `p.jsonl:2: faultplan: bad fault plan: loss: msg of 129 bytes`},
		{"long line", header + strings.Repeat(" ", MaxLineBytes+1), `p.jsonl:2: faultplan: bad fault plan: the line is longer than 64 KiB`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.data)
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			if !errors.Is(err, ErrFaultPlan) {
				t.Errorf("%v does not wrap ErrFaultPlan", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant %s...", err, tc.want)
			}
		})
	}
}

// TestParse_SizeBounded: a plan over MaxPlanBytes is refused without
// being read whole.
func TestParse_SizeBounded(t *testing.T) {
	// Long lines keep the test quick: few lines, many bytes.
	line := `{"at_ms":0,"kind":"hang","request":4` + strings.Repeat(" ", MaxLineBytes-100) + "}\n"
	r := io.MultiReader(strings.NewReader(header), strings.NewReader(strings.Repeat(line, MaxPlanBytes/len(line)+10)))
	_, err := Parse(r, "p.jsonl")
	if err == nil || !errors.Is(err, ErrFaultPlan) || !strings.Contains(err.Error(), "the plan is larger than 16 MiB") {
		t.Fatalf("got %v", err)
	}
	// Just under the bound is read.
	n := (MaxPlanBytes - len(header)) / len(line)
	p, err := Parse(io.MultiReader(strings.NewReader(header), strings.NewReader(strings.Repeat(line, n))), "p.jsonl")
	if err != nil || len(p.Faults) != n {
		t.Fatalf("%d faults, %v", len(p.Faults), err)
	}
}

func TestWrite_Refuses(t *testing.T) {
	ok := Fault{AtUS: 10, Kind: "hang", Request: 1, Worker: -1}
	cases := []struct {
		name string
		f    Fault
		want string
	}{
		{"unknown kind", Fault{Kind: "lose", Request: 1, Worker: -1, AtUS: 10}, `kind "lose" is not a fault kind`},
		{"unschedulable", Fault{Kind: "reorder", Request: -1, Worker: -1, AtUS: 10}, `kind "reorder" cannot be scheduled`},
		{"early", Fault{Kind: "hang", Request: 1, Worker: -1, AtUS: 9}, "at_ms 0.009 is before the previous fault's at_ms 0.01"},
		{"negative time", Fault{Kind: "hang", Request: 1, Worker: -1, AtUS: -1}, "at_ms -0.001, want 0 to 100000000000"},
		{"no request", Fault{Kind: "hang", Request: -1, Worker: -1, AtUS: 10}, "hang needs request"},
		{"worker zero", Fault{Kind: "hang", Request: 1, AtUS: 10}, "hang does not take worker (hang takes at_ms, kind, request; a field it does not take is -1 or empty)"},
		{"bad request", Fault{Kind: "hang", Request: -2, Worker: -1, AtUS: 10}, "request -2, want 0 to 2147483647 (or -1 for none)"},
		{"bad side", Fault{Kind: "abort", Request: 1, Worker: -1, Side: "both", AtUS: 10}, `side "both", want "source" or "destination"`},
		{"bad to", Fault{Kind: "loss", Request: 1, Worker: -1, To: "both", AtUS: 10}, `to "both", want "source" or "destination"`},
		{"long msg", Fault{Kind: "loss", Request: 1, Worker: -1, Msg: strings.Repeat("m", 200), AtUS: 10}, "msg of 200 bytes, want at most 128"},
		{"msg not UTF-8", Fault{Kind: "loss", Request: 1, Worker: -1, Msg: "\xff", AtUS: 10}, "msg is not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := Write(&b, &Plan{Faults: []Fault{ok, tc.f}})
			if err == nil || !errors.Is(err, ErrFaultPlan) || !strings.Contains(err.Error(), "fault 1: "+tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if b.Len() != 0 {
				t.Errorf("a refused plan was written in part")
			}
		})
	}
}

// TestKinds_AreTheCheckersFaultKinds: every kind a plan may schedule is a
// fault kind of the checker and takes the arguments its move takes; every
// other fault kind of the checker is refused with a reason.
func TestKinds_AreTheCheckersFaultKinds(t *testing.T) {
	byName := map[string]int{}
	for i := range system.FaultKinds {
		byName[system.FaultKinds[i].Config] = i
	}
	for _, r := range rules {
		i, ok := byName[r.kind]
		if !ok {
			t.Errorf("plan kind %q is not a checker fault kind (system.FaultKinds Config)", r.kind)
			continue
		}
		k := &system.FaultKinds[i]
		f, _ := system.ParseFault(r.kind)
		h, worker, side, fact := f.Move().Names()
		for _, c := range []struct {
			what  string
			names bool
			need  need
		}{{"h", h, r.request}, {"worker", worker, r.worker}, {"to", fact, r.to}, {"side", side, r.side}, {"msg", fact, r.msg}} {
			if c.names != (c.need != forbidden) {
				t.Errorf("kind %s: the checker's move %s names %s: %v; the plan's rule: %v", r.kind, k.Syntax, c.what, c.names, c.need)
			}
		}
	}
	for name := range byName {
		_, schedulable := ruleOf(name)
		why := NotSchedulable(name)
		if schedulable == (why != "") {
			t.Errorf("checker fault kind %q: schedulable %v, reason refused %q; want exactly one", name, schedulable, why)
		}
	}
	for name := range notSchedulable {
		if _, ok := byName[name]; !ok {
			t.Errorf("%q is refused with a reason but is no checker fault kind", name)
		}
	}
	// The rules are in the checker's budget order.
	var order []string
	for _, k := range system.FaultKinds {
		if _, ok := ruleOf(k.Config); ok {
			order = append(order, k.Config)
		}
	}
	if !slices.Equal(order, Kinds()) {
		t.Errorf("Kinds() %v, want the checker's order %v", Kinds(), order)
	}
}

// genPlan draws a valid plan.
func genPlan(t *rapid.T) *Plan {
	n := rapid.IntRange(0, 30).Draw(t, "n")
	p := &Plan{}
	var at int64
	for i := range n {
		r := rapid.SampledFrom(rules).Draw(t, "rule")
		at = rapid.Int64Range(at, min(at+1_000_000, 100_000_000_000_000)).Draw(t, "at")
		f := Fault{Line: i + 2, AtUS: at, Kind: r.kind, Request: -1, Worker: -1}
		pick := func(n need, label string) bool {
			return n == required || (n == optional && rapid.Bool().Draw(t, label))
		}
		if pick(r.request, "request?") {
			f.Request = rapid.IntRange(0, MaxIndex).Draw(t, "request")
		}
		if pick(r.worker, "worker?") {
			f.Worker = rapid.IntRange(0, MaxIndex).Draw(t, "worker")
		}
		if pick(r.to, "to?") {
			f.To = rapid.SampledFrom([]string{"source", "destination"}).Draw(t, "to")
		}
		if pick(r.side, "side?") {
			f.Side = rapid.SampledFrom([]string{"source", "destination"}).Draw(t, "side")
		}
		if pick(r.msg, "msg?") {
			f.Msg = rapid.StringOfN(rapid.Rune(), 1, 20, MaxMsgBytes).Draw(t, "msg")
		}
		p.Faults = append(p.Faults, f)
	}
	return p
}

// TestRoundTrip_Rapid: parsing what Write wrote gives the same plan, and
// writing it again the same bytes.
func TestRoundTrip_Rapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPlan(t)
		var b bytes.Buffer
		if err := Write(&b, p); err != nil {
			t.Fatal(err)
		}
		back, err := Parse(bytes.NewReader(b.Bytes()), "p.jsonl")
		if err != nil {
			t.Fatalf("%v\n%s", err, b.Bytes())
		}
		if d := cmp.Diff(p, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("(-wrote +read):\n%s", d)
		}
		var again bytes.Buffer
		if err := Write(&again, back); err != nil || !bytes.Equal(again.Bytes(), b.Bytes()) {
			t.Fatalf("written again: %v\n%s", err, again.Bytes())
		}
	})
}

func TestDraw(t *testing.T) {
	p, err := Draw(7, 500, 50, 4, nil, 10_000_000)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := Draw(7, 500, 50, 4, nil, 10_000_000)
	if d := cmp.Diff(p, q); d != "" {
		t.Fatalf("two draws with one seed differ:\n%s", d)
	}
	if r, _ := Draw(8, 500, 50, 4, nil, 10_000_000); cmp.Equal(p, r) {
		t.Fatal("seeds 7 and 8 draw the same plan")
	}
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(&b, "p.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, back); d != "" {
		t.Fatalf("a drawn plan reads back otherwise (-drawn +read):\n%s", d)
	}
	seen := map[string]int{}
	for _, f := range p.Faults {
		seen[f.Kind]++
		if f.AtUS < 0 || f.AtUS > 10_000_000 || f.Request >= 50 || f.Worker >= 4 || f.Msg != "" {
			t.Fatalf("fault out of range: %+v", f)
		}
	}
	if len(seen) != len(rules) {
		t.Errorf("500 faults drew kinds %v, want all %d", seen, len(rules))
	}
	// A plan of some kinds draws only those.
	p, err = Draw(1, 100, 5, 0, []string{"loss", "cancel"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Faults {
		if (f.Kind != "loss" && f.Kind != "cancel") || f.AtUS != 0 {
			t.Fatalf("drew %+v", f)
		}
	}
	if p, err := Draw(1, 0, 0, 0, nil, 0); err != nil || len(p.Faults) != 0 {
		t.Fatalf("no faults: %v, %v", p, err)
	}
}

// TestDraw_Pinned: Draw uses integer draws only, so its plans are the same
// on every machine; this pins one, drawn from the kinds a plan could
// schedule when it was pinned, so that a kind added later leaves it be.
func TestDraw_Pinned(t *testing.T) {
	kinds := []string{"duplicate", "loss", "cancel", "abort", "transfer_failure", "restart", "hang", "evict", "delay"}
	p, err := Draw(1, 4, 10, 2, kinds, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	const want = `{"format":"handoffcheck.faults/v1"}
{"at_ms":158.816,"kind":"hang","request":2}
{"at_ms":372.63,"kind":"abort","request":1,"side":"destination"}
{"at_ms":435.373,"kind":"abort","request":7,"side":"destination"}
{"at_ms":502.225,"kind":"hang","request":5}
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestDraw_Refusals(t *testing.T) {
	cases := []struct {
		name                string
		n, requests, worker int
		kinds               []string
		horizon             int64
		want                string
	}{
		{"negative n", -1, 1, 1, nil, 0, "draw -1 faults, want 0 to 1048576"},
		{"too many", MaxDrawFaults + 1, 1, 1, nil, 0, "draw 1048577 faults"},
		{"negative horizon", 1, 1, 1, nil, -1, "horizon -0.001 ms, want 0 to 100000000000"},
		{"negative requests", 1, -1, 1, nil, 0, "-1 requests"},
		{"negative workers", 1, 1, -1, nil, 0, "-1 workers"},
		{"no kinds", 1, 1, 1, []string{}, 0, "no kinds to draw 1 faults from"},
		{"unknown kind", 1, 1, 1, []string{"lose"}, 0, `kind "lose" is not a fault kind`},
		{"unschedulable", 1, 1, 1, []string{"reorder"}, 0, `kind "reorder" cannot be scheduled`},
		{"no requests", 1, 0, 1, []string{"loss"}, 0, `kind "loss" hits a request, and there are none`},
		{"no workers", 1, 1, 0, nil, 0, `kind "restart" hits a worker, and there are none`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Draw(1, tc.n, tc.requests, tc.worker, tc.kinds, tc.horizon)
			if err == nil || !errors.Is(err, ErrFaultPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
