package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleSrc = `package p

func f(a, b int, ok bool) (int, error) {
	if a < b && ok {
		a++
		b += a
		g()
	}
	switch {
	case a == 0:
		return a - 1, nil
	}
	return a + 1, h(!ok)
}

func g() {}

func h(bool) error { return e() }

func e() error { return nil }
`

func writeSample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(sampleSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Every operator finds its sites, and every change applies to a source
// that still parses: a change that does not build is only discarded, but
// one that does not parse would mean the offsets are wrong.
func TestSites_EveryOperatorAndEveryChangeParses(t *testing.T) {
	dir := writeSample(t)
	ss, err := fileSites(dir, "p/p.go")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		opBoundary:   {"`a < b` -> `a <= b`"},
		opLogic:      {"`a < b && ok` -> `a < b || ok`"},
		opIncDec:     {"`a++` -> `a--`", "`b += a` -> `b -= a`"},
		opNegateIf:   {"`a < b && ok` -> `!(a < b && ok)`"},
		opCompare:    {"`a == 0` -> `a != 0`"},
		opDropCase:   {"`a == 0` -> `false`"},
		opArith:      {"`a - 1` -> `a + 1`", "`a + 1` -> `a - 1`"},
		opDropNot:    {"`!ok` -> `ok`"},
		opDropStmt:   {"`a++` -> ``", "`b += a` -> ``", "`g()` -> ``"},
		opIntLiteral: {"`a == 0` -> `a == 1`", "`a - 1` -> `a - 2`", "`a + 1` -> `a + 2`"},
	}
	got := map[string][]string{}
	for i := range ss {
		s := &ss[i]
		got[s.Op] = append(got[s.Op], "`"+s.Orig+"` -> `"+s.Mut+"`")
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", s.apply([]byte(sampleSrc)), 0); err != nil {
			t.Errorf("%s does not parse: %v", s.Key(), err)
		}
		if !strings.HasPrefix(s.Key(), "p/p.go f ") && !strings.HasPrefix(s.Key(), "p/p.go h ") && !strings.HasPrefix(s.Key(), "p/p.go e ") {
			t.Errorf("%s: key does not name the file and function", s.Key())
		}
	}
	for op, w := range want {
		for _, x := range w {
			if !containsString(got[op], x) {
				t.Errorf("%s: missing %s; got %v", op, x, got[op])
			}
		}
	}
	// Only a single returned call becomes nil: f returns two results and
	// e returns no call.
	if r := got[opReturnNil]; len(r) != 1 || r[0] != "`return e()` -> `return nil`" {
		t.Errorf("return-nil sites %v, want only h's", r)
	}
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// The same seed draws the same sample, spread over the files; a different
// seed draws another.
func TestSample_SeededAndProportional(t *testing.T) {
	per := map[string][]site{}
	for f, n := range map[string]int{"a.go": 90, "b.go": 10} {
		for i := 0; i < n; i++ {
			per[f] = append(per[f], site{File: f, start: i})
		}
	}
	a, b, c := sample(per, 20, 1, false), sample(per, 20, 1, false), sample(per, 20, 2, false)
	if len(a) != 20 {
		t.Fatalf("%d sites drawn, want 20", len(a))
	}
	same, differ := true, false
	files := map[string]int{}
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
		files[a[i].File]++
	}
	if !same || !differ {
		t.Errorf("seed 1 twice equal: %v; seeds 1 and 2 differ: %v", same, differ)
	}
	if files["a.go"] != 18 || files["b.go"] != 2 {
		t.Errorf("drawn per file %v, want 18 and 2", files)
	}
	if all := sample(per, 20, 1, true); len(all) != 100 {
		t.Errorf("-all drew %d, want 100", len(all))
	}
}

func TestReadEquivalents(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "eq.txt")
	os.WriteFile(p, []byte("# comment\nk1\twhy one\n\nk2\twhy two\n"), 0o644)
	m, err := readEquivalents(p)
	if err != nil || len(m) != 2 || m["k1"] != "why one" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"k1 no tab\n", "k1\t\n", "k1\ta\nk1\tb\n"} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := readEquivalents(p); err == nil || !strings.Contains(err.Error(), "eq.txt:") {
			t.Errorf("%q: want an error naming file and line, got %v", bad, err)
		}
	}
	if m, err := readEquivalents(filepath.Join(dir, "none")); err != nil || len(m) != 0 {
		t.Errorf("a missing list: %v %v", m, err)
	}
}

// The tally scores the changes that alter behaviour: built, and not
// listed as equivalent.
func TestTally_Score(t *testing.T) {
	var tl tally
	for _, r := range []result{{Status: "killed"}, {Status: "killed"}, {Status: "killed"}, {Status: "survived"},
		{Status: "survived", Equivalent: "why"}, {Status: "invalid"}} {
		tl.add(&r)
	}
	if tl.score() != "75.0%" || tl.invalid != 1 || tl.equivalent != 1 {
		t.Errorf("score %s, tally %+v", tl.score(), tl)
	}
}

// Every change the list of equivalents names is still a change of today's
// code: an entry whose code moved on would hide nothing and mislead.
func TestEquivalents_AreStillInTheCode(t *testing.T) {
	root := filepath.Join("..", "..")
	equiv, err := readEquivalents(filepath.Join(root, "tools", "codemut", "equivalent.txt"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := productionFiles(root, []string{"model", "checker", "checker/system"})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		ss, err := fileSites(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ss {
			have[ss[i].Key()] = true
		}
	}
	for k := range equiv {
		if !have[k] {
			t.Errorf("equivalent.txt names a change no longer in the code: %s", k)
		}
	}
}

// The -short runs leave make test-long's tests out even when the run was
// started with HANDOFFCHECK_LONG set (as make mutate-code does): only the
// full runs, reached by a change every -short run missed, pay for them.
func TestWithoutEnv_DropsOnlyTheLongTests(t *testing.T) {
	env := []string{"PATH=/bin", longEnv + "=1", longEnv + "ER=1", "HOME=/h"}
	got := withoutEnv(env, longEnv)
	want := []string{"PATH=/bin", longEnv + "ER=1", "HOME=/h"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(env) != 4 || env[1] != longEnv+"=1" {
		t.Errorf("the environment given was changed: %q", env)
	}
}
