// Package fuzz holds go test -fuzz targets that drive the checker's step
// function from bytes. They add no semantics: each byte picks one of the
// moves the state enables, exactly as the explorer and the random walks
// do, and every step is judged by the same invariants. Fuzzing reaches
// configurations and depths that exhaustive search cannot (more handoffs,
// larger fault budgets) and looks for panics as well as violations.
package fuzz
