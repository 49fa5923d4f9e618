package obslog

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkReader reads a log of 100,000 lines of the shapes a simulator
// writes (fact lines of every figure), and reports lines per second.
func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(fuzzHeader)
	const n = 100_000
	for i := 0; i < n; i += 4 {
		fmt.Fprintf(&buf, `{"proc":"router","gen":0,"attempt":"r%d","kind":"routed","stage":"prefill","to":"p0","tokens":3582,"prompt_tokens":3582,"t_us":%d}`+"\n", i, 1000+i)
		fmt.Fprintf(&buf, `{"proc":"p0","gen":0,"attempt":"r%d","kind":"pinned","blocks":74,"t_us":%d}`+"\n", i, 1001+i)
		fmt.Fprintf(&buf, `{"proc":"d0","gen":0,"attempt":"r%d","kind":"reserved","pages":74,"slot":0,"headroom":0,"t_us":%d}`+"\n", i, 1002+i)
		fmt.Fprintf(&buf, `{"proc":"d0","gen":0,"attempt":"r%d","kind":"outcome_reported","outcome":"ok","t_us":%d}`+"\n", i, 1003+i)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	lines := 0
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench.jsonl")
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}
