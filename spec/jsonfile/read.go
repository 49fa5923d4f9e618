package jsonfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxFileBytes bounds every input file the toolkit reads (configurations,
// specs, groups files, trace files): 16 MiB. The largest real input, a
// trace that embeds a configuration and a whole spec, is under 100 KB; the
// bound is there so that a wrong path (--config /dev/zero, a disk image)
// is refused at once instead of exhausting memory.
const MaxFileBytes = 16 << 20

// ErrTooLarge is wrapped by the refusal of an input beyond MaxFileBytes.
var ErrTooLarge = errors.New("jsonfile: input too large")

// ReadFile reads a whole input file, refusing one larger than MaxFileBytes
// after reading at most one byte more than the limit.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A regular file says its size: one too large is refused unread.
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %s, the most an input file may hold", path, ErrTooLarge, st.Size(), sizeText(MaxFileBytes))
	}
	return readLimited(path, f, MaxFileBytes)
}

func readLimited(path string, r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %s, the most an input file may hold", path, ErrTooLarge, sizeText(limit))
	}
	return data, nil
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
