package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// Every file a command reads is opened through openInput, so that one
// mechanism covers every command: the first SIGINT or SIGTERM cancels the
// command's context (main), and a read under way or to come then stops
// with errInterrupted. A read from a pipe or FIFO, which can block for as
// long as its writer waits, is woken by a read deadline; a regular file or
// a device such as /dev/zero never blocks, and stops at its next read.
// Whole-file inputs are read through readInput, which also bounds them at
// jsonfile.MaxFileBytes.

// errInterrupted ends a read stopped by a signal.
var errInterrupted = errors.New("interrupted by a signal")

// inputFile is a file being read that a signal interrupts. It counts
// what was read, for the partial report of a command stopped while
// reading.
type inputFile struct {
	ctx   context.Context
	f     *os.File
	name  string
	stop  func() bool
	bytes int64
	lines int64
}

func openInput(ctx context.Context, name string) (*inputFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	in := &inputFile{ctx: ctx, f: f, name: name}
	// A deadline in the past wakes a blocked read at once; files that
	// take no deadline (regular files, most devices) do not block.
	in.stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	return in, nil
}

func (in *inputFile) Read(p []byte) (int, error) {
	if in.ctx.Err() != nil {
		return 0, fmt.Errorf("%s: %w", in.name, errInterrupted)
	}
	n, err := in.f.Read(p)
	in.bytes += int64(n)
	in.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	if err != nil && err != io.EOF && in.ctx.Err() != nil {
		return n, fmt.Errorf("%s: %w", in.name, errInterrupted)
	}
	return n, err
}

func (in *inputFile) Close() error {
	in.stop()
	return in.f.Close()
}

// readInput reads a whole input file, refusing one larger than
// jsonfile.MaxFileBytes (after reading at most one byte more), and stops
// on a signal.
func readInput(ctx context.Context, name string) ([]byte, error) {
	in, err := openInput(ctx, name)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	const most = jsonfile.MaxFileBytes
	// A regular file says its size: one too large is refused unread.
	if st, err := in.f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > most {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %d MiB, the most an input file may hold", name, jsonfile.ErrTooLarge, st.Size(), most>>20)
	}
	data, err := io.ReadAll(io.LimitReader(in, most+1))
	if err != nil {
		return nil, err
	}
	if len(data) > most {
		return nil, fmt.Errorf("%s: %w: more than %d MiB, the most an input file may hold", name, jsonfile.ErrTooLarge, most>>20)
	}
	return data, nil
}
