package model

import (
	"reflect"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// TestPrepareAgain holds a configuration prepared again after its sizes,
// its handoffs or its workers changed to what a fresh copy of it
// prepares: what Prepare derived before leaves no trace.
func TestPrepareAgain(t *testing.T) {
	type change struct {
		name string
		mod  func(*Config)
	}
	changes := []change{
		{"prompts", func(c *Config) {
			for h := range c.Handoffs {
				c.Handoffs[h].PromptTokens = 100 + Tokens(h)
			}
		}},
		{"hits", func(c *Config) {
			for h := range c.Workers[1].PrefixHit {
				c.Workers[1].PrefixHit[h] = 0
			}
		}},
		{"fewer handoffs", func(c *Config) {
			c.Handoffs = c.Handoffs[:1]
			c.Workers[1].PrefixHit = c.Workers[1].PrefixHit[:1]
		}},
		{"more handoffs", func(c *Config) {
			c.Handoffs = append(c.Handoffs, HandoffConfig{PromptTokens: 32})
		}},
		{"roles swapped", func(c *Config) {
			c.Workers[0], c.Workers[1] = c.Workers[1], c.Workers[0]
		}},
		{"another decode worker", func(c *Config) {
			c.Workers = append(c.Workers, WorkerConfig{Role: DecodeWorker, Capacity: 12, Slots: 2, PrefixHit: []Tokens{16}})
		}},
	}
	for _, ch := range changes {
		t.Run(ch.name, func(t *testing.T) {
			c := testConfig(t, spec.SourceFirst, VLLM, 3, 2)
			hits := append([]Tokens(nil), c.Workers[1].PrefixHit...)
			c.Workers[1].PrefixHit = hits
			ch.mod(c)
			if err := c.Prepare(); err != nil {
				t.Fatal(err)
			}
			fresh := *c
			fresh.d = derived{}
			if err := fresh.Prepare(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.d, fresh.d) {
				t.Errorf("prepared again:\n%+v\nprepared fresh:\n%+v", c.d, fresh.d)
			}
		})
	}
	// A configuration that fails is not prepared, whatever it was.
	c := testConfig(t, spec.SourceFirst, VLLM, 2, 2)
	c.Workers[0].Capacity = 1
	if err := c.Prepare(); err == nil || c.Prepared() {
		t.Errorf("a prefill worker too small for its handoffs: Prepare %v, Prepared %v", err, c.Prepared())
	}
}
