package checker

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// A checkpoint is the whole state of a breadth-first search between two
// batches: the visited set, the trace links, the frontier being expanded
// and how far, the part of the next frontier made so far, and every count.
// A search resumed from it expands the same states in the same order as
// one never stopped, so it reaches the same verdict, counts and traces.
// The liveness graph is not kept: a checkpointed search checks safety
// only (the stated restriction; see docs/cli.md). Once the fingerprints
// are on disk, a checkpoint first merges the window into the file, so
// that the file alone is the visited set, and keeps the file.
//
// A checkpoint directory holds one subdirectory per run, and in it the
// checkpoint in current/. A new one is written beside it and renamed into
// place, so that a process killed while writing leaves the last one whole.

// v2: the frontier files' records are length nibbles and bytes, not
// varints (spill.go).
const checkpointSchema = "handoffcheck.checkpoint/v2"

// errCheckpoint is a checkpoint that cannot be resumed.
var errCheckpoint = errors.New("checkpoint")

// checkpointMeta is checkpoint.json: everything but the large arrays.
type checkpointMeta struct {
	Schema   string `json:"schema"`
	Identity string `json:"identity"`
	Run      string `json:"run"`
	// Finished is set on the checkpoint of a search that completed.
	Finished    bool        `json:"finished"`
	Depth       int         `json:"depth"`
	LevelStart  uint32      `json:"level_start"`
	Done        int         `json:"done"`
	Frontier    int         `json:"frontier"`
	Next        int         `json:"next"`
	NextPrev    []uint64    `json:"next_prev"`
	States      int         `json:"states"`
	Transitions int64       `json:"transitions"`
	DeadEnds    int         `json:"dead_ends"`
	Reduced     int         `json:"reduced,omitempty"`
	Pruned      int64       `json:"pruned,omitempty"`
	Rows        [2][]uint64 `json:"rows"`
	// Fired is the invariants' triggers fired so far (model.Triggers);
	// absent in a checkpoint written before they were recorded.
	Fired     *uint64     `json:"fired"`
	ElapsedNS int64       `json:"elapsed_ns"`
	Bitstate  bool        `json:"bitstate"`
	Shards    []shardMeta `json:"shards"`
	// Disk is set once the fingerprints are on disk: store.bin is then
	// empty and fingerprints.bin is the visited set.
	Disk *diskMeta `json:"disk,omitempty"`
	// CRC holds each file's CRC-64 (ECMA).
	CRC map[string]uint64 `json:"crc"`
	// Sum is the SHA-256 of checkpoint.json's content with Sum empty (the
	// encoding metaSum gives). The CRCs cover the other files; a count
	// or position edited here would resume another search silently.
	Sum string `json:"sum"`
}

// metaSum is the hash Sum records: of m's encoding with Sum empty, so
// that it covers every value, whatever the file's layout.
func metaSum(m checkpointMeta) string {
	m.Sum = ""
	data, err := json.Marshal(m)
	if err != nil {
		// Every field is a number, string, bool, slice or map of them.
		panic(err)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

type shardMeta struct {
	Words  int     `json:"words"`
	N      int     `json:"n"`
	Set    int64   `json:"set,omitempty"`
	Missed float64 `json:"missed,omitempty"`
}

// diskMeta is the fingerprint file's part of a checkpoint.
type diskMeta struct {
	Fingerprints int64 `json:"fingerprints"`
	Merges       int   `json:"merges"`
	Window       int   `json:"window"`
	At           int   `json:"at"`
}

// identity names what a checkpoint is a search of: the run, the
// protocol's tables, the world, the budget, the state layout and whether
// the search is reduced. A checkpoint resumes only the same search.
func (c *Checker) identity(words int, bitstate int64, reduce bool) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	c.WriteIdentity(enc)
	// The tables are written as they lie in memory: the word size and
	// byte order of the machine are part of what a checkpoint is.
	one := uint16(1)
	fmt.Fprintf(h, "%d %d %d %d %t", words, bitstate, unsafe.Sizeof(uintptr(0)), *(*byte)(unsafe.Pointer(&one)), reduce)
	init := c.Initial()
	k := c.Key(&init)
	fmt.Fprintf(h, "%x", fingerprint(&k, words))
	return hex.EncodeToString(h.Sum(nil))
}

// checkpointDir is where a run's checkpoints go under a checkpoint
// directory.
func checkpointDir(dir string, run system.Run) string { return filepath.Join(dir, run.Name) }

// readMeta reads a run's checkpoint.json; ok is false when the run has
// none (it never started before the process stopped).
func readMeta(runDir string) (checkpointMeta, string, bool, error) {
	var m checkpointMeta
	cur := filepath.Join(runDir, "current")
	if _, err := os.Stat(cur); err != nil {
		// Killed between the two renames: the previous one is whole.
		if _, err2 := os.Stat(filepath.Join(runDir, "previous")); err2 == nil {
			cur = filepath.Join(runDir, "previous")
		} else {
			return m, "", false, nil
		}
	}
	path := filepath.Join(cur, "checkpoint.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return m, "", false, fmt.Errorf("%w: %v", errCheckpoint, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, "", false, fmt.Errorf("%w: %s: %v", errCheckpoint, path, err)
	}
	if m.Schema != checkpointSchema {
		return m, "", false, fmt.Errorf("%w: %s: schema %q, want %q", errCheckpoint, path, m.Schema, checkpointSchema)
	}
	if m.Sum == "" || m.Sum != metaSum(m) {
		return m, "", false, fmt.Errorf("%w: %s was edited or damaged (its content hash differs from the one it records); want the file as check wrote it, or start afresh without --resume", errCheckpoint, path)
	}
	return m, cur, true, nil
}

// canResume reports whether a run can resume from a checkpoint directory
// with these limits: nil when the run has a checkpoint of the same search,
// or none at all (it then starts from the beginning).
func (c *Checker) canResume(dir string, lim Limits) error {
	if err := checkpointLimits(lim); err != nil {
		return err
	}
	m, cur, ok, err := readMeta(checkpointDir(dir, c.Run()))
	if err != nil || !ok {
		return err
	}
	words := 1 + c.World().NumWorkers() + model.HandoffWords*c.World().NumHandoffs()
	if m.Identity != c.identity(words, lim.Bitstate, lim.Reduce) {
		return fmt.Errorf("%w: %s is a checkpoint of another search (the configuration, tables, run, --bitstate or --por differ)", errCheckpoint, cur)
	}
	// Every file is read once here, so that a damaged checkpoint is
	// refused before any run starts rather than stopping its run.
	files := []string{"store.bin", "links.bin", "frontier.bin", "next.bin"}
	if m.Disk != nil {
		files = append(files, "fingerprints.bin")
	}
	for _, name := range files {
		f, err := os.Open(filepath.Join(cur, name))
		if err != nil {
			return fmt.Errorf("%w: %v", errCheckpoint, err)
		}
		crc := crc64.New(crc64.MakeTable(crc64.ECMA))
		_, err = io.Copy(crc, bufio.NewReaderSize(f, 1<<20))
		f.Close()
		if want, ok := m.CRC[name]; err != nil || !ok || crc.Sum64() != want {
			return fmt.Errorf("%w: %s is damaged (its checksum differs from checkpoint.json's)", errCheckpoint, filepath.Join(cur, name))
		}
	}
	return nil
}

// checkpointLimits refuses what a checkpoint does not keep.
func checkpointLimits(lim Limits) error {
	if len(lim.From) > 0 {
		return fmt.Errorf("%w: a search started after a trace's steps is not checkpointed", errCheckpoint)
	}
	if lim.Liveness || lim.Exact {
		return fmt.Errorf("%w: checkpoints keep fingerprints or bits and no liveness graph: give --liveness=false, without --exact", errCheckpoint)
	}
	return nil
}

// checkpointer writes a run's checkpoints.
type checkpointer struct {
	dir     string // the run's directory
	every   time.Duration
	last    time.Time
	written int
	err     error
}

func (p *checkpointer) due() bool { return p.every > 0 && time.Since(p.last) >= p.every }

// save writes a checkpoint of the search after done states of the
// frontier were expanded and committed into next.
func (e *exploration) save(frontier, next *keyQueue, depth int, levelStart uint32, done int, finished bool) {
	p := e.ckpt
	p.last = time.Now()
	if p.err != nil {
		return
	}
	// On disk, the window's fingerprints go to the file first, with the
	// states they made new onto next, so that the file alone is the
	// visited set: the window is not kept. A merge more than an
	// uninterrupted run makes, and nothing else changes.
	if err := e.vis.settle(&e.links, next, true); err != nil {
		p.err = fmt.Errorf("writing a checkpoint to %s: %w", p.dir, err)
		return
	}
	if err := e.writeCheckpoint(frontier, next, depth, levelStart, done, finished); err != nil {
		p.err = fmt.Errorf("writing a checkpoint to %s: %w", p.dir, err)
		return
	}
	p.written++
}

func (e *exploration) writeCheckpoint(frontier, next *keyQueue, depth int, levelStart uint32, done int, finished bool) error {
	p := e.ckpt
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(p.dir, ".writing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fired := uint64(e.cov.Fired)
	m := checkpointMeta{Schema: checkpointSchema, Identity: e.identity, Run: e.c.Run().Name, Finished: finished,
		Depth: depth, LevelStart: levelStart, Done: done, Frontier: frontier.n, Next: next.n, NextPrev: append([]uint64(nil), next.prev[:e.words]...),
		States: e.links.n, Transitions: e.stats.Transitions, DeadEnds: e.deadEnds, Rows: e.cov.Rows, Fired: &fired,
		Reduced: e.stats.Reduced, Pruned: e.stats.Pruned,
		ElapsedNS: int64(e.elapsed()), Bitstate: isBitstate(e.vis), CRC: map[string]uint64{}}
	write := func(name string, fill func(w io.Writer) error) error {
		f, err := os.Create(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		crc := crc64.New(crc64.MakeTable(crc64.ECMA))
		bw := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
		err = fill(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		m.CRC[name] = crc.Sum64()
		return err
	}
	shards, words := storeWords(e.vis)
	m.Shards = shards
	err = write("store.bin", func(w io.Writer) error {
		for _, ws := range words {
			if _, err := w.Write(wordBytes(ws)); err != nil {
				return err
			}
		}
		return nil
	})
	if d, ok := e.vis.(*diskStore); err == nil && ok {
		m.Disk = &diskMeta{Fingerprints: d.onFile.n, Merges: d.onFile.merges, Window: d.onFile.window, At: e.stats.DiskAt}
		err = write("fingerprints.bin", func(w io.Writer) error { return copyFile(w, d.onFile.path) })
	}
	if err == nil {
		err = write("links.bin", e.links.writeTo)
	}
	if err == nil {
		err = write("frontier.bin", frontier.writeTo)
	}
	if err == nil {
		err = write("next.bin", next.writeTo)
	}
	if err != nil {
		return err
	}
	m.Sum = metaSum(m)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "checkpoint.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	cur, prev := filepath.Join(p.dir, "current"), filepath.Join(p.dir, "previous")
	_ = os.RemoveAll(prev)
	if _, err := os.Stat(cur); err == nil {
		if err := os.Rename(cur, prev); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, cur); err != nil {
		return err
	}
	return os.RemoveAll(prev)
}

// isBitstate says v keeps bits, not fingerprints.
func isBitstate(v visited) bool {
	_, ok := v.(*bitstateSet)
	return ok
}

// storeWords is what a checkpoint keeps of a visited set, shard by shard:
// its figures and its words. A window on disk is empty (merged before a
// checkpoint): its size only.
func storeWords(v visited) ([]shardMeta, [][]uint64) {
	metas, words := make([]shardMeta, numShards), make([][]uint64, numShards)
	switch s := v.(type) {
	case *bitstateSet:
		for i := range s.bitShards {
			b := &s.bitShards[i]
			metas[i], words[i] = shardMeta{Words: len(b.words), Set: b.set, Missed: b.missed}, b.words
		}
	case *fpSet:
		for i := range s.shards {
			metas[i], words[i] = shardMeta{Words: len(s.shards[i].fps), N: s.shards[i].n}, s.shards[i].fps
		}
	case *diskStore:
		for i := range s.inMemory.shards {
			metas[i] = shardMeta{Words: len(s.inMemory.shards[i].fps), N: s.inMemory.shards[i].n}
		}
	}
	return metas, words
}

// copyFile writes the file at path to w.
func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// wordBytes views words as bytes (the machine's byte order: a checkpoint
// resumes on the kind of machine that wrote it, which identity checks by
// word size and byte order).
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)
}

// resumed is what restoring a checkpoint gives the search loop.
type resumed struct {
	frontier, next *keyQueue
	depth          int
	levelStart     uint32
	done           int
	finished       bool
	elapsed        time.Duration
}

// restore loads a run's checkpoint into a fresh exploration.
func (e *exploration) restore(runDir string) (*resumed, bool, error) {
	m, cur, ok, err := readMeta(runDir)
	if err != nil || !ok {
		return nil, false, err
	}
	if m.Identity != e.identity {
		return nil, false, fmt.Errorf("%w: %s is a checkpoint of another search", errCheckpoint, cur)
	}
	open := func(name string) (io.Reader, func() error, error) {
		f, err := os.Open(filepath.Join(cur, name))
		if err != nil {
			return nil, nil, err
		}
		crc := crc64.New(crc64.MakeTable(crc64.ECMA))
		r := io.TeeReader(bufio.NewReaderSize(f, 1<<20), crc)
		check := func() error {
			// Whatever the reader left is read too: the sum covers the file.
			_, _ = io.Copy(io.Discard, r)
			f.Close()
			if crc.Sum64() != m.CRC[name] {
				return fmt.Errorf("%w: %s is damaged (its checksum differs)", errCheckpoint, filepath.Join(cur, name))
			}
			return nil
		}
		return r, check, nil
	}
	r, check, err := open("store.bin")
	if err != nil {
		return nil, false, err
	}
	if len(m.Shards) != numShards || m.Bitstate != isBitstate(e.vis) {
		return nil, false, fmt.Errorf("%w: %s: %d shards, bitstate %v", errCheckpoint, cur, len(m.Shards), m.Bitstate)
	}
	if err := restoreWords(e.vis, m.Shards, m.Disk != nil, r); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", errCheckpoint, filepath.Join(cur, "store.bin"), err)
	}
	if err := check(); err != nil {
		return nil, false, err
	}
	if r, check, err = open("links.bin"); err != nil {
		return nil, false, err
	}
	if err := e.links.readFrom(r, m.States); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", errCheckpoint, filepath.Join(cur, "links.bin"), err)
	}
	if err := check(); err != nil {
		return nil, false, err
	}
	if m.Disk != nil {
		if err := e.restoreDisk(m.Disk, cur, open); err != nil {
			return nil, false, err
		}
	}
	res := &resumed{depth: m.Depth, levelStart: m.LevelStart, done: m.Done, finished: m.Finished, elapsed: time.Duration(m.ElapsedNS)}
	for _, q := range []struct {
		name string
		n    int
		prev []uint64
		dst  **keyQueue
	}{{"frontier.bin", m.Frontier, nil, &res.frontier}, {"next.bin", m.Next, m.NextPrev, &res.next}} {
		if r, check, err = open(q.name); err != nil {
			return nil, false, err
		}
		kq, err := readKeyQueue(e.words, &e.spill, r, q.n, q.prev)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s: %v", errCheckpoint, filepath.Join(cur, q.name), err)
		}
		if err := check(); err != nil {
			kq.close()
			return nil, false, err
		}
		*q.dst = kq
	}
	e.stats.Transitions, e.deadEnds = m.Transitions, m.DeadEnds
	e.stats.Reduced, e.stats.Pruned = m.Reduced, m.Pruned
	for r := range e.cov.Rows {
		if len(m.Rows[r]) != len(e.cov.Rows[r]) {
			return nil, false, fmt.Errorf("%w: %s: row counts of another table", errCheckpoint, cur)
		}
		copy(e.cov.Rows[r], m.Rows[r])
	}
	if m.Fired == nil {
		// Resuming without them would report invariants exercised before
		// the checkpoint as never exercised.
		return nil, false, fmt.Errorf("%w: %s: no record of the invariants' triggers (written by an older build): start the search again", errCheckpoint, cur)
	}
	e.cov.Fired = model.Triggers(*m.Fired)
	return res, true, nil
}

// restoreWords reads a checkpoint's shards into a fresh visited set (an
// empty window when the fingerprints are on file).
func restoreWords(v visited, shards []shardMeta, onFile bool, r io.Reader) error {
	for i, sh := range shards {
		var words []uint64
		switch s := v.(type) {
		case *bitstateSet:
			b := &s.bitShards[i]
			if b.onMap {
				unmapWords(b.words)
			}
			b.words = mapWords(sh.Words)
			b.onMap = b.words != nil
			if b.words == nil {
				b.words = make([]uint64, sh.Words)
			}
			b.set, b.missed = sh.Set, sh.Missed
			words = b.words
		case *fpSet:
			t := &s.shards[i]
			t.free()
			if sh.Words > 0 {
				t.init(sh.Words)
			}
			t.n = sh.N
			if !onFile {
				words = t.fps
			}
		}
		if _, err := io.ReadFull(r, wordBytes(words)); err != nil {
			return err
		}
	}
	return nil
}

// restoreDisk puts a checkpoint's fingerprint file in the spill directory
// (the search replaces its file at every merge, and the checkpoint's must
// stay) and makes the search one on disk with an empty window.
func (e *exploration) restoreDisk(dm *diskMeta, cur string, open func(string) (io.Reader, func() error, error)) error {
	r, check, err := open("fingerprints.bin")
	if err != nil {
		return err
	}
	f, err := e.spill.create("fingerprints-*")
	if err != nil {
		return err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != dm.Fingerprints*8 {
		err = fmt.Errorf("%w: %s holds %d bytes, checkpoint.json says %d fingerprints", errCheckpoint, filepath.Join(cur, "fingerprints.bin"), n, dm.Fingerprints)
	}
	if err == nil {
		err = check()
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	d := &diskSet{dir: &e.spill, path: f.Name(), n: dm.Fingerprints, merges: dm.Merges, window: dm.Window}
	if testWindow > 0 {
		d.window = testWindow
	}
	e.vis = &diskStore{inMemory: e.vis.(*fpSet), onFile: d, unchecked: newKeyQueue(e.words+2, &e.spill), words: e.words}
	e.stats.DiskAt = dm.At
	e.wantDisk.Store(true)
	e.onDisk.Store(true)
	return nil
}
