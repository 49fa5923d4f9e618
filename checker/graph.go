package checker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// graph is the explored state graph, kept for liveness: a flag per state
// (drained) in memory, and the edges in an edgeLog.
//
// The edges are the largest thing a search with liveness keeps, several
// per state, and the search never reads them: only EventuallyDrained
// does, after the search, and then twice in order (see eventuallyDrained).
// So they go to a file as the frontier and the trace links do, and the
// search holds the fingerprints and little else. Kept in memory, the edge
// arrays grew by copying (old and new both live) under the collector's
// headroom, and at the end lived beside the visited set and the reverse
// graph built from them.
type graph struct {
	edges   edgeLog
	drained []bool
	// fair is what fairness reads besides (fair.go), nil without it.
	fair *fairState
}

// bytes is the graph's size, wherever it is: 8 bytes an edge (its source
// and target ids) and a flag per state.
func (g *graph) bytes() int64 {
	b := int64(g.edges.n)*edgeBytes + int64(len(g.drained))
	if g.fair != nil {
		b += g.fair.bytes()
	}
	return b
}

// edgeLog is the graph's edges in the order they were recorded (by source
// state), 8 bytes each. Records are kept in memory in blocks and each full
// block is appended to a file; where no file can be written they stay in
// memory.
type edgeLog struct{ recordLog }

const edgeBytes = 8

func (l *edgeLog) append(from, to uint32) {
	l.buf = binary.LittleEndian.AppendUint32(l.buf, from)
	l.buf = binary.LittleEndian.AppendUint32(l.buf, to)
	l.n++
	if len(l.buf) >= spillLimit && l.err == nil && l.dir != nil {
		l.spill()
	}
}

// spill appends the block in memory to the file.
func (l *edgeLog) spill() { l.spillAs(edgeBytes, "edges-*", "the liveness graph") }

// truncate forgets the edges from n on.
func (l *edgeLog) truncate(n int) { l.truncateAs(n, edgeBytes) }

// readBuffer is the size of the blocks each reads the file in.
func (l *edgeLog) readBuffer() int64 {
	if l.base == 0 {
		return 0
	}
	return min(int64(l.base)*edgeBytes, int64(spillLimit))
}

// each calls f with every edge, in the order they were recorded.
func (l *edgeLog) each(f func(from, to uint32)) error {
	return l.eachIn(1, func(_ int, from, to uint32) { f(from, to) })
}

// eachIn calls f with every edge, the edges cut into parts runs of
// consecutive edges read at once, one goroutine each, each in the order
// they were recorded; f is told which part an edge is in. The parts share
// the read buffer each would use alone, so reading in parts takes no more
// memory.
func (l *edgeLog) eachIn(parts int, f func(part int, from, to uint32)) error {
	parts = max(min(parts, l.n/minPartEdges), 1)
	errs := make([]error, parts)
	bufEdges := max(l.readBuffer()/edgeBytes/int64(parts), 1)
	parallel(parts, parts, func(p int) {
		lo, hi := int64(p)*int64(l.n)/int64(parts), int64(p+1)*int64(l.n)/int64(parts)
		errs[p] = l.eachBetween(lo, hi, bufEdges, func(from, to uint32) { f(p, from, to) })
	})
	return errors.Join(errs...)
}

// minPartEdges is the fewest edges a part of eachIn reads: below, a
// goroutine costs more than it spares.
const minPartEdges = 1 << 16

// eachBetween calls f with edges lo..hi-1 in order, reading the file in
// blocks of bufEdges edges.
func (l *edgeLog) eachBetween(lo, hi, bufEdges int64, f func(from, to uint32)) error {
	visit := func(b []byte) {
		for len(b) >= edgeBytes {
			f(binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]))
			b = b[edgeBytes:]
		}
	}
	base := int64(l.base)
	if lo < base {
		end := min(hi, base)
		buf := make([]byte, min(bufEdges, end-lo)*edgeBytes)
		for at := lo * edgeBytes; at < end*edgeBytes; {
			chunk := buf[:min(int64(len(buf)), end*edgeBytes-at)]
			if _, err := l.f.ReadAt(chunk, at); err != nil {
				return fmt.Errorf("reading the liveness graph back from %s: %w", l.f.Name(), err)
			}
			visit(chunk)
			at += int64(len(chunk))
		}
	}
	if hi > base {
		visit(l.buf[(max(lo, base)-base)*edgeBytes : (hi-base)*edgeBytes])
	}
	return nil
}
