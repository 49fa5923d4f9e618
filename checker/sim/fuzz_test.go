package sim

import (
	"errors"
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// FuzzParseSimConfig: a simulation configuration is refused with a
// file:line error wrapping ErrConfig, never a panic, whatever the bytes.
func FuzzParseSimConfig(f *testing.F) {
	f.Add(cluster.DefaultConfigJSON())
	f.Add([]byte(`{"schema":"handoffcheck.sim/v1"}`))
	f.Add([]byte(`{"schema":"handoffcheck.sim/v1","policy":"disabled","engine":"sglang","decode":{"workers":-1}}`))
	f.Add([]byte(`{"schema":"handoffcheck.sim/v1","timers":{"lease_ms":-5},"commands":["bogus"]}`))
	f.Add([]byte(`[1,2`))
	f.Add([]byte(`{"schema":"handoffcheck.sim/v1","decode":{"workers":2,"workers":3}}`))
	if grouped, err := os.ReadFile("../../testdata/sim/grouped.json"); err == nil {
		f.Add(grouped)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := cluster.ParseConfig("fuzz.json", data)
		if err != nil {
			if !errors.Is(err, cluster.ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		if c.NumWorkers() < 2 || c.Prefill.TokensPerSec <= 0 || c.Decode.PerTokenUS <= 0 {
			t.Fatalf("accepted a configuration that cannot run: %+v", c)
		}
		// The live workers start from the JSON form: it reads back.
		if _, err := cluster.ParseConfig("back.json", c.JSON()); err != nil {
			t.Fatalf("an accepted configuration's JSON form is refused: %v", err)
		}
	})
}
