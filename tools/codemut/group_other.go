//go:build !unix

package main

import "os/exec"

// killGroup leaves cmd as it is: without process groups, the context's end
// kills the command alone.
func killGroup(cmd *exec.Cmd) {}
