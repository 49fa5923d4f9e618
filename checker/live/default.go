package live

import (
	"bytes"
	_ "embed"
)

//go:embed default/workload.jsonl
var defaultWorkload []byte

//go:embed default/faults.jsonl
var defaultFaults []byte

// DefaultWorkload is the workload `live` runs without --workload: 1,000
// requests at 30 a second on the simulator's default cluster, 2% of them
// cancelled by their clients.
func DefaultWorkload() []byte { return bytes.Clone(defaultWorkload) }

// DefaultFaults is the fault plan `live` runs without --workload: a lost
// and a duplicated fact, a hung and a failed transfer, an abort, a
// client's cancel, a prefill worker killed right after it pins request
// 700, and decode worker 2 killed with SIGKILL half-way through.
func DefaultFaults() []byte { return bytes.Clone(defaultFaults) }
