package faultplan

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const schemaFile = "../../../docs/faults.schema.json"

type schemaDef struct {
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
	AllOf                []struct {
		If struct {
			Properties struct {
				Kind struct {
					Const string `json:"const"`
				} `json:"kind"`
			} `json:"properties"`
		} `json:"if"`
		Then struct {
			Required   []string        `json:"required"`
			Properties map[string]bool `json:"properties"`
			OneOf      []struct {
				Required   []string        `json:"required"`
				Properties map[string]bool `json:"properties"`
			} `json:"oneOf"`
		} `json:"then"`
	} `json:"allOf"`
}

func readSchema(t *testing.T) map[string]schemaDef {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Schema string               `json:"$schema"`
		Defs   map[string]schemaDef `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("%s: $schema %q, want draft 2020-12", schemaFile, s.Schema)
	}
	return s.Defs
}

// jsonFields lists the JSON names of a struct's fields, and those of
// them without omitempty (required).
func jsonFields(v any) (names, required []string) {
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	slices.Sort(names)
	slices.Sort(required)
	return names, required
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSchema_MatchesParser: the schema names the fields the parser reads,
// requires what it requires of every fault, lists the schedulable kinds,
// and for each kind requires and forbids what the table rules say.
func TestSchema_MatchesParser(t *testing.T) {
	defs := readSchema(t)
	for _, tc := range []struct {
		def string
		v   any
	}{{"header", headerLine{}}, {"fault", faultLine{}}} {
		d := defs[tc.def]
		names, required := jsonFields(tc.v)
		if got := keys(d.Properties); !slices.Equal(got, names) {
			t.Errorf("$defs/%s properties %v, the parser reads %v", tc.def, got, names)
		}
		if got := slices.Sorted(slices.Values(d.Required)); !slices.Equal(got, required) {
			t.Errorf("$defs/%s requires %v, the parser requires %v", tc.def, got, required)
		}
		if d.AdditionalProperties == nil || *d.AdditionalProperties {
			t.Errorf("$defs/%s allows other properties; the parser refuses them", tc.def)
		}
	}
	var kind struct {
		Enum []string `json:"enum"`
	}
	if err := json.Unmarshal(defs["fault"].Properties["kind"], &kind); err != nil || !slices.Equal(kind.Enum, Kinds()) {
		t.Errorf("$defs/fault kind enum %v (%v), want %v", kind.Enum, err, Kinds())
	}
	var format struct {
		Const string `json:"const"`
	}
	if err := json.Unmarshal(defs["header"].Properties["format"], &format); err != nil || format.Const != FormatV1 {
		t.Errorf("$defs/header format const %q, want %q", format.Const, FormatV1)
	}
	for _, side := range []string{"to", "side"} {
		var e struct {
			Enum []string `json:"enum"`
		}
		if err := json.Unmarshal(defs["fault"].Properties[side], &e); err != nil || !slices.Equal(e.Enum, []string{"source", "destination"}) {
			t.Errorf("$defs/fault %s enum %v", side, e.Enum)
		}
	}
	rulesByKind := map[string]bool{}
	for _, c := range defs["fault"].AllOf {
		k := c.If.Properties.Kind.Const
		r, ok := ruleOf(k)
		if !ok {
			t.Errorf("the schema has a rule for %q, which is not schedulable", k)
			continue
		}
		rulesByKind[k] = true
		// The then-clause holds what every form of the kind requires and
		// forbids; a kind of several forms lists each in oneOf, with what
		// it adds.
		var forms []*rule
		for f := r; f != nil; f = f.alt {
			forms = append(forms, f)
		}
		needs := func(f *rule, n need) []string {
			var out []string
			for _, field := range f.fields() {
				if field.need == n {
					out = append(out, field.name)
				}
			}
			return out
		}
		common := func(n need) []string {
			var out []string
			for _, name := range needs(forms[0], n) {
				all := true
				for _, f := range forms[1:] {
					all = all && slices.Contains(needs(f, n), name)
				}
				if all {
					out = append(out, name)
				}
			}
			return slices.Sorted(slices.Values(out))
		}
		forbids := func(props map[string]bool) []string {
			var out []string
			for name, allowed := range props {
				if !allowed {
					out = append(out, name)
				}
			}
			return slices.Sorted(slices.Values(out))
		}
		if got := slices.Sorted(slices.Values(c.Then.Required)); !slices.Equal(got, common(required)) {
			t.Errorf("schema: %s requires %v; the table: %v", k, got, common(required))
		}
		if got := forbids(c.Then.Properties); !slices.Equal(got, common(forbidden)) {
			t.Errorf("schema: %s forbids %v; the table: %v", k, got, common(forbidden))
		}
		if len(forms) == 1 {
			if len(c.Then.OneOf) > 0 {
				t.Errorf("schema: %s has forms; the table has one", k)
			}
			continue
		}
		if len(c.Then.OneOf) != len(forms) {
			t.Errorf("schema: %s has %d forms; the table %d", k, len(c.Then.OneOf), len(forms))
			continue
		}
		for i, f := range forms {
			o := c.Then.OneOf[i]
			want := slices.Sorted(slices.Values(needs(f, required)))
			if got := slices.Sorted(slices.Values(append(o.Required, c.Then.Required...))); !slices.Equal(got, want) {
				t.Errorf("schema: %s form %d requires %v; the table: %v", k, i, got, want)
			}
			wantF := slices.Sorted(slices.Values(needs(f, forbidden)))
			if got := slices.Sorted(slices.Values(append(forbids(o.Properties), common(forbidden)...))); !slices.Equal(got, wantF) {
				t.Errorf("schema: %s form %d forbids %v; the table: %v", k, i, got, wantF)
			}
		}
	}
	if len(rulesByKind) != len(rules) {
		t.Errorf("the schema has rules for %v, want one for each of %v", keys(rulesByKind), Kinds())
	}
}

// TestSchema_Fresh: docs/faults.schema.json is what Schema renders from
// the table rules today (go generate writes it), so that a fault kind
// added to the checker's table is in the schema without an edit of it.
func TestSchema_Fresh(t *testing.T) {
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := Schema(); !bytes.Equal(data, got) {
		t.Errorf("%s is stale: run go generate ./checker/sim/faultplan (make generate); it renders:\n%s", schemaFile, got)
	}
}
