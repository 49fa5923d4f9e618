package cluster

import (
	"errors"
	"strings"
	"testing"
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
