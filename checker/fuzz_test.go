package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseConfig: a configuration file never panics the reader, every
// refusal names the file and a line, and an accepted configuration
// prepares for every run.
func FuzzParseConfig(f *testing.F) {
	f.Add(DefaultConfigJSON())
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
		c, err := ParseConfig("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json:") && !strings.Contains(err.Error(), "\nfuzz.json:") {
				t.Fatalf("error does not name the file and line: %v", err)
			}
			return
		}
		for _, r := range c.Runs {
			if _, err := New(Generated(), c, r); err != nil {
				t.Fatalf("accepted configuration does not prepare run %s: %v", r.Name, err)
			}
		}
	})
}

// FuzzParseMove: the move syntax of scenario and trace files never panics,
// and every move it accepts prints back to itself.
func FuzzParseMove(f *testing.F) {
	for _, s := range []string{"route-prefill h=0 worker=0", "deliver h=1 to=source msg=ReaderCompleted",
		"timer h=0 timer=lease", "abort h=0 side=destination", "deferred h=1 side=source", "restart worker=2", "bogus", "deliver h=0 to=x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMove(s)
		if err != nil {
			return
		}
		back, err := ParseMove(m.String())
		if err != nil || back != m {
			t.Fatalf("%q parsed to %v, which prints as %q and parses back to %v (%v)", s, m, m.String(), back, err)
		}
	})
}
