// Command schemagen writes the JSON Schema of fault plans
// (faultplan.Schema) to the file its argument names: go generate in
// package faultplan runs it for docs/faults.schema.json.
package main

import (
	"fmt"
	"os"

	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: schemagen FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], faultplan.Schema(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
