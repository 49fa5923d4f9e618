module github.com/handoffcheck/handoffcheck

go 1.26.8

require (
	github.com/cockroachdb/datadriven v1.0.3
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	github.com/google/uuid v1.6.0
	github.com/looplab/fsm v1.0.3
	pgregory.net/rapid v1.3.0
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)

tool honnef.co/go/tools/cmd/staticcheck
