package live

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocs_FrameTable: the frame kinds docs/live.md lists are the code's,
// with their codes and required fields.
func TestDocs_FrameTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/live.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\| ([0-9]+) \\| [^|]+ \\| ([^|]*) \\|$")
	seen := map[Kind]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(m[2])
		k := Kind(code)
		if k == 0 || k >= numKinds || frameKinds[k].name != m[1] {
			t.Errorf("docs/live.md: kind %s has code %d; the code names it %s", m[1], code, k)
			continue
		}
		var need []string
		for _, f := range strings.Split(m[3], ",") {
			if f = strings.Trim(strings.TrimSpace(f), "`"); f != "" && f != "(none)" {
				need = append(need, f)
			}
		}
		if strings.Join(need, ",") != strings.Join(frameKinds[k].need, ",") {
			t.Errorf("docs/live.md: %s requires %v; the code %v", k, need, frameKinds[k].need)
		}
		seen[k] = true
	}
	for k := Kind(1); k < numKinds; k++ {
		if !seen[k] {
			t.Errorf("docs/live.md does not list frame kind %s", k)
		}
	}
}
