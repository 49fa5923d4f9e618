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

// ConfigJSON is an embedded configuration, as written, by the file name
// a report gives it: default.json, the default configuration, or
// mutation.json, the one mutants are checked against by default (small
// enough to check hundreds of mutants in a minute, with every fault kind,
// so that a mutant survives only if it is equivalent or the invariants
// miss what it breaks); nil for any other name. A command names the
// configuration it defaults to once, by the name it reports it under.
func ConfigJSON(name string) []byte {
	switch name {
	case "default.json":
		return bytes.Clone(defaultConfig)
	case "mutation.json":
		return bytes.Clone(mutationConfig)
	}
	return nil
}

// defaultParsed is the embedded default configuration that `make check` runs.
func defaultParsed() *system.Config {
	c, err := system.ParseConfig("default.json", defaultConfig)
	if err != nil {
		panic("checker: the embedded default configuration is broken: " + err.Error())
	}
	return c
}
