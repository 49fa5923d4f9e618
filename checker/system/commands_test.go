package system

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Without the delay fault and with the command path off, every command is
// applied in the step that sends it: no apply move ever exists, and the
// built-in tables' intermediate states are passed through within a step.
// With the command path on for a kind, a queued command of that kind is
// applied only by its core's own move.
func TestCommands_AtOnceOrQueued(t *testing.T) {
	cfg := loadConfigFile(t, "../../testdata/configs/small.json")
	for _, run := range []string{"vllm", "sglang"} {
		c := checkerFor(t, Generated(), cfg, run)
		eachState(t, c, func(s *State) bool {
			for _, m := range c.MovesInto(s, nil) {
				if m.Kind == mvApply || m.Kind == delay.Move() {
					t.Fatalf("%s: %s offered with every command at once:\n%s", run, m, strings.Join(c.DescribeState(s), "\n"))
				}
			}
			for h := range s.W.H[:len(cfg.World.Handoffs)] {
				for _, st := range []string{"Stopping", "Releasing", "Aborting", "Withdrawing"} {
					for _, r := range spec.Roles {
						if i := c.proto.stateIndex(r, st); i >= 0 && s.Role(r, h) == uint8(i) {
							t.Fatalf("%s: handoff %d rests in %s %s with every command at once", run, h, r, st)
						}
					}
				}
			}
			return false
		})
	}
	cfg.Commands = Commands(1 << model.CmdRelease)
	seen := map[string]bool{}
	for _, run := range []string{"vllm", "sglang"} {
		c := checkerFor(t, Generated(), cfg, run)
		eachState(t, c, func(s *State) bool {
			for _, m := range c.MovesInto(s, nil) {
				if m.Kind != mvApply {
					continue
				}
				q := s.W.H[m.H].Cmds[m.Arg]
				if q.Q[0] != model.CmdRelease {
					t.Fatalf("%s: %s applies %s, but only release is queued", run, m, q)
				}
				seen[run+" "+model.Side(m.Arg).String()] = true
			}
			return false
		})
	}
	for _, want := range []string{"vllm source", "vllm destination", "sglang source", "sglang destination"} {
		if !seen[want] {
			t.Errorf("no queued release applied at the %s core; saw %v", want, seen)
		}
	}
}

// A spec file that does not declare a command's answers (written before
// they existed) keeps the command's old meaning even with the command
// path on: it acts in its row, and no core ever holds it.
func TestCommands_OldFilesActInTheirRow(t *testing.T) {
	data, err := os.ReadFile("../../testdata/specs/handoff-before-deferred.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse("handoff-before-deferred.json", data)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadConfigFile(t, "../../testdata/configs/commands.json")
	c := checkerFor(t, interpreted(t, s), cfg, "sglang")
	if got := c.cmds; got != [2][model.NumCmds]cmdMode{} {
		t.Fatalf("modes %v, want every command direct", got)
	}
	n := 0
	eachState(t, c, func(st *State) bool {
		n++
		for _, m := range c.MovesInto(st, nil) {
			if m.Kind == mvApply || m.Kind == delay.Move() {
				t.Fatalf("%s offered for a file without answers", m)
			}
		}
		return n > 20000
	})
}

// The configuration's "commands" takes true, false or a list of kinds,
// and refuses anything else at its line.
func TestParseCommands(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want Commands
		err  string
	}{
		{`true`, allCommands, ""},
		{`false`, 0, ""},
		{`[]`, 0, ""},
		{`["activate"]`, 1 << model.CmdActivate, ""},
		{`["release", "cancel"]`, 1<<model.CmdRelease | 1<<model.CmdCancel, ""},
		{`["activate", "activate"]`, 0, `commands lists "activate" twice`},
		{`["teleport"]`, 0, `"teleport" is not a command kind`},
		{`"all"`, 0, `commands is true, false or a list of "activate", "release", "cancel", not "all"`},
		{`3`, 0, "not 3"},
	} {
		got, err := ParseCommands(json.RawMessage(tc.raw))
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.raw, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.raw, err, tc.err)
		}
	}
	for k := model.CmdNone + 1; k < model.NumCmds; k++ {
		if !allCommands.Has(k) {
			t.Errorf("allCommands lacks %s", k)
		}
	}
	_, err := ParseConfig("c.json", []byte(`{"schema": "handoffcheck.config/v1",
  "runs": [{"name": "vllm", "policy": "source-first", "engine": "vllm"}],
  "workers": [{"role": "prefill", "capacity_blocks": 8}, {"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024}],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "commands": ["later"]}`))
	if err == nil || !strings.Contains(err.Error(), `c.json:6: `) || !strings.Contains(err.Error(), `"later" is not a command kind`) {
		t.Errorf("bad commands: %v", err)
	}
}

// The delay reduction asks firedBy which row an enabled move would fire,
// so firedBy must say exactly what the step does: on every state of a
// bounded search with every fault kind, each enabled move's first firing
// is the (role, handoff, event) firedBy names, and a move it says fires
// nothing fires no row that acts (a restart fires Restarted rows, which
// cannot act).
func TestDelay_FiredByMatchesTheStep(t *testing.T) {
	t.Parallel()
	cfg := loadConfigFile(t, "../mutation.json")
	cfg.Budget[hang], cfg.Budget[Evict] = 1, 1
	// A variant with deferred steps, so that a deferred move fires a row.
	data, err := os.ReadFile("../../testdata/variants/deferred-free-during-pull.json")
	if err != nil {
		t.Fatal(err)
	}
	deferred, err := spec.Parse("deferred-free-during-pull.json", data)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[MoveKind]int{}
	for _, tc := range []struct {
		run string
		p   *Protocol
	}{{"vllm", Generated()}, {"sglang", Generated()}, {"trtllm", Generated()}, {"vllm", interpreted(t, deferred)}} {
		run := tc.run
		c := checkerFor(t, tc.p, cfg, run)
		n := 0
		eachState(t, c, func(s *State) bool {
			n++
			var ms MoveSet
			c.Enabled(s, &ms)
			for i := 0; i < ms.N; i++ {
				m := ms.M[i]
				next := *s
				var log []Firing
				cov := newCoverage(c.proto.spec)
				cov.Log = &log
				tx := model.Tx{W: &next.W}
				c.ApplyTx(&next, &tx, m, cov, ms.Stuck)
				r, h, ev, ok := c.firedBy(s, m)
				switch {
				case ok && !c.can(s, r, h, ev):
					// The record has no row for it (a cancel reaching a
					// finished side): nothing fires.
					if len(log) != 0 {
						t.Fatalf("%s: %s: no row for %s, yet the step fired %+v", run, m, EventName(r, ev), log)
					}
				case ok && (len(log) == 0 || log[0].Role != r || log[0].Handoff != h || log[0].Event != ev):
					t.Fatalf("%s: %s: firedBy says %s h%d %s, the step fired %+v", run, m, r, h, EventName(r, ev), log)
				case !ok:
					for _, f := range log {
						if len(f.Actions) > 0 {
							t.Fatalf("%s: %s: firedBy says it fires nothing, the step fired %+v", run, m, f)
						}
					}
				}
				if ok {
					kinds[m.Kind]++
				}
			}
			return n > 30000
		})
	}
	for _, k := range []MoveKind{mvDeliverRequest, MvRouteDecode, mvReserve, mvRefuse, MvCompute, MvTransfer, transferFailure.Move(),
		MvDeliver, duplicate.Move(), MvTimer, mvDecodeFinish, mvDeliverCancel, mvPeerRestarted, mvDeferred, abort.Move(), mvApply} {
		if kinds[k] == 0 {
			t.Errorf("no %s move compared", k)
		}
	}
}

// A command's answers are found by name wherever a table lists them: a
// file that lists an answer first (index 0) keeps the command path, as
// the built-in order does.
func TestCommands_AnswerListedFirst(t *testing.T) {
	cfg := loadConfigFile(t, "../../testdata/configs/commands.json")
	want := checkerFor(t, Generated(), cfg, "sglang").cmds
	for _, answer := range []string{"ActivationApplied", "ReleaseNoOp", "CancelApplied"} {
		s := spec.Default().Clone()
		moved := 0
		for _, r := range spec.Roles {
			tb := s.Table(r)
			i := tb.EventIndex(answer)
			if i < 0 {
				continue
			}
			ev := tb.Events[i]
			tb.Events = append([]spec.Event{ev}, append(tb.Events[:i:i], tb.Events[i+1:]...)...)
			moved++
		}
		if moved == 0 {
			t.Fatalf("no table lists %s", answer)
		}
		if got := checkerFor(t, interpreted(t, s), cfg, "sglang").cmds; got != want {
			t.Errorf("%s listed first: modes %v, want %v", answer, got, want)
		}
	}
}
