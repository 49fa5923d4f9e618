package spec

import (
	"slices"
	"testing"
)

// MovePublish moves a publication one row early or late along the table:
// the source's Stored of its computed blocks to the row that dispatches
// the prefill (before any KV is computed) or to the reader's completion
// (the timing the accounting table replaced), the destination's to the
// receive completion that only asks for the activation.
func TestMutants_MovePublish(t *testing.T) {
	def := Default()
	ms := Mutants(def, []Operator{MovePublish})
	byName := map[string]Mutant{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	for _, c := range []struct {
		name     string
		role     Role
		from, to int // 1-based rows
		action   string
	}{
		{"source row 13 move-publish PublishCached to row 1", Source, 13, 1, "PublishCached"},
		{"source row 13 move-publish PublishCached to row 15", Source, 13, 15, "PublishCached"},
		{"source row 14 move-publish PublishCached to row 7", Source, 14, 7, "PublishCached"},
		{"destination row 8 move-publish PublishStored to row 7", Destination, 8, 7, "PublishStored"},
	} {
		m, ok := byName[c.name]
		if !ok {
			t.Errorf("no mutant %q", c.name)
			continue
		}
		got, was := m.Spec.Table(c.role), def.Table(c.role)
		if slices.Contains(got.Rows[c.from-1].Actions, c.action) || !slices.Contains(got.Rows[c.to-1].Actions, c.action) {
			t.Errorf("%s: row %d acts %v, row %d acts %v", c.name, c.from, got.Rows[c.from-1].Actions, c.to, got.Rows[c.to-1].Actions)
		}
		for i := range got.Rows {
			if i != c.from-1 && i != c.to-1 && !slices.Equal(got.Rows[i].Actions, was.Rows[i].Actions) {
				t.Errorf("%s: row %d changed too", c.name, i+1)
			}
		}
		if !slices.Contains(def.Table(c.role).Rows[c.from-1].Actions, c.action) {
			t.Errorf("%s: the default changed under the mutant", c.name)
		}
	}
	for _, m := range ms {
		row := m.Spec.Table(m.Role).Rows
		for i := range row {
			if row[i].Event == restartedEvent && len(row[i].Actions) > 0 {
				t.Errorf("%s: a restart row acts", m.Name)
			}
		}
	}
	// Neither a row that ignores its event nor a row of another policy
	// only takes the publication: row 13 is source-first, row 3
	// (Primed × RequestArrived) destination-first.
	if _, ok := byName["source row 13 move-publish PublishCached to row 3"]; ok {
		t.Error("a source-first row's publication moved into a destination-first row")
	}
}
