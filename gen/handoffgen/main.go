// Command handoffgen renders the spec's tables into the machines package and
// its transition docs. It is run by go generate from machines/doc.go.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/handoffcheck/handoffcheck/gen"
	"github.com/handoffcheck/handoffcheck/spec"
)

func main() {
	out := flag.String("out", ".", "directory to write the machines sources and docs into")
	flag.Parse()
	files, err := gen.Render(spec.Default())
	if err != nil {
		fmt.Fprintln(os.Stderr, "handoffgen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*out, f.Name), f.Data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "handoffgen:", err)
			os.Exit(1)
		}
	}
}
