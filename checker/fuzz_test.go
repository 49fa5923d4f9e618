package checker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// FuzzParseConfig: a configuration file never panics the reader, every
// refusal names the file and a line, and an accepted configuration
// prepares for every run.
func FuzzParseConfig(f *testing.F) {
	f.Add(ConfigJSON("default.json"))
	f.Add([]byte(smallConfig))
	f.Add([]byte(twoByTwo))
	f.Add([]byte(`{"schema": "handoffcheck.config/v1"}`))
	f.Add([]byte(`{"schema": "handoffcheck.config/v1", "runs": [{"name": "x", "policy": "sideways", "engine": "vllm"}]}`))
	f.Add([]byte(`[`))
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "configs", "*.json"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := system.ParseConfig("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json:") && !strings.Contains(err.Error(), "\nfuzz.json:") {
				t.Fatalf("error does not name the file and line: %v", err)
			}
			return
		}
		for _, r := range c.Runs {
			if _, err := New(system.Generated(), c, r); err != nil {
				t.Fatalf("accepted configuration does not prepare run %s: %v", r.Name, err)
			}
		}
	})
}

// FuzzParseMove: the move syntax of scenario and trace files never panics,
// and every move it accepts prints back to itself.
func FuzzParseMove(f *testing.F) {
	for _, s := range []string{"route-prefill h=0 worker=0", "deliver h=1 to=source msg=ReaderCompleted",
		"timer h=0 timer=lease", "abort h=0 side=destination", "deferred h=1 side=source", "restart worker=2", "bogus", "deliver h=0 to=x", "",
		"route-prefill h=9 worker=0", "route-prefill h=0 worker=70", "route-prefill h=x worker=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := system.ParseMove(s, nil)
		if err != nil {
			return
		}
		back, err := system.ParseMove(m.String(), nil)
		if err != nil || back != m {
			t.Fatalf("%q parsed to %v, which prints as %q and parses back to %v (%v)", s, m, m.String(), back, err)
		}
	})
}

// FuzzMergeWalks: shard reports never panic merge; a refusal is errMerge
// (naming the file where it is about one), and an accepted pair merges to
// a report that renders and reads back as one.
func FuzzMergeWalks(f *testing.F) {
	cfg, err := system.ParseConfig("small.json", []byte(smallConfig))
	if err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte
	for k := 0; k < 2; k++ {
		rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs[:1], Limits{Seed: 1, Walks: 6, Steps: 30, Shard: k, Shards: 2})
		if err != nil {
			f.Fatal(err)
		}
		data, err := rep.marshalWalks(TextOptions{NoTiming: true})
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	f.Add(seeds[0], seeds[1])
	f.Add(seeds[1], seeds[1])
	f.Add([]byte(`{"shard": {"index": 0, "count": 1, "walks_total": 3}, "runs": []}`), []byte(`{`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		m, err := mergeWalks([]shardReport{{File: "a.json", Data: a}, {File: "b.json", Data: b}})
		if err != nil {
			if !errors.Is(err, errMerge) {
				t.Fatalf("a refusal that is not ErrMerge: %v", err)
			}
			return
		}
		out, err := m.marshal()
		if err != nil {
			t.Fatal(err)
		}
		var back jsonWalkReport
		if err := json.Unmarshal(out, &back); err != nil || back.Shard == nil || !back.Shard.Merged {
			t.Fatalf("the merged report does not read back: %v\n%s", err, out)
		}
		_ = m.text()
	})
}
