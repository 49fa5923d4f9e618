package checker

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The fingerprint tables are the explorer's one large, long-lived
// structure. On Linux they are mapped from the system rather than
// allocated on the Go heap, for two reasons: the heap would let garbage
// grow to its goal before collecting a table replaced by growth (up to
// twice the live tables in resident memory), and an unmapped table is
// returned to the system at once. Large tables are also placed on huge
// page boundaries and the kernel is asked for huge pages: every probe is a
// random read of a large table, and huge pages spare most of those reads a
// page-table walk. The mappings are made with x/sys/unix's pointer calls
// because the syscall package's Munmap refuses to unmap part of a mapping,
// which aligning needs.

// hugePage is the size of a transparent huge page.
const hugePage = 2 << 20

func mmap(size uintptr) (unsafe.Pointer, bool) {
	p, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	return p, err == nil
}

func munmap(p unsafe.Pointer, size uintptr) {
	if size > 0 {
		_ = unix.MunmapPtr(p, size)
	}
}

// mapWords returns n zeroed words mapped outside the Go heap, or nil when
// the mapping fails (the caller then allocates on the heap). Its capacity
// is the mapped length, which unmapWords gives back.
func mapWords(n int) []uint64 {
	if n <= 0 {
		return nil
	}
	size := uintptr(n) * 8
	if size < hugePage {
		p, ok := mmap(size)
		if !ok {
			return nil
		}
		return unsafe.Slice((*uint64)(p), n)
	}
	// Map a huge page more than needed and trim both ends, so that the
	// table starts and ends on huge-page boundaries.
	size = (size + hugePage - 1) &^ (hugePage - 1)
	p, ok := mmap(size + hugePage)
	if !ok {
		return nil
	}
	skip := (hugePage - uintptr(p)%hugePage) % hugePage
	munmap(p, skip)
	munmap(unsafe.Add(p, skip+size), hugePage-skip)
	p = unsafe.Add(p, skip)
	b := unsafe.Slice((*byte)(p), size)
	// Where the system gives huge pages on request only (the setting
	// "madvise"), ask; where it refuses, nothing changes.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return unsafe.Slice((*uint64)(p), size/8)[:n]
}

// unmapWords returns words from mapWords to the system.
func unmapWords(w []uint64) {
	if cap(w) == 0 {
		return
	}
	munmap(unsafe.Pointer(unsafe.SliceData(w)), uintptr(cap(w))*8)
}
