package faultplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

//go:generate go run ./schemagen ../../../docs/faults.schema.json

// object is a JSON object whose keys keep their order.
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Schema is the JSON Schema (draft 2020-12) of a plan's lines,
// docs/faults.schema.json: the header, and a fault with one rule per kind
// from the table rules, so that a kind added to the fault table is in the
// schema after go generate.
func Schema() []byte {
	var unplanned []string
	for k := range system.NumFaults {
		if kind := &system.FaultKinds[k]; kind.Unplanned != "" {
			unplanned = append(unplanned, kind.Config)
		}
	}
	kinds := strings.Join(unplanned[:len(unplanned)-1], ", ") + " and " + unplanned[len(unplanned)-1]
	side := func(what string) object {
		return object{{"enum", []string{"source", "destination"}}, {"description", what}}
	}
	name := func(what string) object {
		return object{{"type", "string"}, {"minLength", 1}, {"maxLength", MaxMsgBytes}, {"description", what}}
	}
	number := func(what string) object {
		return object{{"type", "integer"}, {"minimum", 0}, {"maximum", MaxIndex}, {"description", what}}
	}
	var rulesOut []any
	for i := range rules {
		rulesOut = append(rulesOut, schemaRule(&rules[i]))
	}
	s := object{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"title", "handoffcheck fault plan, format " + FormatV1},
		{"description", fmt.Sprintf("A fault plan is a JSON Lines file (package checker/sim/faultplan): the first line is a header (#/$defs/header), every other line one fault (#/$defs/fault), in time order. Each line validates against this schema. What a schema cannot say, the parser also refuses: blank lines, lines over %d bytes, plans over %d MiB, a key given twice, at_ms smaller than the previous fault's, integers written with a fraction or an exponent, msg over %d bytes of UTF-8. The kinds %s of the checker cannot be scheduled: they happen in a simulation by themselves. The simulator checks request and worker numbers against its workload and configuration, and msg against its fact names.",
			MaxLineBytes, MaxPlanBytes>>20, MaxMsgBytes, kinds)},
		{"anyOf", []any{object{{"$ref", "#/$defs/header"}}, object{{"$ref", "#/$defs/fault"}}}},
		{"$defs", object{
			{"header", object{
				{"type", "object"},
				{"properties", object{{"format", object{{"const", FormatV1}}}}},
				{"required", []string{"format"}},
				{"additionalProperties", false},
			}},
			{"fault", object{
				{"description", "One fault, acting on the first occasion at or after at_ms."},
				{"type", "object"},
				{"properties", object{
					{"at_ms", object{{"type", "number"}, {"minimum", 0}, {"maximum", workload.MaxMillis}, {"description", "The time of the fault, in milliseconds of the virtual clock."}}},
					{"kind", object{{"enum", Kinds()}}},
					{"request", number("The request the fault hits, by its number in the workload.")},
					{"worker", number("The worker that restarts.")},
					{"to", side("The side a lost or duplicated fact goes to; either side when left out.")},
					{"side", side("The side that aborts, falls behind, or has its blocks evicted.")},
					{"msg", name("Only a fact of this name is lost or duplicated; any fact when left out.")},
					{"after", name("With request and side: the observation log kind (docs/conform.md) after which the fault strikes, instead of at_ms: a restart restarts the worker of the request's side right after it logs it for the request; cancel, abort, delay and evict strike where the request next offers them after the side (or after_side) logs it.")},
					{"after_side", side("With after, for cancel, abort, delay and evict: the side whose logging of after sets the fault, when it is not side itself (the source aborts right after the destination logs reserved). Left out: side. The simulator and live refuse a fact the named side never logs.")},
				}},
				{"required", []string{"at_ms", "kind"}},
				{"additionalProperties", false},
				{"allOf", rulesOut},
			}},
		}},
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err) // strings, numbers and booleans always marshal
	}
	return append(out, '\n')
}

// schemaRule is a kind's if-then rule: what every form of it requires
// and forbids, and, for a kind of several forms, what each form adds.
func schemaRule(r *rule) object {
	var forms []*rule
	for f := r; f != nil; f = f.alt {
		forms = append(forms, f)
	}
	names := func(f *rule, n need) []string {
		var out []string
		for _, field := range f.fields() {
			if field.need == n {
				out = append(out, field.name)
			}
		}
		return out
	}
	inAll := func(name string, n need) bool {
		for _, f := range forms {
			if !slices.Contains(names(f, n), name) {
				return false
			}
		}
		return true
	}
	clause := func(f *rule, common bool) object {
		var req []string
		var forbid object
		for _, field := range f.fields() {
			if field.need != required && field.need != forbidden || inAll(field.name, field.need) != common {
				continue
			}
			if field.need == required {
				req = append(req, field.name)
			} else {
				forbid = append(forbid, member{field.name, false})
			}
		}
		var o object
		if len(req) > 0 {
			o = append(o, member{"required", req})
		}
		if len(forbid) > 0 {
			o = append(o, member{"properties", forbid})
		}
		return o
	}
	then := clause(forms[0], true)
	if len(forms) > 1 {
		var alts []any
		for _, f := range forms {
			alts = append(alts, clause(f, false))
		}
		then = append(then, member{"oneOf", alts})
	}
	return object{
		{"if", object{{"properties", object{{"kind", object{{"const", r.kind}}}}}}},
		{"then", then},
	}
}
