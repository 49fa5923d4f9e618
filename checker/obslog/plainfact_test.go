package obslog

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// plainAgrees reports, for one fact line of the log r reads, whether
// plainFact takes it, and fails t when it takes a line the general way
// refuses or reads otherwise.
func plainAgrees(t *testing.T, r *Reader, line []byte) bool {
	t.Helper()
	var plain, general Fact
	if !r.plainFact(line, &plain) {
		return false
	}
	if err := r.general(line, &general); err != nil {
		t.Fatalf("plainFact takes %s, the general way refuses it: %v", line, err)
	}
	if plain != general {
		t.Fatalf("plainFact and the general way read %s otherwise (-general +plain):\n%s", line, cmp.Diff(general, plain))
	}
	return true
}

// plainSeeds is lines of the writer's form, of every shape the
// simulator writes, and lines one change away from one: plainFact takes
// the first (counted) and reads each line it takes as the general way
// does.
var plainSeeds = []string{
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"p0","tokens":3582,"prompt_tokens":3582,"t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"d0","blocks":224,"prefix_hit_tokens":512,"t_us":4716}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":4716}`,
	`{"proc":"p0","gen":2,"attempt":"r0","kind":"pinned","blocks":74,"t_us":5000}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"reserved","pages":74,"slot":0,"headroom":0,"t_us":5001}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"ok","t_us":5002}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed"}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"removed","blocks":74,"t_us":5003}`,
}

// plainMutants is lines plainFact must leave to the general way, or
// read as it does: each breaks one rule of the writer's form or of fact.
var plainMutants = []string{
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"d0","tokens":3582,"t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","tokens":3582,"t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","to":"p0","t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"middle","to":"p0","t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"p0","prefix_hit_tokens":1,"t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"d0","prefix_hit_tokens":1073741825,"t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"p0","prompt_tokens":0,"t_us":4121}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"p0","prompt_tokens":1073741825,"t_us":4121}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","stage":"prefill","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","to":"p0","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","pages":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":1099511627777}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":-1}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":74,"blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":74,"t_us":-1}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":74,"t_us":5,"t_us":6}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":74} `,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":74}}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":74,}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":7.4}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":074}`,
	`{"proc":"p0","gen":-1,"attempt":"r0","kind":"pinned","blocks":74}`,
	`{"proc":"p0","gen":2147483649,"attempt":"r0","kind":"pinned","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"","kind":"pinned","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"` + strings.Repeat("a", 257) + `","kind":"pinned","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r\u0030","kind":"pinned","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pined","blocks":74}`,
	`{"proc":"p9","gen":0,"attempt":"r0","kind":"pinned","blocks":74}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"pinned","blocks":74}`,
	`{"proc":"router","gen":0,"attempt":"r0","kind":"stored","blocks":74}`,
	`{"proc":"p0","gen":0,"kind":"worker_restarted","t_us":5}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"worker_restarted","t_us":5}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"outcome_reported","t_us":5002}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"fine","t_us":5002}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"removed","outcome":"ok","blocks":74}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"deadline_expired","timer":"bootstrap"}`,
	`{"proc":"d0","gen":0,"attempt":"r0","kind":"activated","adopted_blocks":3,"canonical":"r1"}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","proc":"p0","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","kind":"pinned","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","attempt":"r1","blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","Blocks":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","b":74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks" :74}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"pinned","blocks":"74"}`,
	`{"proc":"p0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":1}`,
	`{"proc":"p0", "gen":0,"attempt":"r0","kind":"pinned","blocks":74}`,
	`{"gen":0,"proc":"p0","attempt":"r0","kind":"pinned","blocks":74}`,
}

func TestPlainFact_AsRead(t *testing.T) {
	r, err := NewReader(strings.NewReader(fuzzHeader), "plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range plainSeeds {
		if !plainAgrees(t, r, []byte(line)) {
			t.Errorf("plainFact leaves a line of the writer's form to the general way: %s", line)
		}
	}
	for _, line := range plainMutants {
		plainAgrees(t, r, []byte(line))
		// Each prefix too: plainFact ends a line at every byte.
		for k := range len(line) {
			plainAgrees(t, r, []byte(line[:k]))
		}
	}
	// Every fact line of the example logs, with its own header.
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "logs", "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(data), p)
		if err != nil {
			continue // not a log of this format, or its header is the example
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, MaxLineBytes+1)
		for first := true; sc.Scan(); first = false {
			if !first && plainAgrees(t, r, sc.Bytes()) {
				taken++
			}
		}
	}
	if taken == 0 {
		t.Error("plainFact took no line of the example logs")
	}
}

// FuzzPlainFact: a line plainFact takes, the general way takes too and
// reads the same.
func FuzzPlainFact(f *testing.F) {
	for _, line := range append(plainSeeds, plainMutants...) {
		f.Add([]byte(line))
	}
	r, err := NewReader(strings.NewReader(fuzzHeader), "plain.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		plainAgrees(t, r, line)
	})
}

// intern gives an id read again the copy it gave it before, while the
// table holds it, short (compared in the table) or long, and a copy of
// its own to an id that took another's place; no copy aliases the line.
func TestIntern(t *testing.T) {
	r, err := NewReader(strings.NewReader(fuzzHeader), "plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("r12")
	short := r.intern(string(line))
	long := r.intern(strings.Repeat("x", idBytes+1))
	line[2] = '3'
	if short != "r12" {
		t.Fatalf("the interned id changed with the line: %q", short)
	}
	for _, id := range []string{"r12", strings.Repeat("x", idBytes+1)} {
		want := short
		if len(id) > idBytes {
			want = long
		}
		if got := r.intern(strings.Clone(id)); unsafe.StringData(got) != unsafe.StringData(want) || got != id {
			t.Errorf("%q read again: another copy", id)
		}
	}
	// Every id of one slot in turn: each is its own.
	for i := range 5000 {
		id := fmt.Sprintf("r%d", i)
		if got := r.intern(id); got != id || unsafe.StringData(got) == unsafe.StringData(id) {
			t.Fatalf("intern(%q) = %q", id, got)
		}
	}
}
