package checker

import (
	"bytes"
	_ "embed"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

//go:embed default.json
var defaultConfig []byte

//go:embed mutation.json
var mutationConfig []byte

// MutationConfigJSON is the configuration mutants are checked against by
// default: small enough to check hundreds of mutants in a minute, with
// every fault kind, so that a mutant survives only if it is equivalent or
// the invariants miss what it breaks.
func MutationConfigJSON() []byte { return bytes.Clone(mutationConfig) }

// DefaultConfigJSON is the embedded default configuration, as written.
func DefaultConfigJSON() []byte { return bytes.Clone(defaultConfig) }

// defaultParsed is the embedded default configuration that `make check` runs.
func defaultParsed() *system.Config {
	c, err := system.ParseConfig("default.json", defaultConfig)
	if err != nil {
		panic("checker: the embedded default configuration is broken: " + err.Error())
	}
	return c
}
