package cluster

import (
	"math"
	"testing"
)

// Durations are rounded to the nearest microsecond, not truncated: a
// prefill of 2/3 of a second's tokens takes 666,667 µs, not 666,666.
func TestDurations_RoundToTheMicrosecond(t *testing.T) {
	c := DefaultConfig()
	wc := c.AttemptWorld(2048, 0)
	if err := wc.Prepare(); err != nil {
		t.Fatal(err)
	}
	tokens := float64(wc.SourceQuote(0).TransferredTokens)
	c.Prefill.TokensPerSec = tokens * 1.5 // 2/3 of a second
	if got, want := c.ComputeUS(wc), int64(666_667); got != want {
		t.Errorf("compute of %v tokens at %v tokens/s: %d µs, want %d", tokens, c.Prefill.TokensPerSec, got, want)
	}
	// A bandwidth whose transfer time ends past a half microsecond, so
	// that truncating and rounding differ.
	for gbps := 1.0; gbps < 400; gbps += 0.37 {
		c.BandwidthGbps = gbps
		us := wc.DestQuote(0, 1, false).TransferMillis(gbps) * 1000
		if _, frac := math.Modf(us); frac > 0.6 {
			if got, want := c.TransferUS(wc, false), int64(math.Ceil(us)); got != want {
				t.Errorf("transfer of %.3f µs at %v Gb/s: %d µs, want %d", us, gbps, got, want)
			}
			return
		}
	}
	t.Fatal("no bandwidth gave a transfer time past a half microsecond")
}
