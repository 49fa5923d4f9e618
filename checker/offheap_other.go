//go:build !linux

package checker

// Elsewhere the tables live on the Go heap (see offheap_linux.go).

func mapWords(n int) []uint64 { return nil }

func unmapWords(w []uint64) {}
