package obslog

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListTheVocabulary: docs/conform.md has one row per kind, with
// who logs it and its figures as the table says.
func TestDocsListTheVocabulary(t *testing.T) {
	data, err := os.ReadFile("../../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for k := Kind(1); k < NumKinds; k++ {
		ki := &Kinds[k]
		var fs []string
		for _, g := range ki.Figures {
			fs = append(fs, "`"+g.String()+"`")
		}
		row := "| `" + ki.Name + "` | " + ki.Who.String() + " | " + strings.Join(fs, ", ") + " |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/conform.md lacks the row %q", row)
		}
	}
}
