package checker

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"
)

// A breadth-first search keeps two things besides its visited set: the
// frontier (each level's new states, written once in order and read once
// in order) and the trace links (each state's parent and move, appended in
// id order and read back only to rebuild a counterexample). Neither needs
// random access while the search runs, so both are kept in memory while
// small and moved to files in a spill directory when large: resident
// memory then holds the fingerprints and little else.

// spillLimit is how many bytes a frontier queue or the trace links keep in
// memory before moving to a file. A variable so that tests can make small
// runs spill.
var spillLimit = 8 << 20

// spillDir makes, on first use, a private directory for a run's files.
type spillDir struct {
	parent string // where to make it; "" is the system's temporary directory
	dir    string
	// spare is the buffer a closed queue leaves for the next one made: a
	// level's frontier grows to the spill limit, and growing a new buffer
	// to it for every level would copy it over and over.
	spare []byte
	// written counts the bytes written to the directory's files.
	written int64
}

func (d *spillDir) create(pattern string) (*os.File, error) {
	if d.dir == "" {
		dir, err := os.MkdirTemp(d.parent, "handoffcheck-spill-")
		if err != nil {
			return nil, fmt.Errorf("making the spill directory: %w", err)
		}
		d.dir = dir
	}
	f, err := os.CreateTemp(d.dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("making a spill file: %w", err)
	}
	return f, nil
}

// keep makes b the spare buffer if it is larger than the one kept.
func (d *spillDir) keep(b []byte) {
	if cap(b) > cap(d.spare) {
		d.spare = b[:0]
	}
}

// remove deletes the directory and everything in it.
func (d *spillDir) remove() {
	if d.dir != "" {
		_ = os.RemoveAll(d.dir)
		d.dir = ""
	}
}

// maxQueueWords bounds the words of a queue's records: a key, or a key
// with a fingerprint and a parent (the unchecked queue, diskset.go).
const maxQueueWords = keyWords + 2

// A record's header fits one 8-byte load (keyReader.read): this fails to
// compile when a record may have more than 16 words.
const _ = uint(16 - maxQueueWords)

// maxKeyBytes bounds one encoded record: a length nibble and up to eight
// bytes a word.
const maxKeyBytes = (maxQueueWords+1)/2 + 8*maxQueueWords

// keyQueue is a frontier: keys pushed in order, read back once in order.
// Each key is stored as its words XORed with the previous key's:
// consecutive states are mostly siblings, which differ in a few fields, so
// most of those words are zero or small. A record is a header of one
// nibble a word, the length of its XOR in bytes (0 to 8), then each XOR's
// low bytes, least significant first. Unlike varints, a word is written
// and read with one 8-byte store or load and a mask, not a loop over its
// 7-bit groups with a branch each; the record is about as long (half a
// byte for an unchanged word instead of one, a byte more or less for the
// others).
type keyQueue struct {
	words int
	n     int // keys pushed
	prev  [maxQueueWords]uint64
	buf   []byte // the encoded keys while in memory
	dir   *spillDir
	f     *os.File
	wbuf  []byte // what is waiting to be written to f
	size  int64  // bytes written to f
	err   error
}

func newKeyQueue(words int, dir *spillDir) *keyQueue {
	q := &keyQueue{words: words, dir: dir}
	q.buf, dir.spare = dir.spare, nil
	return q
}

// push appends a key (its first words words).
func (q *keyQueue) push(k []uint64) {
	// Eight bytes of slack: each word is stored whole and the next one
	// written over its unused bytes.
	var tmp [maxKeyBytes + 8]byte
	w := q.words
	m := (w + 1) / 2
	for i := 0; i < w; i++ {
		d := k[i] ^ q.prev[i]
		q.prev[i] = k[i]
		n := (bits.Len64(d) + 7) >> 3
		binary.LittleEndian.PutUint64(tmp[m:], d)
		m += n
		tmp[i>>1] |= byte(n) << (4 * (i & 1))
	}
	q.n++
	if q.f == nil {
		q.buf = append(q.buf, tmp[:m]...)
		if len(q.buf) > spillLimit && q.err == nil {
			q.spill()
		}
		return
	}
	q.wbuf = append(q.wbuf, tmp[:m]...)
	if len(q.wbuf) >= 1<<20 {
		q.flush()
	}
}

// spill moves the queue to a file.
func (q *keyQueue) spill() {
	f, err := q.dir.create("frontier-*")
	if err != nil {
		q.err = err
		return
	}
	q.f, q.wbuf, q.buf = f, q.buf, nil
	q.flush()
	// The buffer, as large as the spill limit, waits for the next queue;
	// writing needs less.
	q.dir.keep(q.wbuf)
	q.wbuf = make([]byte, 0, 1<<20+maxKeyBytes)
}

func (q *keyQueue) flush() {
	if q.f == nil || len(q.wbuf) == 0 || q.err != nil {
		q.wbuf = q.wbuf[:0]
		return
	}
	n, err := q.f.Write(q.wbuf)
	q.dir.written += int64(n)
	q.size += int64(n)
	if err != nil {
		q.err = fmt.Errorf("writing the frontier to %s: %w", q.f.Name(), err)
	}
	q.wbuf = q.wbuf[:0]
}

// writeTo writes the queue's encoded keys (for a checkpoint). It does not
// move a reader of the queue.
func (q *keyQueue) writeTo(w io.Writer) error {
	if q.f == nil {
		_, err := w.Write(q.buf)
		return err
	}
	q.flush()
	if q.err != nil {
		return q.err
	}
	_, err := io.Copy(w, io.NewSectionReader(q.f, 0, q.size))
	return err
}

// readKeyQueue makes a queue of n keys from what writeTo wrote; prev is
// the last key pushed, from which the next key pushed is encoded.
func readKeyQueue(words int, dir *spillDir, r io.Reader, n int, prev []uint64) (*keyQueue, error) {
	q := newKeyQueue(words, dir)
	buf := make([]byte, 1<<20)
	for {
		m, err := io.ReadFull(r, buf)
		if m > 0 {
			if q.f == nil {
				q.buf = append(q.buf, buf[:m]...)
				if len(q.buf) > spillLimit {
					q.spill()
				}
			} else {
				q.wbuf = append(q.wbuf, buf[:m]...)
				q.flush()
			}
			if q.err != nil {
				return q, q.err
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return q, err
		}
	}
	q.n = n
	copy(q.prev[:], prev)
	return q, nil
}

// close drops the queue and its file.
func (q *keyQueue) close() {
	if q.f != nil {
		name := q.f.Name()
		_ = q.f.Close()
		_ = os.Remove(name)
		q.f = nil
	}
	q.dir.keep(q.buf)
	q.dir.keep(q.wbuf)
	q.buf, q.wbuf = nil, nil
}

// keyReader reads a queue's keys back in order.
type keyReader struct {
	q    *keyQueue
	left int // keys not yet read
	prev [maxQueueWords]uint64
	src  []byte // a window of the encoded keys
	pos  int
	eof  bool
	err  error
}

// reader starts reading the queue from its first key. The queue must not
// be pushed to afterwards.
func (q *keyQueue) reader() *keyReader {
	r := &keyReader{q: q, left: q.n}
	if q.f == nil {
		r.src, r.eof = q.buf, true
		return r
	}
	q.flush()
	if q.err != nil {
		r.err = q.err
		return r
	}
	if _, err := q.f.Seek(0, io.SeekStart); err != nil {
		r.err = fmt.Errorf("reading the frontier back from %s: %w", q.f.Name(), err)
	}
	r.src = make([]byte, 0, 1<<20)
	return r
}

// fill keeps at least one whole encoded key in the window.
func (r *keyReader) fill() {
	if r.eof || len(r.src)-r.pos >= maxKeyBytes {
		return
	}
	rest := copy(r.src[:cap(r.src)], r.src[r.pos:])
	r.src, r.pos = r.src[:rest], 0
	for len(r.src) < maxKeyBytes && !r.eof {
		n, err := r.q.f.Read(r.src[len(r.src):cap(r.src)])
		r.src = r.src[:len(r.src)+n]
		if err == io.EOF {
			r.eof = true
		} else if err != nil {
			r.err = fmt.Errorf("reading the frontier back from %s: %w", r.q.f.Name(), err)
			r.eof = true
		}
	}
}

// skip reads past the first n keys.
func (r *keyReader) skip(n int, scratch []uint64) {
	for n > 0 && r.err == nil {
		got := r.read(scratch, min(n, len(scratch)/r.q.words))
		if got == 0 {
			return
		}
		n -= got
	}
}

// read decodes up to max keys into dst and returns how many it decoded.
func (r *keyReader) read(dst []uint64, max int) int {
	w := r.q.words
	n := 0
	for n < max && r.left > 0 && r.err == nil {
		r.fill()
		src, hdr := r.src, r.pos
		p := hdr + (w+1)/2
		if p > len(src) {
			r.cutShort()
			return n
		}
		// The header's nibbles, read with one load: at most eight
		// bytes (maxQueueWords nibbles).
		var hb uint64
		if hdr+8 <= len(src) {
			hb = binary.LittleEndian.Uint64(src[hdr:])
		} else {
			for j := (w+1)/2 - 1; j >= 0; j-- {
				hb = hb<<8 | uint64(src[hdr+j])
			}
		}
		for i := 0; i < w; i++ {
			m := int(hb>>(4*uint(i))) & 15
			if m > 8 || p+m > len(src) {
				r.cutShort()
				return n
			}
			var v uint64
			if p+8 <= len(src) {
				v = binary.LittleEndian.Uint64(src[p:]) & (^uint64(0) >> uint(64-8*m))
			} else {
				// The last record of the queue: fewer than eight bytes
				// follow it.
				for j := m - 1; j >= 0; j-- {
					v = v<<8 | uint64(src[p+j])
				}
			}
			p += m
			r.prev[i] ^= v
			dst[n*w+i] = r.prev[i]
		}
		r.pos = p
		n++
		r.left--
	}
	return n
}

// cutShort records that the queue ended inside a record.
func (r *keyReader) cutShort() {
	name := "in memory"
	if r.q.f != nil {
		name = r.q.f.Name()
	}
	r.err = fmt.Errorf("the frontier file %s is cut short", name)
}

// linkLog is the trace links: for each state id, its parent's id and the
// index of the move that first reached it, 5 bytes a state. Records are
// kept in memory in blocks and each full block is appended to a file.
type linkLog struct{ recordLog }

// recordLog is records of one fixed size in the order they were made,
// kept in memory in blocks, each full block appended to a file of the
// spill directory: the trace links (linkLog) and the liveness graph's
// edges (edgeLog).
type recordLog struct {
	n    int    // records made
	base int    // records below base are in the file
	buf  []byte // records base..n-1
	dir  *spillDir
	f    *os.File
	err  error
}

// spillAs appends the block in memory to the file (created from pattern
// in the spill directory), records of size bytes; what names the log in
// an error.
func (l *recordLog) spillAs(size int, pattern, what string) {
	if l.f == nil {
		f, err := l.dir.create(pattern)
		if err != nil {
			l.err = err
			return
		}
		l.f = f
	}
	n, err := l.f.WriteAt(l.buf, int64(l.base)*int64(size))
	l.dir.written += int64(n)
	if err != nil {
		l.err = fmt.Errorf("writing %s to %s: %w", what, l.f.Name(), err)
		return
	}
	l.base += len(l.buf) / size
	l.buf = l.buf[:0]
}

// truncateAs forgets the records from n on, of size bytes. Records
// already in the file stay there, to be written over.
func (l *recordLog) truncateAs(n, size int) {
	if n >= l.base {
		l.buf = l.buf[:(n-l.base)*size]
	} else {
		l.buf, l.base = l.buf[:0], n
	}
	l.n = n
}

func (l *recordLog) close() {
	if l.f != nil {
		name := l.f.Name()
		_ = l.f.Close()
		_ = os.Remove(name)
		l.f = nil
	}
	l.buf = nil
}

const linkBytes = 5

func (l *linkLog) append(parent uint32, via uint8) {
	l.buf = binary.LittleEndian.AppendUint32(l.buf, parent)
	l.buf = append(l.buf, via)
	l.n++
	if len(l.buf) >= spillLimit && l.err == nil {
		l.spill()
	}
}

// spill appends the block in memory to the file.
func (l *linkLog) spill() { l.spillAs(linkBytes, "links-*", "the trace links") }

// get returns the parent and move of a state id. Reading back a file this
// run wrote cannot fail short of a broken disk, which no trace survives.
func (l *linkLog) get(id uint32) (uint32, uint8) {
	var rec [linkBytes]byte
	if int(id) >= l.base {
		copy(rec[:], l.buf[(int(id)-l.base)*linkBytes:])
	} else if _, err := l.f.ReadAt(rec[:], int64(id)*linkBytes); err != nil {
		panic(fmt.Sprintf("checker: reading the trace links back from %s: %v", l.f.Name(), err))
	}
	return binary.LittleEndian.Uint32(rec[:]), rec[4]
}

// writeTo writes every record, in id order (for a checkpoint).
func (l *linkLog) writeTo(w io.Writer) error {
	if l.base > 0 {
		if _, err := io.Copy(w, io.NewSectionReader(l.f, 0, int64(l.base)*linkBytes)); err != nil {
			return err
		}
	}
	_, err := w.Write(l.buf)
	return err
}

// readFrom replaces the log with n records read from r.
func (l *linkLog) readFrom(r io.Reader, n int) error {
	l.close()
	l.n, l.base, l.buf = 0, 0, nil
	buf := make([]byte, max(spillLimit/linkBytes, 1)*linkBytes)
	for left := n; left > 0; {
		chunk := buf[:min(left*linkBytes, len(buf))]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return err
		}
		l.buf = append(l.buf, chunk...)
		l.n += len(chunk) / linkBytes
		left -= len(chunk) / linkBytes
		if len(l.buf) >= spillLimit {
			l.spill()
			if l.err != nil {
				return l.err
			}
		}
	}
	return nil
}

// truncate forgets the ids from n on.
func (l *linkLog) truncate(n int) { l.truncateAs(n, linkBytes) }
