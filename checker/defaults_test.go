package checker

import (
	"bytes"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// ConfigJSON gives each embedded configuration by the name a report
// gives it, a copy a caller may change, and nothing for another name.
func TestConfigJSON_GivesTheEmbeddedConfigurationsByName(t *testing.T) {
	runs := map[string]int{}
	for _, name := range []string{"default.json", "mutation.json"} {
		data := ConfigJSON(name)
		cfg, err := system.ParseConfig(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runs[name] = len(cfg.Runs)
		data[0] = 'x'
		if again := ConfigJSON(name); again[0] == 'x' {
			t.Errorf("%s: a change to the bytes given reached the embedded configuration", name)
		}
	}
	if bytes.Equal(ConfigJSON("default.json"), ConfigJSON("mutation.json")) {
		t.Error("default.json and mutation.json gave the same configuration")
	}
	if d := defaultParsed(); len(d.Runs) != runs["default.json"] {
		t.Errorf("default.json has %d runs, the default configuration %d", runs["default.json"], len(d.Runs))
	}
	for _, name := range []string{"", "default", "nonesuch.json"} {
		if data := ConfigJSON(name); data != nil {
			t.Errorf("ConfigJSON(%q) = %d bytes, want none", name, len(data))
		}
	}
}
