package cluster

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// KVIndex is the KV index as the workers publish it and a KV-aware
// router reads it (docs/lifecycle.md, the accounting table): per worker,
// the blocks each prefix group has advertised (Stored) and not withdrawn
// (Removed), everything a worker advertised dropped when it restarts
// (WorkerRestarted). It is fed by those facts only, the ones a driver
// logs for its workers, so that the router routes on what was published
// and nothing the driver knows besides: a destination's reservation,
// whose overlap is not published before its receive completes, steers
// no request, and a block whose Removed was published (evicted,
// retired, aborted) counts for no later one.
type KVIndex struct {
	// groups[w] is what worker w advertises, by prefix group; the empty
	// group holds the blocks of requests that share no prefix, which
	// steer nothing but are counted so that every Removed is matched.
	groups []map[string]model.Blocks
}

// NewKVIndex is an empty index over n workers.
func NewKVIndex(n int) *KVIndex {
	x := &KVIndex{groups: make([]map[string]model.Blocks, n)}
	for w := range x.groups {
		x.groups[w] = map[string]model.Blocks{}
	}
	return x
}

// Apply takes one fact a worker published: Stored adds the fact's blocks
// to the worker's entry for group (the prefix group of the fact's
// attempt), Removed takes them away, WorkerRestarted empties the worker.
// The fact's Proc is the worker's process, 1 + its index. Other kinds are
// not the index's and are ignored. A Removed of more blocks than the
// group advertises on the worker is an error: a driver that publishes it
// withdraws what it never stored.
func (x *KVIndex) Apply(f *obslog.Fact, group string) error {
	w := f.Proc - 1
	if w < 0 || w >= len(x.groups) {
		return fmt.Errorf("KV index: a %s fact of process %d, not a worker", obslog.Kinds[f.Kind].Name, f.Proc)
	}
	switch f.Kind {
	case obslog.Stored:
		x.groups[w][group] += model.Blocks(f.Blocks)
	case obslog.Removed:
		have := x.groups[w][group]
		if model.Blocks(f.Blocks) > have {
			return fmt.Errorf("KV index: worker %d removed %d blocks of attempt %s, its group advertised %d", w, f.Blocks, f.Attempt, int64(have))
		}
		if have -= model.Blocks(f.Blocks); have == 0 {
			delete(x.groups[w], group)
		} else {
			x.groups[w][group] = have
		}
	case obslog.WorkerRestarted:
		clear(x.groups[w])
	}
	return nil
}

// Blocks is what worker w advertises for a prefix group.
func (x *KVIndex) Blocks(w int, group string) model.Blocks { return x.groups[w][group] }

// Holds reports whether worker w advertises blocks of a prefix group: a
// KV-aware router's test (Choose's cached). No group, no prefix.
func (x *KVIndex) Holds(w int, group string) bool {
	return group != "" && x.groups[w][group] > 0
}
