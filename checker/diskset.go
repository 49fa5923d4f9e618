package checker

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
)

// When the fingerprint table would take the process past --max-memory, the
// visited set moves to disk instead of stopping the search, as disk-based
// model checkers do (Stern and Dill's Murphi, TLC's disk fingerprint set):
//
//   - a sorted file holds every fingerprint seen up to the last merge;
//   - the in-memory table becomes a window of the fingerprints first
//     reached since then, bounded in size;
//   - a successor not in the window is inserted into it and queued, with
//     its key, parent and move, on the unchecked queue (a file when large);
//   - when the window is full, and at the end of every level, its
//     fingerprints are sorted and merged with the file in one sequential
//     pass, which also tells which of them the file already held; the
//     unchecked queue is then read in order and the states whose
//     fingerprint was not on file become the level's new states.
//
// New states are thus found in the same (parent, move) order as in memory,
// with the same ids, counts and traces; what it costs is the merges, each
// a sequential read and write of the file.

// testWindow, when above zero, is the window's size: tests make windows
// fill many times a level with it.
var testWindow = 0

// diskSet is the sorted file of fingerprints.
type diskSet struct {
	dir    *spillDir
	path   string
	n      int64 // fingerprints in the file
	merges int
	// window bounds how many fingerprints the in-memory table takes
	// before a merge.
	window int
}

// toDisk moves the in-memory fingerprints to a sorted file and makes the
// table a window of shardSlots slots per shard (a window of at least
// 65,536 fingerprints): the visited set becomes a diskStore.
func (e *exploration) toDisk(shardSlots int) error {
	fs := e.vis.(*fpSet)
	shardSlots = max(shardSlots, 2048)
	d := &diskSet{dir: &e.spill, window: shardSlots * numShards * 7 / 10 * maxLoadNum / maxLoadDen}
	if testWindow > 0 {
		d.window = testWindow
	}
	sorted := fs.sortShards()
	if err := d.merge(sorted, nil); err != nil {
		return err
	}
	// Every fingerprint is on file: the tables go back to the system and
	// the window's shards take their place.
	for i := range fs.shards {
		t := &fs.shards[i]
		t.free()
		t.init(shardSlots)
	}
	e.vis = &diskStore{inMemory: fs, onFile: d, unchecked: newKeyQueue(e.words+2, &e.spill), words: e.words}
	return nil
}

// sortShards compacts each shard's fingerprints to the front of its table
// and sorts them there; the shards, in order, are then one sorted
// sequence (a shard is the fingerprint's top bits). The tables are unusable
// as hash tables until cleared.
func (s *fpSet) sortShards() [][]uint64 {
	out := make([][]uint64, numShards)
	for i := range s.shards {
		t := &s.shards[i]
		k := 0
		for _, fp := range t.fps {
			if fp != 0 {
				t.fps[k] = fp
				k++
			}
		}
		slices.Sort(t.fps[:k])
		out[i] = t.fps[:k]
	}
	return out
}

// clearShards empties every shard, keeping its capacity.
func (s *fpSet) clearShards() {
	for i := range s.shards {
		clear(s.shards[i].fps)
		s.shards[i].n = 0
	}
}

// windowSize is how many fingerprints the window holds.
func (s *diskStore) windowSize() int {
	n := 0
	for i := range s.inMemory.shards {
		n += s.inMemory.shards[i].n
	}
	return n
}

// mergeBuffer is the size of a merge's read buffer and of its write
// buffer.
const mergeBuffer = 1 << 20

// merge writes the union of the file and the sorted shards to a new file
// and marks, in old (one per fingerprint of the shards, when not nil),
// those the file already held.
func (d *diskSet) merge(shards [][]uint64, old [][]bool) error {
	f, err := d.dir.create("fingerprints-*")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, mergeBuffer)
	var rd *bufio.Reader
	var in *os.File
	if d.path != "" {
		if in, err = os.Open(d.path); err != nil {
			f.Close()
			return err
		}
		defer in.Close()
		rd = bufio.NewReaderSize(in, mergeBuffer)
	}
	var buf [8]byte
	next := func() (uint64, bool, error) {
		if rd == nil {
			return 0, false, nil
		}
		if _, err := io.ReadFull(rd, buf[:]); err == io.EOF {
			return 0, false, nil
		} else if err != nil {
			return 0, false, err
		}
		return binary.LittleEndian.Uint64(buf[:]), true, nil
	}
	put := func(fp uint64) error {
		binary.LittleEndian.PutUint64(buf[:], fp)
		_, err := w.Write(buf[:])
		return err
	}
	var n int64
	cur, ok, err := next()
	for si, sh := range shards {
		for i, fp := range sh {
			for ok && cur < fp && err == nil {
				if err = put(cur); err == nil {
					n++
					cur, ok, err = next()
				}
			}
			if err != nil {
				break
			}
			if ok && cur == fp {
				if old != nil {
					old[si][i] = true
				}
				continue // written once, as the file's
			}
			if err = put(fp); err != nil {
				break
			}
			n++
		}
	}
	for ok && err == nil {
		if err = put(cur); err == nil {
			n++
			cur, ok, err = next()
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("merging the fingerprints on disk: %w", err)
	}
	d.dir.written += n * 8
	if d.path != "" {
		os.Remove(d.path)
	}
	d.path, d.n = f.Name(), n
	d.merges++
	return nil
}

// flush merges the window into the file and turns the unchecked queue's
// states whose fingerprint was not on file into new states, in order:
// their ids, trace links and places on the next frontier.
func (s *diskStore) flush(links *linkLog, next *keyQueue) error {
	q := s.unchecked
	if q.n == 0 {
		s.inMemory.clearShards()
		return nil
	}
	shards := s.inMemory.sortShards()
	old := make([][]bool, numShards)
	for i := range old {
		old[i] = make([]bool, len(shards[i]))
	}
	if err := s.onFile.merge(shards, old); err != nil {
		return err
	}
	rd := q.reader()
	rec := make([]uint64, 256*q.words)
	for {
		n := rd.read(rec, 256)
		if rd.err != nil {
			return rd.err
		}
		if n == 0 {
			break
		}
		for i := 0; i < n; i++ {
			r := rec[i*q.words : (i+1)*q.words]
			fp := r[0]
			sh := shards[shardOf(fp)]
			j := sort.Search(len(sh), func(k int) bool { return sh[k] >= fp })
			if old[shardOf(fp)][j] {
				continue
			}
			links.append(uint32(r[1]), uint8(r[1]>>32))
			next.push(r[2:])
		}
	}
	q.close()
	s.unchecked = newKeyQueue(q.words, s.onFile.dir)
	s.inMemory.clearShards()
	return nil
}
