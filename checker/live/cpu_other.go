//go:build !unix

package live

import "time"

// processCPU: not measured here.
func processCPU() time.Duration { return 0 }
