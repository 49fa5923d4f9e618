package sim

import (
	"errors"
	"strings"
	"testing"
)

// A key given twice is refused at its second line, naming the first:
// encoding/json would keep the last value silently, and docs/cli.md says
// duplicate keys are refused.
func TestParseConfig_DuplicateKeyRefused(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"top level", "{\n\"schema\": \"handoffcheck.sim/v1\",\n\"seed\": 1,\n\"seed\": 2\n}",
			`c.json:4: sim: bad configuration: key "seed" appears twice in the top-level object (first on line 3); want each key once`},
		{"nested", "{\n\"schema\": \"handoffcheck.sim/v1\",\n\"decode\": {\"workers\": 2,\n\"workers\": 1}\n}",
			`c.json:4: sim: bad configuration: key "workers" appears twice in decode (first on line 3); want each key once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("c.json", []byte(tc.data))
			if err == nil || !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}
