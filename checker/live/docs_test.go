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

// TestDocs_FieldTable: the body fields docs/live.md lists are the code's,
// with their tags.
func TestDocs_FieldTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/live.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| ([0-9, ]+) \\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\|")
	seen := map[byte]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		tags, fields := strings.Split(m[1], ", "), strings.Split(m[2], ", ")
		if len(tags) != len(fields) {
			t.Errorf("docs/live.md: %d tags for %d fields: %s", len(tags), len(fields), line)
			continue
		}
		for i, tag := range tags {
			n, _ := strconv.Atoi(strings.TrimSpace(tag))
			name := strings.Trim(fields[i], "`")
			if n <= 0 || n >= int(numTags) || fieldTags[n] != name {
				t.Errorf("docs/live.md: field %s has tag %d; the code's tag %d is %q", name, n, n, fieldTags[min(max(n, 0), int(numTags)-1)])
				continue
			}
			seen[byte(n)] = true
		}
	}
	for tag := byte(1); tag < numTags; tag++ {
		if !seen[tag] {
			t.Errorf("docs/live.md does not list field %s (tag %d)", fieldTags[tag], tag)
		}
	}
}
