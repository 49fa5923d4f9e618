package obslog

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/model"
)

var rewrite = flag.Bool("rewrite", false, "rewrite docs/log.schema.json from the vocabulary")

const schemaFile = "../../docs/log.schema.json"

// schema is the JSON Schema of a log line, made from the vocabulary, so
// that the two cannot drift: a kind, who may log it and the figures it
// carries are one entry of Kinds.
func schema() map[string]any {
	var kinds []any
	for _, n := range KindNames() {
		kinds = append(kinds, n)
	}
	records := map[string]any{"anyOf": []any{
		map[string]any{"enum": []any{"all", "milestones"}},
		map[string]any{"type": "array", "items": map[string]any{"enum": append([]any{"all", "milestones"}, kinds...)}},
	},
		"description": "The kinds the process logs: \"all\" (the default), \"milestones\" (routed, reserved, pinned, activated, decode_finished, source_released, worker_restarted), either as a string or as a one-item list, or a list of kinds. A fact of another kind happens without a line."}
	count := map[string]any{"type": "integer", "minimum": 0, "maximum": 1 << 40}
	var rules []any
	for k := Kind(1); k < NumKinds; k++ {
		ki := &Kinds[k]
		then := map[string]any{}
		props := map[string]any{}
		var req []any
		if k == WorkerRestarted {
			props["attempt"] = false
		} else {
			req = append(req, "attempt")
		}
		for _, g := range []Figure{FigBlocks, FigPages, FigSlot, FigHeadroom, FigTokens, FigOutcome, FigTimer} {
			if !slices.Contains(ki.Figures, g) {
				props[g.String()] = false
			}
		}
		if k == Routed {
			req = append(req, "stage", "to")
		} else {
			props["stage"], props["to"], props["prefix_hit_tokens"] = false, false, false
		}
		if k == OutcomeReported {
			req = append(req, "outcome")
		}
		if k == WorkerRestarted {
			props["prompt_tokens"] = false
		}
		if k == Activated {
			// An adoption gives both or neither.
			then["dependentRequired"] = map[string]any{"adopted_blocks": []any{"canonical"}, "canonical": []any{"adopted_blocks"}}
		} else {
			props["adopted_blocks"], props["canonical"] = false, false
		}
		then["properties"] = props
		if len(req) > 0 {
			then["required"] = req
		}
		rules = append(rules, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": ki.Name}}},
			"then": then,
		})
	}
	var engines []any
	for _, e := range model.EngineNames() {
		engines = append(engines, e)
	}
	return map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"title":   "handoffcheck observation log, format " + SchemaV1,
		"description": "An observation log is a JSON Lines file (package checker/obslog, docs/conform.md): the first line is a header (#/$defs/header), every other line one observed fact (#/$defs/fact), in the order its process saw them. " +
			"Each line validates against this schema. What a schema cannot say, the reader also refuses: blank lines, lines over 262144 bytes, a last line without its newline (the log was cut short), a key given twice, a proc or a routed fact's to that the header does not name, a fact of a kind its process's role does not log, a config whose policy or engine is not the header's. Generated from the vocabulary by a test: do not edit.",
		"anyOf": []any{map[string]any{"$ref": "#/$defs/header"}, map[string]any{"$ref": "#/$defs/fact"}},
		"$defs": map[string]any{
			"header": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"schema": map[string]any{"const": SchemaV1},
					"policy": map[string]any{"enum": []any{"source-first", "destination-first", LegacyPolicy},
						"description": "The handoff policy the log was written under; disabled: the legacy disaggregated path, which pins and reserves nothing, and to which the lifecycle's contract does not apply (conform refuses such a log)."},
					"engine": map[string]any{"enum": engines},
					"processes": map[string]any{"type": "array", "minItems": 2, "maxItems": MaxProcesses,
						"description": "Every process that logs, by name and role; at least one prefill and one decode worker.",
						"items": map[string]any{"type": "object", "properties": map[string]any{
							"name":    map[string]any{"type": "string", "minLength": 1},
							"role":    map[string]any{"enum": []any{"router", "prefill", "decode"}},
							"records": records,
						}, "required": []any{"name", "role"}, "additionalProperties": false}},
					"records": records,
					"config":  map[string]any{"type": "object", "description": "The cluster's configuration, a handoffcheck.sim/v1 object: block size, bytes per token, capacities, headroom, the command path. Its policy and engine, where it names them, are the header's. Without it the figures are judged against the embedded default configuration."},
				},
				"required":             []any{"schema", "policy", "engine", "processes"},
				"additionalProperties": false,
			},
			"fact": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"proc":              map[string]any{"type": "string", "description": "The process that logged the fact, as the header names it."},
					"gen":               map[string]any{"type": "integer", "minimum": 0, "maximum": 1 << 31, "description": "The process's generation: it starts at the first line's and grows only at worker_restarted."},
					"attempt":           map[string]any{"type": "string", "minLength": 1, "maxLength": 256, "description": "The handoff attempt id: a UUID or any stable string."},
					"kind":              map[string]any{"enum": kinds},
					"t_us":              map[string]any{"type": "integer", "minimum": 0, "description": "The process's own time stamp in microseconds; optional, and never used to order facts of different processes."},
					"stage":             map[string]any{"enum": []any{"prefill", "decode"}},
					"to":                map[string]any{"type": "string", "description": "The worker a router chose."},
					"blocks":            count,
					"pages":             count,
					"slot":              count,
					"headroom":          count,
					"tokens":            count,
					"outcome":           map[string]any{"enum": []any{"ok", "failed"}},
					"timer":             map[string]any{"enum": []any{"bootstrap", "push-deadline", "pull-deadline"}},
					"prompt_tokens":     map[string]any{"type": "integer", "minimum": 1, "maximum": 1 << 30, "description": "The attempt's prompt length; some fact of each attempt carries it (the prefill router's routed fact)."},
					"prefix_hit_tokens": map[string]any{"type": "integer", "minimum": 0, "maximum": 1 << 30, "description": "On a routed fact of stage decode: the prompt tokens the chosen decode worker caches."},
					"adopted_blocks":    map[string]any{"type": "integer", "minimum": 1, "maximum": 1 << 30, "description": "On an activated fact, with canonical: the blocks of the received prompt prefix the destination replaced by canonical blocks it already held and freed (an engine that adopts at activation: vLLM)."},
					"canonical":         map[string]any{"type": "string", "minLength": 1, "maxLength": 256, "description": "On an activated fact, with adopted_blocks: the attempt whose active blocks on the same decode worker are the canonical ones adopted. Not the fact's own attempt."},
				},
				"required":             []any{"proc", "gen", "kind"},
				"additionalProperties": false,
				"allOf":                rules,
			},
		},
	}
}

// TestSchemaFresh: docs/log.schema.json is what the vocabulary gives.
func TestSchemaFresh(t *testing.T) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(schema()); err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(schemaFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (go test ./checker/obslog -run TestSchemaFresh -rewrite writes it)", err)
	}
	if d := cmp.Diff(b.String(), string(got)); d != "" {
		t.Fatalf("%s is stale: go test ./checker/obslog -run TestSchemaFresh -rewrite (-want +got):\n%s", schemaFile, d)
	}
}
