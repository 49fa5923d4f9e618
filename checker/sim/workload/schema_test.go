package workload

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const schemaFile = "../../../docs/workload.schema.json"

// schemaDef is what the drift test reads of one definition.
type schemaDef struct {
	Properties           map[string]map[string]any `json:"properties"`
	Required             []string                  `json:"required"`
	AdditionalProperties *bool                     `json:"additionalProperties"`
}

func readSchema(t *testing.T) (map[string]schemaDef, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Schema string               `json:"$schema"`
		Defs   map[string]schemaDef `json:"$defs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("%s: $schema %q, want draft 2020-12", schemaFile, s.Schema)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return s.Defs, raw
}

// jsonFields lists the JSON names of a struct's fields, and those of
// them that are required: the ones whose tag has no omitempty or
// omitzero.
func jsonFields(v any) (names, required []string) {
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		tag := rt.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || name == "" {
			continue
		}
		names = append(names, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	slices.Sort(names)
	slices.Sort(required)
	return names, required
}

// TestSchema_MatchesParser: the schema's definitions name exactly the
// fields the reader accepts, require exactly the ones it requires, and
// refuse others.
func TestSchema_MatchesParser(t *testing.T) {
	defs, _ := readSchema(t)
	for _, tc := range []struct {
		def string
		v   any
	}{{"header", headerLine{}}, {"request", requestLine{}}, {"generator", GenConfig{}}} {
		d, ok := defs[tc.def]
		if !ok {
			t.Errorf("the schema has no $defs/%s", tc.def)
			continue
		}
		names, required := jsonFields(tc.v)
		var props []string
		for p := range d.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		req := slices.Sorted(slices.Values(d.Required))
		if !slices.Equal(props, names) {
			t.Errorf("$defs/%s properties %v, the code reads %v", tc.def, props, names)
		}
		if !slices.Equal(req, required) {
			t.Errorf("$defs/%s requires %v, the code requires %v", tc.def, req, required)
		}
		if d.AdditionalProperties == nil || *d.AdditionalProperties {
			t.Errorf("$defs/%s allows other properties; the reader refuses them", tc.def)
		}
	}
	num := func(def, prop, key string) string {
		v, _ := defs[def].Properties[prop][key].(json.Number)
		return v.String()
	}
	for _, c := range []struct{ def, prop, key, want string }{
		{"request", "prompt_tokens", "maximum", "1048576"},
		{"request", "output_tokens", "maximum", "1048576"},
		{"request", "prefix_tokens", "maximum", "1048576"},
		{"request", "arrival_ms", "maximum", "100000000000"},
		{"request", "cancel_ms", "maximum", "100000000000"},
		{"request", "id", "maxLength", "128"},
		{"request", "prefix_group", "maxLength", "128"},
		{"header", "name", "maxLength", "128"},
		{"generator", "prefix_groups", "maximum", "65536"},
	} {
		if got := num(c.def, c.prop, c.key); got != c.want {
			t.Errorf("$defs/%s %s %s is %s, the code's bound is %s", c.def, c.prop, c.key, got, c.want)
		}
	}
	if MaxTokens != 1048576 || MaxMillis != 100000000000 || MaxTextBytes != 128 || MaxPrefixGroups != 65536 {
		t.Errorf("a bound changed: update the schema and this test")
	}
	if got := defs["header"].Properties["format"]["const"]; got != FormatV1 {
		t.Errorf("$defs/header format const %v, want %q", got, FormatV1)
	}
}

// TestSchema_RequiredMeansRequired: a request without a field the schema
// requires is refused; one without an optional field is read.
func TestSchema_RequiredMeansRequired(t *testing.T) {
	defs, _ := readSchema(t)
	full := map[string]string{
		"arrival_ms": "1", "prompt_tokens": "20", "output_tokens": "3",
		"prefix_group": `"g"`, "prefix_tokens": "0", "cancel_ms": "2", "id": `"r"`,
	}
	for field := range defs["request"].Properties {
		if _, ok := full[field]; !ok {
			t.Fatalf("the test has no value for %s", field)
		}
		var parts []string
		for k, v := range full {
			if k != field {
				parts = append(parts, `"`+k+`":`+v)
			}
		}
		line := header + "{" + strings.Join(parts, ",") + "}\n"
		_, _, err := readAll("w.jsonl", []byte(line))
		if required := slices.Contains(defs["request"].Required, field); required != (err != nil) {
			t.Errorf("without %s (required by the schema: %v): %v", field, required, err)
		}
	}
}

// TestSchema_Distribution: the schema's pattern for a distribution admits
// what String writes.
func TestSchema_Distribution(t *testing.T) {
	_, raw := readSchema(t)
	pattern := raw["$defs"].(map[string]any)["distribution"].(map[string]any)["pattern"].(string)
	re := regexp.MustCompile(pattern)
	g := DefaultGen()
	for _, d := range []Dist{g.Prompt, g.Output, g.PrefixTokens, g.CancelAfter, {Kind: "fixed", Mean: 0.001}, {Kind: "lognormal", Mean: 3, Sigma: 1}} {
		if !re.MatchString(d.String()) {
			t.Errorf("%q does not match the schema's pattern %s", d, pattern)
		}
	}
	for _, s := range []string{"normal:3", "fixed", "lognormal:mode=3"} {
		if re.MatchString(s) {
			t.Errorf("%q matches the schema's pattern", s)
		}
	}
}
