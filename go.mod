module github.com/handoffcheck/handoffcheck

go 1.26.8

require (
	github.com/cockroachdb/datadriven v1.0.3
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	github.com/looplab/fsm v1.0.3
	pgregory.net/rapid v1.3.0
)

require github.com/pmezard/go-difflib v1.0.0 // indirect
