// Command handoffgen renders the spec's tables into the machines package and
// its transition docs, and lays each role's state diagram out as SVG (one
// per policy) for the package to embed (machines/diagrams.go). It is run by go generate from
// machines/doc.go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/diagram"
	"github.com/handoffcheck/handoffcheck/gen"
	"github.com/handoffcheck/handoffcheck/spec"
)

func main() {
	out := flag.String("out", ".", "directory to write the machines sources and docs into")
	flag.Parse()
	s := spec.Default()
	files, err := gen.Render(s)
	if err != nil {
		fail(err)
	}
	svgs, err := diagram.All(context.Background(), s)
	if err != nil {
		fail(err)
	}
	names := make([]string, 0, len(svgs))
	for name := range svgs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		files = append(files, gen.File{Name: name, Data: svgs[name]})
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*out, f.Name), f.Data, 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "handoffgen:", err)
	os.Exit(1)
}
