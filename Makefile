# handoffcheck: everything CI and developers run. Only Go is needed; the
# linters come through go.mod's tool directive.

GO        ?= go
DOCKER    ?= docker
# The image deploy/k8s/walks-job.yaml runs.
IMAGE     ?= handoffcheck:latest
FUZZTIME  ?= 30s
BENCHTIME ?= 1x
# Code-level mutation testing (docs/codemut.md): sample size and seed, and
# where the calibration of the suite is kept for the next run on the same
# tree.
CODEMUT_N    ?= 300
CODEMUT_SEED ?= 1
CODEMUT_CALIBRATION ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/handoffcheck/codemut-calibration.json
CODEMUT_JSON ?= $(dir $(CODEMUT_CALIBRATION))codemut-run.json

# Every fuzz target, as package:target.
FUZZ_TARGETS = \
	./spec:FuzzParse \
	./model:FuzzParseGroups \
	./checker:FuzzParseConfig \
	./checker:FuzzParseMove \
	./checker:FuzzParseTrace \
	./checker:FuzzMergeWalks \
	./checker:FuzzFrontierRecords \
	./checker/sim/workload:FuzzParseWorkload \
	./checker/sim/faultplan:FuzzParseFaultPlan \
	./checker/sim:FuzzParseSimConfig \
	./checker/obslog:FuzzParseLog \
	./checker/obslog:FuzzFastLine \
	./checker/conform:FuzzConform \
	./checker/conform/mocker:FuzzConvertMocker \
	./checker/live:FuzzDecodeFrame \
	./checker/explore:FuzzState \
	./checker/explore:FuzzJudgeMockerLogs \
	./checker/props:FuzzParse \
	./fuzz:FuzzStep

.PHONY: all generate check test test-long fresh fuzz fuzz-seeds bench lint install mutate-code chromium examples live live-parity scale por-check rewrite docs-slow image pgo

all: test

# Put the handoffcheck command in $(go env GOPATH)/bin. The revision is
# stamped at link time as well: the toolchain records it only when it sees
# the checkout (not in a git worktree, nor with GOFLAGS=-buildvcs=false).
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED := $(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo true || echo false)
install:
	$(GO) install -ldflags "-X main.stampRevision=$(REVISION) -X main.stampModified=$(MODIFIED)" ./cmd/handoffcheck

# Render the machines and their docs from the tables in spec/, and the
# reference pages of docs/ from the registries.
generate:
	$(GO) generate ./...

# The main job: explore the embedded default configuration (both policies,
# every fault kind, liveness included), then every scheduler command on
# the command path, on one handoff (testdata/configs/commands.json).
check:
	$(GO) run ./cmd/handoffcheck check --stats
	$(GO) run ./cmd/handoffcheck check --stats --config testdata/configs/commands.json

# The disk-backed search (docs/scale.md): a configuration whose visited
# set outgrows a 4 GiB bound, which moves it to disk and completes. Every
# ordering (--por=false): the search measured there.
scale:
	$(GO) run ./cmd/handoffcheck check --config testdata/configs/scale.json --liveness=false --por=false --max-memory 4GiB --stats --progress always

# Partial-order reduction against the search without it (docs/scale.md):
# every configuration in testdata whose full search finishes, scale.json
# and three-handoffs.json included (an hour or more; max-shape.json's does
# not finish on one machine), every
# shipped variant and every mutant: the same verdicts, quiescent states,
# row coverage and traces.
por-check:
	HANDOFFCHECK_POR_ALL=1 $(GO) test -count=1 -timeout 0 -v ./checker -run 'TestPOR_'

# The tests a change waits for: unit, golden, scenario and parity tests,
# the seed corpora of every fuzz target, and the freshness of generated
# files. Within 4 minutes on 2 cores; what takes longer is in test-long.
# The 30-minute bound is for a busy machine, where the checker package
# has passed go test's default 10.
test: fresh
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

# The tests that take minutes on every core, or wait on real processes
# through every case, which go test ./... skips (each says it is left to
# make test-long): the mutation score of every mutant of the built-in
# tables against its golden, every eighth of them against the sample's
# golden too (from the same results), the reductions (persistent sets,
# sleep sets) held to the full search on every eighth mutant, the
# untimed survivors on the simulator's clock against their golden, the
# live parity of all 25 workloads (make test compares every fourth) and
# the live reproduction of every shipped variant (make test runs one of
# each policy). CI runs it as a step of its own. Each test in LONG_TESTS
# skips (or skips those cases) unless HANDOFFCHECK_LONG is set.
LONG_TESTS = \
	'./checker:^(TestMutate_Score|TestMutate_SampleKeepsTheGoldenVerdicts|TestPOR_MutantsCaughtEitherWay|TestSleep_MutantsCaughtEitherWay|TestDrainChains_MutantsCaughtEitherWay)$$' \
	'./checker/live:^(TestLiveReplayParity)$$' \
	'./checker/sim:^(TestMutateTimed_Survivors)$$' \
	'./cmd/handoffcheck:^(TestCheck_ReproOnTheClockAndLive)$$'
test-long:
	@set -e; for t in $(LONG_TESTS); do \
		pkg=$${t%%:*}; run=$${t#*:}; \
		echo "== $$pkg -run '$$run'"; \
		HANDOFFCHECK_LONG=1 $(GO) test -count=1 -timeout 60m $$pkg -run "$$run" -v; \
	done

# Generated files must equal what the spec renders today: go generate may
# not change anything in the tree.
fresh:
	@tmp=$$(mktemp -d); cp -r machines "$$tmp/machines"; cp -r docs "$$tmp/docs"; \
	$(GO) generate ./... || { rm -rf "$$tmp"; exit 1; }; \
	for d in machines docs; do \
		if ! diff -r "$$tmp/$$d" $$d >/dev/null; then \
			echo "go generate changed generated files in $$d/ (stale, or edited by hand): run make generate and commit"; \
			diff -r "$$tmp/$$d" $$d | head -40; rm -rf "$$tmp"; exit 1; \
		fi; \
	done; rm -rf "$$tmp"

# The machines as real processes: the embedded default live run (1,000
# requests, a worker killed with SIGKILL and restarted, aimed faults), its
# logs judged by conform; then the throughput benchmark on 2+2 workers.
live:
	$(GO) run ./cmd/handoffcheck live
	$(GO) test ./checker/live -run '^$$' -bench BenchmarkLiveThroughput -benchtime 3x

# LiveReplayParity's long sweep: 23 workloads of 40 requests, each with a
# restart aimed by phase, through real worker processes, under both
# policies (minutes; not part of make test).
live-parity:
	HANDOFFCHECK_LIVE_PARITY=1 $(GO) test -count=1 -timeout 0 -v ./checker/live -run 'TestLiveReplayParityRestarts'

# Regenerate everything generated: go generate (machines/ and the reference
# pages of docs/), the example observation logs, then every golden a test
# rewrites with -rewrite, one test run per package (each -run names the
# tests of that package that honour the flag; quoted for the shell), the
# tests of make test-long among them.
# Review the diff before
# committing: a golden that changes is a behaviour that changed.
REWRITE_TESTS = \
	'./checker:^(TestScenarios|TestMutate_Score|TestMutate_SampleKeepsTheGoldenVerdicts)$$' \
	'./checker/conform:^TestJudge_Goldens$$' \
	'./checker/obslog:^TestSchemaFresh$$' \
	'./checker/explore:^TestExplorer_(InChromium|LogsInChromium|MockerLogsInChromium)$$' \
	'./checker/sim:^TestMutateTimed_Survivors$$' \
	'./checker/sim/workload:^TestDefault$$' \
	'./fuzz:^TestFuzzSeeds_Fresh$$' \
	'./cmd/handoffcheck:^(TestCLI_Golden|TestDocsImages_Fresh|TestDocGo_IsTheRegistry|TestDocs_ExamplesMatchOutput)$$'
rewrite: generate examples
	@set -e; for t in $(REWRITE_TESTS); do \
		pkg=$${t%%:*}; run=$${t#*:}; \
		echo "== $$pkg -run '$$run' -rewrite"; \
		HANDOFFCHECK_LONG=1 $(GO) test -count=1 -timeout 0 $$pkg -run "$$run" -rewrite; \
	done

# The documentation's examples that take minutes or gigabytes (make check's
# output on docs/measurements.md, every mutant of mutate): run and held to
# what the pages show, as make test does with the others.
docs-slow:
	HANDOFFCHECK_DOCS_SLOW=1 $(GO) test -count=1 -timeout 0 ./cmd/handoffcheck -run '^TestDocs_ExamplesMatchOutput$$' -v

# The container image deploy/k8s/walks-job.yaml runs (Dockerfile: a static
# binary on a distroless base). Needs docker (or DOCKER=podman).
image:
	$(DOCKER) build -t $(IMAGE) -f Dockerfile .

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s; \
	done

# Seed the fuzz corpora (testdata/fuzz/<Target> of checker/ and fuzz/) with
# every counterexample of testdata/: the trace files that record a
# violation, and what check finds for each variant of testdata/variants on
# testdata/configs/small.json. Commit what it writes: go test replays the
# seeds and fails when they are stale.
fuzz-seeds:
	$(GO) test ./fuzz -run '^TestFuzzSeeds_Fresh$$' -rewrite -count=1

# Break the production code of model/ and checker/ one small change at a
# time and report, per file, how many changes the tests caught, with every
# survivor listed (docs/codemut.md). With the tests of make test-long too:
# a change only they catch is caught. Hours on 2 cores (docs/measurements.md):
# Ctrl-C stops it with the report so far; every result is kept in
# CODEMUT_JSON, from which go run ./tools/codemut -resume goes on.
mutate-code:
	mkdir -p $(dir $(CODEMUT_CALIBRATION))
	HANDOFFCHECK_LONG=1 $(GO) run ./tools/codemut -n $(CODEMUT_N) -seed $(CODEMUT_SEED) -calibration $(CODEMUT_CALIBRATION) -json $(CODEMUT_JSON)

# The profile the command is built with (cmd/handoffcheck/default.pgo,
# which go build, go run and go test take by themselves): the default's
# vllm run as the main job runs it (two workers, the liveness graph) and
# conform judging the simulator's four logs of 100,000 handoffs on one
# core, merged. Made again when the hot code has moved; an old profile
# only optimizes less, it changes no output.
pgo:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) test ./checker -run '^$$' -bench 'VLLM_TwoCoresLiveness$$' -benchtime 1x -o $$tmp/checker.test -cpuprofile $$tmp/check.prof; \
	GOMAXPROCS=1 $(GO) test ./checker/conform -run '^$$' -bench 'Conform$$' -benchtime 2x -o $$tmp/conform.test -cpuprofile $$tmp/conform.prof; \
	$(GO) tool pprof -proto $$tmp/check.prof $$tmp/conform.prof > cmd/handoffcheck/default.pgo

bench:
	$(GO) test ./checker -run '^$$' -bench . -benchtime $(BENCHTIME)
	$(GO) test ./checker/conform -run '^$$' -bench . -benchtime $(BENCHTIME) -cpu 1
	$(GO) test ./checker/live -run '^$$' -bench . -benchtime $(BENCHTIME)
	$(GO) test ./checker/repro -run '^$$' -bench . -benchtime $(BENCHTIME)

# The example observation logs of testdata/logs: the valid ones as simulate
# writes them for testdata/logs/{config.json,workload.jsonl,faults.jsonl},
# the invalid ones as the valid ones with one line changed to each shape
# (tests fail when they are stale).
examples:
	@set -e; for p in source-first:vllm destination-first:sglang; do \
		pol=$${p%%:*}; eng=$${p##*:}; for r in complete:all milestones:milestones; do \
			name=$${r%%:*}; rec=$${r##*:}; \
			$(GO) run ./cmd/handoffcheck simulate --config testdata/logs/config.json --workload testdata/logs/workload.jsonl \
				--faults testdata/logs/faults.jsonl --policy $$pol --engine $$eng --log-records $$rec --log testdata/logs/valid/$$pol-$$name.jsonl >/dev/null; \
		done; done
	$(GO) test ./checker/conform -run '^TestInvalidExamplesFresh$$' -rewrite -count=1

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# Install Chromium (and the Liberation fonts the report names) from
# Debian's packages, for the headless-browser test of the simulation report
# (TestReport_RendersInChromium in checker/sim/plot; it skips without a
# browser). Not part of test. Runs apt-get through sudo unless root.
chromium:
	@if command -v chromium >/dev/null 2>&1; then chromium --version; exit 0; fi; \
	SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	$$SUDO apt-get update && \
	$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-liberation && \
	chromium --version
