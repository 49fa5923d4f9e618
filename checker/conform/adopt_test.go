package conform

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// adoptLog is the log of three requests of one prefix group decoding
// together on one decode worker (1024-token prompts sharing a 512-token
// prefix, 32 blocks of 16 tokens): on vLLM (which adopts by default), r1 and r2
// adopt r0's 32 canonical blocks at activation.
func adoptLog(t *testing.T, engine model.Engine, policy string) []byte {
	t.Helper()
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy(policy); err != nil {
		t.Fatal(err)
	}
	cfg.Policy = policy
	cfg.Engine = engine
	cfg.Prefill.Workers, cfg.Decode.Workers, cfg.JitterUS = 1, 1, 0
	var reqs []cluster.Request
	for i, out := range []model.Tokens{300, 100, 100} {
		reqs = append(reqs, cluster.Request{Index: i, ArrivalUS: int64(i) * 100_000, PromptTokens: 1024, OutputTokens: out, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1})
	}
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Log: w})
	if err != nil || res.Violation != nil {
		t.Fatalf("the simulation: %v %v", err, res.Violation)
	}
	w.Flush()
	return buf.Bytes()
}

// The simulator's log of adopting requests is explained, and so is each
// of its shapes that the rules allow; a log that claims an adoption they
// do not allow is rejected at that line, saying what was expected: on an
// engine that does not adopt at activation, more blocks than the
// prompts' whole blocks, an owner that holds no active blocks there (none
// such, or released), an owner that is itself an adopter, and an adopter
// that shares another number of blocks than the owner's other adopters.
func TestAdoption_Judged(t *testing.T) {
	good := string(adoptLog(t, model.VLLM, "source-first"))
	for _, want := range []string{`"attempt":"r1","kind":"activated","adopted_blocks":32,"canonical":"r0"`, `"attempt":"r2","kind":"activated","adopted_blocks":32,"canonical":"r0"`} {
		if !strings.Contains(good, want) {
			t.Fatalf("the simulator's log lacks %s:\n%s", want, good)
		}
	}
	if rep := judgeBytes(t, "adopt.jsonl", []byte(good), Options{}); rep.Verdict != Explained {
		t.Fatalf("the simulator's adopting log: %s\n%s", rep.Verdict, render(t, rep))
	}
	noAdopt := string(adoptLog(t, model.SGLang, "destination-first"))
	r2 := regexp.MustCompile(`("attempt":"r2","kind":"activated")`)
	if !r2.MatchString(noAdopt) {
		t.Fatalf("the sglang log has no activation of r2:\n%s", noAdopt)
	}
	for _, c := range []struct {
		name, log, old, new, want string
	}{
		{"engine that does not adopt", noAdopt, `"attempt":"r2","kind":"activated"`, `"attempt":"r2","kind":"activated","adopted_blocks":32,"canonical":"r0"`,
			"sglang does not adopt at activation (its duplicates: frees at radix insert); want no adopted_blocks"},
		{"more than the prompt", good, `"attempt":"r2","kind":"activated","adopted_blocks":32`, `"attempt":"r2","kind":"activated","adopted_blocks":65`,
			"adopted_blocks 65, but the attempt's prompt of 1024 tokens has 64 whole blocks of 16 tokens"},
		{"no such owner", good, `"adopted_blocks":32,"canonical":"r0"`, `"adopted_blocks":32,"canonical":"r9"`,
			"canonical r9 holds no active blocks on decode-0"},
		{"owner that adopted", good, `"attempt":"r2","kind":"activated","adopted_blocks":32,"canonical":"r0"`, `"attempt":"r2","kind":"activated","adopted_blocks":32,"canonical":"r1"`,
			"canonical r1 adopted the canonical blocks of r0 itself and owns none: want canonical r0"},
		{"another share", good, `"attempt":"r2","kind":"activated","adopted_blocks":32`, `"attempt":"r2","kind":"activated","adopted_blocks":20`,
			"adopted_blocks 20, but r1 shares the canonical blocks of r0 for 32 blocks: want adopted_blocks 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(c.log, c.old, c.new, 1)
			if bad == c.log {
				t.Fatalf("the log has no %s", c.old)
			}
			line := 1 + strings.Count(bad[:strings.Index(bad, c.new)], "\n")
			rep := judgeBytes(t, "bad.jsonl", []byte(bad), Options{})
			r := rep.Rejection
			if rep.Verdict != Rejected || r == nil || r.Line != line || !strings.Contains(r.Detail, c.want) {
				t.Fatalf("%s, want a rejection at bad.jsonl:%d saying %q\n%s", rep.Verdict, line, c.want, render(t, rep))
			}
		})
	}
}

// groupOfFour is a judge of one vLLM decode worker where r0 activated
// owning canonical blocks and r1, r2 and r3 adopted 32 of them, each
// process recording the kinds given; act judges one more activation.
func groupOfFour(t *testing.T, records obslog.KindSet) (*judge, func(id, owner string, n int64) string) {
	t.Helper()
	h := &obslog.Header{Engine: model.VLLM, Processes: []obslog.Process{{Name: "router", Role: obslog.RoleRouter, Records: records},
		{Name: "prefill-0", Role: obslog.RolePrefill, Records: records}, {Name: "decode-0", Role: obslog.RoleDecode, Records: records}}}
	j, err := newJudge(h, "x.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	act := func(id, owner string, n int64) string {
		return j.shareFact(&attempt{id: id, p: 1, d: 2, prompt: 1024}, &obslog.Fact{Proc: 2, Attempt: id, Kind: obslog.Activated, AdoptedBlocks: n, Canonical: owner})
	}
	for _, s := range []struct{ id, owner string }{{"r0", ""}, {"r1", "r0"}, {"r2", "r0"}, {"r3", "r0"}} {
		n := int64(32)
		if s.owner == "" {
			n = 0
		}
		if why := act(s.id, s.owner, n); why != "" {
			t.Fatalf("%s adopting %s: %s", s.id, s.owner, why)
		}
	}
	return j, act
}

// When the owner of canonical blocks leaves, its oldest adopter holds
// them in its place (that share ends, the pool counts them once still)
// and the other adopters share them with it; when an adopter leaves, its
// share ends; a restart of the worker ends every share there.
func TestAdoption_OwnerLeaves(t *testing.T) {
	j, act := groupOfFour(t, obslog.All)
	att := func(id string) *attempt { return &attempt{id: id, p: 1, d: 2, prompt: 1024} }
	if got := j.ledgers[2].shared; got != 96 {
		t.Fatalf("three adopters share %d blocks, want 96", got)
	}
	j.shareFact(att("r0"), &obslog.Fact{Proc: 2, Attempt: "r0", Kind: obslog.DecodeReleased})
	if got := j.ledgers[2].shared; got != 64 {
		t.Errorf("after the owner left, %d blocks shared, want 64 (r1 holds them, r2 and r3 share them)", got)
	}
	for _, x := range j.sharing.shares {
		if x.owner != "r1" {
			t.Errorf("%s shares with %s, want r1, the oldest adopter", x.adopter, x.owner)
		}
	}
	if why := act("r4", "r0", 32); !strings.Contains(why, "canonical r0 holds no active blocks on decode-0") {
		t.Errorf("adopting from the owner that left: %q", why)
	}
	if why := act("r5", "r1", 32); why != "" {
		t.Errorf("adopting from the heir: %s", why)
	}
	j.shareFact(att("r2"), &obslog.Fact{Proc: 2, Attempt: "r2", Kind: obslog.DecodeReleased})
	if got := j.ledgers[2].shared; got != 64 {
		t.Errorf("after r2 left, %d blocks shared, want 64 (r3 and r5 share r1's)", got)
	}
	j.shareFact(nil, &obslog.Fact{Proc: 2, Kind: obslog.WorkerRestarted, Gen: 1})
	if got := j.ledgers[2].shared; got != 0 || len(j.sharing.shares) != 0 || len(j.sharing.decoding) != 0 {
		t.Errorf("after the restart, %d blocks shared, %d shares, %d decoding; want none", got, len(j.sharing.shares), len(j.sharing.decoding))
	}
}

// A log of milestones records no decode_released: an adoption naming
// an adopter of r0 as canonical tells the judge that r0, and the older
// adopters that held the blocks in its place in turn, released them
// unlogged. A complete log says when each released, and rejects it.
func TestAdoption_ReleaseImpliedInALogOfMilestones(t *testing.T) {
	for _, c := range []struct {
		records obslog.KindSet
		want    string
	}{
		{obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted), ""},
		{obslog.All, "canonical r2 adopted the canonical blocks of r0 itself and owns none"},
	} {
		j, act := groupOfFour(t, c.records)
		why := act("r4", "r2", 32)
		if c.want != "" {
			if !strings.Contains(why, c.want) {
				t.Errorf("a complete log: adopting from r2 gave %q, want %q", why, c.want)
			}
			continue
		}
		if why != "" {
			t.Fatalf("a log of milestones: adopting from r2: %s", why)
		}
		// r0 and r1 released: r2 holds the blocks, r3 and r4 share them.
		if _, ok := j.sharing.decoding["r0"]; ok {
			t.Error("r0 still decodes")
		}
		if _, ok := j.sharing.decoding["r1"]; ok {
			t.Error("r1 still decodes")
		}
		if got := j.ledgers[2].shared; got != 64 || len(j.sharing.shares) != 2 {
			t.Errorf("%d blocks shared in %d shares, want 64 in 2", got, len(j.sharing.shares))
		}
		for _, x := range j.sharing.shares {
			if x.owner != "r2" {
				t.Errorf("%s shares with %s, want r2", x.adopter, x.owner)
			}
		}
	}
}

// A log of milestones records no decode_released: an adoption of r0's
// blocks that shares another number of them than r0's adopters tells
// the judge that they released unlogged (a new adopter joins an owner's
// adopters only with as many blocks, and r0 still holds them). A
// complete log says when each released, and rejects it.
func TestAdoption_ShareOfAnotherCountInALogOfMilestones(t *testing.T) {
	for _, c := range []struct {
		records obslog.KindSet
		want    string
	}{
		{obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted), ""},
		{obslog.All, "adopted_blocks 20, but r1 shares the canonical blocks of r0 for 32 blocks: want adopted_blocks 32"},
	} {
		j, act := groupOfFour(t, c.records)
		why := act("r4", "r0", 20)
		if c.want != "" {
			if !strings.Contains(why, c.want) {
				t.Errorf("a complete log: adopting 20 blocks of r0 gave %q, want %q", why, c.want)
			}
			continue
		}
		if why != "" {
			t.Fatalf("a log of milestones: adopting 20 blocks of r0: %s", why)
		}
		// r1, r2 and r3 released: r4 alone shares r0's blocks, for 20.
		for _, id := range []string{"r1", "r2", "r3"} {
			if _, ok := j.sharing.decoding[id]; ok {
				t.Errorf("%s still decodes", id)
			}
		}
		if got := j.ledgers[2].shared; got != 20 || len(j.sharing.shares) != 1 || j.sharing.shares[0].adopter != "r4" || j.sharing.shares[0].owner != "r0" {
			t.Errorf("%d blocks shared in %+v, want 20 in r4's share of r0's", got, j.sharing.shares)
		}
	}
}

// The simulator's source-first log of milestones of a loaded cluster is
// explained as the complete log of the same run is, with the same
// counts: in it, r770 adopts 8 blocks of r123 after r242, which shared
// 6 of them, released unlogged (decode_finished at line 2,469).
func TestAdoption_LogOfMilestonesOfALoadedRun(t *testing.T) {
	logOf := func(records obslog.KindSet) []byte {
		cfg := sim.Loaded16()
		if err := cfg.SetPolicy("source-first"); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w, err := obslog.NewWriter(&buf, cfg.LogHeader(records))
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(context.Background(), cfg, sim.Synthetic(1, 1000, sim.SyntheticGapUS), sim.Options{Log: w})
		if err != nil || res.Violation != nil {
			t.Fatalf("the simulation: %v %v", err, res.Violation)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	complete := logOf(obslog.All)
	ms := logOf(obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted))
	for _, want := range []string{`"attempt":"r242","kind":"activated","adopted_blocks":6,"canonical":"r123"`, `"attempt":"r770","kind":"activated","adopted_blocks":8,"canonical":"r123"`} {
		if !bytes.Contains(ms, []byte(want)) {
			t.Fatalf("the log of milestones lacks %s", want)
		}
	}
	c := judgeBytes(t, "complete.jsonl", complete, Options{})
	m := judgeBytes(t, "milestones.jsonl", ms, Options{})
	for _, r := range []*Report{c, m} {
		if r.Verdict != Explained {
			t.Fatalf("%s: %s\n%s", r.Files[0], r.Verdict, render(t, r))
		}
	}
	if c.Attempts != 1000 || m.Attempts != c.Attempts || m.Restarts != c.Restarts {
		t.Errorf("complete: %d attempts, %d restarts; milestones: %d attempts, %d restarts; want 1000 attempts in both, and as many restarts",
			c.Attempts, c.Restarts, m.Attempts, m.Restarts)
	}
	if lines := bytes.Count(ms, []byte("\n")) - 1; m.Facts != lines {
		t.Errorf("milestones: %d facts judged, want its %d lines", m.Facts, lines)
	}
}

func render(t *testing.T, rep *Report) string {
	t.Helper()
	var b bytes.Buffer
	rep.WriteText(&b)
	return b.String()
}
