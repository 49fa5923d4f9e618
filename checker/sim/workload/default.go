package workload

import (
	"bytes"
	_ "embed"
)

// DefaultName is the file name the embedded default workload's errors and
// reports give.
const DefaultName = "default.jsonl"

// defaultJSONL is DefaultGen's workload, named "default". A test checks
// that it is what DefaultGen generates today, so the two cannot drift;
// `go test ./checker/sim/workload -run TestDefault -rewrite` writes it
// again after DefaultGen changes.
//
//go:embed default.jsonl
var defaultJSONL []byte

// DefaultJSONL is the embedded default workload, as a file.
func DefaultJSONL() []byte { return bytes.Clone(defaultJSONL) }

// Default reads the embedded default workload: the load the simulator
// runs when it is given none (see DefaultGen).
func Default() *Reader {
	r, err := NewReader(bytes.NewReader(defaultJSONL), DefaultName)
	if err != nil {
		// The embedded file is checked by the tests; it cannot be refused.
		panic(err)
	}
	return r
}
