module github.com/handoffcheck/handoffcheck

go 1.26.8

require (
	github.com/cockroachdb/datadriven v1.0.3 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/looplab/fsm v1.0.3 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
