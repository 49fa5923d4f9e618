package conform

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"strings"
)

// The records of finished attempts (finished), kept in memory that does
// not grow with the log. Attempt ids are never reused, so a fact about a
// finished attempt, however late, is judged against its record and
// named, with where the attempt ended, in the report: no record may be
// dropped. But late facts come soon (a cache's Removed comes within a
// few thousand attempts of the end in the simulator's logs) or never: the
// latest goneRecent records are kept in a map, and older ones are
// written to a file beside a fixed-size filter of their ids, which says
// "not there" for nearly every new attempt's id and sends the rare maybe
// to the file. A record read back from the file is kept in the map again
// (a late fact may be followed by another of the same attempt).
//
// The file's records are the id's length (2 bytes), the id, and the
// record's fields, little-endian; a record written twice (read back,
// changed, pushed out again) is found by its latest copy.

// goneRecent is how many records of finished attempts are kept in
// memory. A variable for the tests: with none, every late fact is judged
// against a record read back from the file.
var goneRecent = 1 << 14

// goneFilterBits is the size of the filter of the ids in the file: 2 MiB,
// which keeps false maybes near one new attempt in ten thousand up to
// about 400,000 records there (four bits of one 512-bit block), and past
// that only costs the time of reading the file for them.
const goneFilterBits = 1 << 24

const goneFieldBytes = 40

type goneStore struct {
	// recent is, by id, the place in ring of the records kept in memory;
	// ring holds them in the order they came in, next where the oldest
	// is: it goes to the file when a new one comes.
	recent map[string]int32
	ring   []goneSlot
	next   int
	// file holds size bytes of the records pushed out of recent (nil:
	// none yet); pend are those pushed out since, encoded in wbuf, written
	// when it fills. filter has the bits of the ids of both.
	file   goneFile
	size   int64
	pend   []goneSlot
	wbuf   []byte
	filter []uint64
	seed   maphash.Seed
	// noFile: the file could not be made or written; every record from
	// then on stays in memory (the judgement goes on, as before there was
	// a file).
	noFile bool
}

// goneFile is the file's part the store uses (a test's may fail).
type goneFile interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
}

type goneSlot struct {
	id string
	e  finished
}

func newGoneStore() *goneStore {
	return &goneStore{recent: map[string]int32{}, seed: maphash.MakeSeed()}
}

// get is the record of the finished attempt id, if there is one.
func (g *goneStore) get(id string) (finished, bool, error) {
	if i, ok := g.recent[id]; ok {
		return g.ring[i].e, true, nil
	}
	if g.filter == nil || !g.maybe(id) {
		return finished{}, false, nil
	}
	e, ok := finished{}, false
	for i := len(g.pend) - 1; i >= 0 && !ok; i-- {
		if g.pend[i].id == id {
			e, ok = g.pend[i].e, true
		}
	}
	if !ok {
		var err error
		if e, ok, err = g.find(id); err != nil || !ok {
			return finished{}, false, err
		}
	}
	g.put(strings.Clone(id), e)
	return e, true, nil
}

// put records (or updates) the finished attempt id. A new id must be the
// store's own (not cut from a longer string): the map keeps it.
func (g *goneStore) put(id string, e finished) {
	if i, ok := g.recent[id]; ok {
		g.ring[i].e = e
		return
	}
	g.add(id, e)
}

// add records the finished attempt id, which the store does not hold in
// memory: an attempt that was open when it finished (its id was not
// among the finished, or its fact would have been a late one).
func (g *goneStore) add(id string, e finished) {
	switch {
	case goneRecent == 0 && g.spill(id, e):
		return
	case len(g.ring) < goneRecent || g.noFile || goneRecent == 0:
		g.keep(id, e)
		return
	}
	old := &g.ring[g.next]
	if !g.spill(old.id, old.e) {
		g.keep(id, e)
		return
	}
	delete(g.recent, old.id)
	*old = goneSlot{id, e}
	g.recent[id] = int32(g.next)
	g.next = (g.next + 1) % len(g.ring)
}

// keep adds a record to those in memory.
func (g *goneStore) keep(id string, e finished) {
	g.ring = append(g.ring, goneSlot{id, e})
	g.recent[id] = int32(len(g.ring) - 1)
}

// spill adds a record to the file (to pend, written when wbuf fills) and
// its id to the filter; false when there is no file to take it, and the
// record stays where it was.
func (g *goneStore) spill(id string, e finished) bool {
	if g.noFile || len(id) > 1<<16-1 {
		return false
	}
	if g.file == nil {
		f, err := os.CreateTemp("", "handoffcheck-conform-*.finished")
		if err != nil {
			g.noFile = true
			return false
		}
		// Unlinked at once where the system allows: nothing is left
		// behind however the judgement ends (close removes it too).
		_ = os.Remove(f.Name())
		g.file = f
		g.filter = make([]uint64, goneFilterBits/64)
	}
	b := binary.LittleEndian.AppendUint16(g.wbuf, uint16(len(id)))
	b = append(b, id...)
	b = binary.LittleEndian.AppendUint16(b, uint16(e.p))
	b = binary.LittleEndian.AppendUint16(b, uint16(e.d))
	for _, v := range []int32{e.gen[0], e.gen[1], e.removed[0], e.removed[1], e.line} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	b = binary.LittleEndian.AppendUint16(b, e.file)
	b = binary.LittleEndian.AppendUint16(b, uint16(e.dec.proc))
	b = binary.LittleEndian.AppendUint32(b, e.dec.gen)
	b = binary.LittleEndian.AppendUint32(b, uint32(e.dec.prompt))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.dec.hit))
	g.wbuf = b
	g.pend = append(g.pend, goneSlot{id, e})
	blk, bits := g.hashes(id)
	for k := range uint64(4) {
		bit := bits >> (9 * k) & 511
		blk[bit/64] |= 1 << (bit % 64)
	}
	if len(g.wbuf) >= goneWriteBytes {
		return g.flush()
	}
	return true
}

// goneWriteBytes is how much of the records pushed out is written at
// once. A variable for the tests.
var goneWriteBytes = 1 << 16

// flush writes pend to the file. When that fails, the records of pend
// come back to memory, and the file takes no more (noFile): what it
// holds is still read.
func (g *goneStore) flush() bool {
	if _, err := g.file.WriteAt(g.wbuf, g.size); err != nil {
		g.noFile = true
		for _, r := range g.pend {
			if _, ok := g.recent[r.id]; !ok {
				g.keep(r.id, r.e)
			}
		}
		g.pend, g.wbuf = nil, nil
		return false
	}
	g.size += int64(len(g.wbuf))
	clear(g.pend)
	g.pend, g.wbuf = g.pend[:0], g.wbuf[:0]
	return true
}

// maybe reports whether the filter may hold id.
func (g *goneStore) maybe(id string) bool {
	blk, bits := g.hashes(id)
	for k := range uint64(4) {
		bit := bits >> (9 * k) & 511
		if blk[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

// hashes is the filter's block of an id (goneBlockWords words, one
// cache line) and its four bits there, nine bits of bits each: an id
// added or looked for reads one line of the filter, not four.
func (g *goneStore) hashes(id string) (blk *[goneBlockWords]uint64, bits uint64) {
	h := maphash.String(g.seed, id)
	b := h >> 36 % (goneFilterBits / 64 / goneBlockWords)
	return (*[goneBlockWords]uint64)(g.filter[b*goneBlockWords:]), h
}

const goneBlockWords = 8

// find reads the file for id's latest record written there.
func (g *goneStore) find(id string) (finished, bool, error) {
	fail := func(err error) (finished, bool, error) {
		return finished{}, false, fmt.Errorf("conform: reading the records of finished attempts: %w", err)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(g.file, 0, g.size), 1<<16)
	var e finished
	found := false
	var hdr [2]byte
	rec := make([]byte, 0, 64)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return e, found, nil
			}
			return fail(err)
		}
		n := int(binary.LittleEndian.Uint16(hdr[:]))
		if need := n + goneFieldBytes; cap(rec) < need {
			rec = make([]byte, need)
		} else {
			rec = rec[:need]
		}
		if _, err := io.ReadFull(r, rec); err != nil {
			return fail(err)
		}
		if string(rec[:n]) != id {
			continue
		}
		b := rec[n:]
		e = finished{p: int16(binary.LittleEndian.Uint16(b)), d: int16(binary.LittleEndian.Uint16(b[2:]))}
		b = b[4:]
		for i, v := range []*int32{&e.gen[0], &e.gen[1], &e.removed[0], &e.removed[1], &e.line} {
			*v = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		e.file = binary.LittleEndian.Uint16(b[20:])
		e.dec = finishedDecoder{proc: int16(binary.LittleEndian.Uint16(b[22:])), gen: binary.LittleEndian.Uint32(b[24:]),
			prompt: int32(binary.LittleEndian.Uint32(b[28:])), hit: int32(binary.LittleEndian.Uint32(b[32:]))}
		found = true
	}
}

// close gives the file back.
func (g *goneStore) close() {
	if g.file != nil {
		g.file.Close()
		if f, ok := g.file.(*os.File); ok {
			os.Remove(f.Name())
		}
		g.file = nil
	}
}
