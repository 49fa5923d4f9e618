package system

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Helpers the tests of the composed system share with the search's tests
// (checker), which keep their own copies.

func runNamed(t testing.TB, cfg *Config, name string) Run {
	t.Helper()
	for _, r := range cfg.Runs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no run %q", name)
	return Run{}
}

// smallConfig is one handoff between one prefill and one decode worker,
// with duplicates and cancellation: the first configuration.
const smallConfig = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"},
    {"name": "trtllm", "policy": "source-first", "engine": "trtllm"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024, "prefix_hit_tokens": [16]}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}
}`

func mustConfig(t testing.TB, js string) *Config {
	t.Helper()
	c, err := ParseConfig("test.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func interpreted(t *testing.T, s *spec.Spec) *Protocol {
	t.Helper()
	it, err := interp.New(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := FromStepper("broken table", s, it)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testdataConfig(t *testing.T, name string) *Config {
	t.Helper()
	return loadConfigFile(t, filepath.Join("..", "..", "testdata", "configs", name))
}

func loadConfigFile(t testing.TB, path string) *Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// everyRun calls f with the system for every run of each configuration.
func everyRun(t *testing.T, files []string, f func(file, run string, c *System)) {
	t.Helper()
	for _, file := range files {
		cfg := testdataConfig(t, file)
		for _, run := range cfg.Runs {
			f(file, run.Name, checkerFor(t, Generated(), cfg, run.Name))
		}
	}
}

// checkerFor builds the composed system of one named run of a configuration.
func checkerFor(t *testing.T, p *Protocol, cfg *Config, name string) *System {
	t.Helper()
	c, err := New(p, cfg, runNamed(t, cfg, name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eachState explores a run breadth-first and calls visit on every
// reachable state until it returns true (found).
func eachState(t *testing.T, c *System, visit func(*State) bool) bool {
	t.Helper()
	seen := map[Key]bool{}
	queue := []State{c.Initial()}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if visit(&s) {
			return true
		}
		var ms MoveSet
		c.Enabled(&s, &ms)
		for i := 0; i < ms.N; i++ {
			next := s
			if _, _, err := c.Step(&next, ms.M[i], nil); err != nil {
				t.Fatal(err)
			}
			if k := c.Key(&next); !seen[k] {
				seen[k] = true
				queue = append(queue, next)
			}
		}
	}
	return false
}

// findState returns the first reachable state, breadth-first, that
// satisfies want.
func findState(t *testing.T, c *System, want func(*State) bool) State {
	t.Helper()
	var found State
	if !eachState(t, c, func(s *State) bool {
		if want(s) {
			found = *s
			return true
		}
		return false
	}) {
		t.Fatal("no reachable state has what the test needs")
	}
	return found
}

// twoByTwo is two interchangeable handoffs and two interchangeable decode
// workers with loss, restarts and early expiry.
const twoByTwo = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 6, "slots": 2, "headroom_tokens": 1024},
    {"role": "decode", "capacity_blocks": 6, "slots": 2, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}, {"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"loss": 1, "restart": 1, "early_timer": 1}
}`
