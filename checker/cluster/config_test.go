package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// A key given twice is refused at its second line, naming the first:
// encoding/json would keep the last value silently, and docs/cli.md says
// duplicate keys are refused.
func TestParseConfig_DuplicateKeyRefused(t *testing.T) {
	base := string(DefaultConfigJSON())
	if _, err := ParseConfig("c.json", []byte(base)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"top level", `"seed": 1,`, `"seed": 1,` + "\n" + `  "seed": 2,`,
			`c.json:6: sim: bad configuration: key "seed" appears twice in the top-level object (first on line 5); want each key once`},
		{"nested", `"decode": {"workers": 2,`, `"decode": {"workers": 2, "workers": 3,`,
			`c.json:7: sim: bad configuration: key "workers" appears twice in decode (first on line 7); want each key once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("the default configuration has no %s", tc.old)
			}
			_, err := ParseConfig("c.json", []byte(strings.Replace(base, tc.old, tc.new, 1)))
			if err == nil || !errors.Is(err, ErrConfig) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// Every fault kind the table lets a plan schedule gets a mark, and the
// generic rule of the table strikes it: at the first offer of its
// move (on the side it names), in place of the protocol move it stands
// for, or at its time on a worker.
func TestMarks_EveryPlannedKindStrikes(t *testing.T) {
	for k := range system.NumFaults {
		if !Planned(k) {
			continue
		}
		kind := &system.FaultKinds[k]
		f := Fault{File: "plan.jsonl", Line: 2, Kind: k.String(), Request: 0, Worker: -1, Side: "destination"}
		if AtTime(k) {
			f = Fault{File: "plan.jsonl", Line: 2, Kind: k.String(), Request: -1, Worker: 1}
			if !f.WorkerRestart() {
				t.Errorf("%s: a fault of worker 1 at its time is no worker's restart", k)
			}
			continue
		}
		var m Marks
		if err := m.Mark(&f); err != nil || m.Left() != 1 {
			t.Fatalf("%s: marked %d (%v), want 1", k, m.Left(), err)
		}
		switch {
		case kind.Offered && kind.Instead != 0:
			t.Errorf("%s: struck both where offered and in place of %v", k, kind.Instead)
		case kind.Offered:
			mv := system.Move{Kind: k.Move(), H: 0}
			if NamesSide(k) {
				mv.Arg = int8(model.SourceSide)
				if _, _, ok := m.Offered([]system.Move{mv}, nil); ok {
					t.Errorf("%s: a mark on the destination struck the source's move", k)
				}
				mv.Arg = int8(model.DestinationSide)
			}
			got, gk, ok := m.Offered([]system.Move{{Kind: system.MvTimer}, mv}, nil)
			if !ok || got != mv || gk != k {
				t.Errorf("%s: offered %v, struck %v %v (%v); want %v", k, mv, got, gk, ok, mv)
			}
		case kind.Instead != 0:
			p := system.Move{Kind: kind.Instead, H: 0, Arg: int8(model.SourceSide), Msg: model.Msg(1)}
			if !m.Replaces(p.Kind) {
				t.Errorf("%s: the mark does not wait for %v", k, p.Kind)
			}
			got, gk, ok := m.Instead(p)
			if !ok || got.Kind != k.Move() || gk != k {
				t.Errorf("%s: in place of %v struck %v %v (%v); want a %v", k, p, got, gk, ok, k.Move())
			}
		default:
			t.Errorf("%s: planned, yet struck by no rule", k)
		}
		if m.Left() != 0 {
			t.Errorf("%s: %d marks left after it struck", k, m.Left())
		}
	}
}

// Canonical block adoption follows the engine unless the configuration
// says otherwise: absent, vLLM adopts and the others do not; false turns
// it off; true changes nothing on an engine that does not adopt at
// activation. The configuration's JSON keeps what was written.
func TestConfig_AdoptCanonicalFollowsTheEngine(t *testing.T) {
	for _, c := range []struct {
		field, engine string
		want          bool
	}{
		{"", "vllm", true}, {`"adopt_canonical_blocks": false,`, "vllm", false}, {`"adopt_canonical_blocks": true,`, "vllm", true},
		{"", "sglang", false}, {`"adopt_canonical_blocks": true,`, "sglang", false}, {"", "trtllm", false}, {`"adopt_canonical_blocks": true,`, "trtllm", false},
	} {
		data := strings.Replace(string(DefaultConfigJSON()), "{", "{"+c.field, 1)
		data = strings.Replace(data, `"engine": "vllm"`, `"engine": "`+c.engine+`"`, 1)
		cfg, err := ParseConfig("c.json", []byte(data))
		if err != nil {
			t.Fatalf("%s %q: %v", c.engine, c.field, err)
		}
		if cfg.Engine.String() != c.engine || cfg.Adopts() != c.want {
			t.Errorf("%s %q: engine %s adopts %v, want %v", c.engine, c.field, cfg.Engine, cfg.Adopts(), c.want)
		}
		if out := string(cfg.JSON()); strings.Contains(out, "adopt_canonical_blocks") != (c.field != "") {
			t.Errorf("%s %q: the configuration's JSON %s", c.engine, c.field, out)
		}
	}
}
