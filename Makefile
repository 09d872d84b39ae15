# The test command of the README and of CI is `make test`.
GO      ?= go
# Modules with their own go.mod: the chaos suite, the side-by-side benchmarks,
# the fencing guard's tests against real databases, the OpenTelemetry observer
# (otel), and one per driver adapter (driver/<name>), so that a user of one
# client library never downloads another.
DRIVERS := $(patsubst %/go.mod,%,$(wildcard driver/*/go.mod))
MODULES := chaos bench fencing/sqltest otel $(DRIVERS)

.PHONY: test setup lint model-idle unit unit-all unit-acl modules drivers oteltest redis60 benchtest fencingtest model model-deep chaos chaos-docker chaos-all chaos-soak bench bench-report walk

# setup first, even under -j: the rest needs what it installs. The unit
# run mostly waits on its masters; the model, CPU-bound, runs beside it at
# the lowest priority (nice 19), on the CPU it leaves, so that its tests get
# the CPU first. Each target's output is shown whole once it ends.
test: setup
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory --output-sync=target -j2 unit model-idle
	@$(MAKE) --no-print-directory modules benchtest chaos

model-idle:
	@nice -n 19 $(MAKE) --no-print-directory model

# What the tests need (see the script): as root, it installs the missing
# Debian packages; as another user with one missing, it stops at once and
# says to run `sudo make setup`. Then Redis 6.0, as redis60 below.
setup:
	@.ci/setup

# gofmt, go vet and go mod tidiness over every module.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@for m in $(MODULES); do if [ -f $$m/go.mod ]; then (cd $$m && $(GO) vet ./...) || exit 1; fi; done

# The library, the command and their integration tests against real redis-server processes,
# some of them on Redis 6.0, the oldest release the library supports; beside them, the
# library's integration tests again as the README's least-privilege ACL user. The two
# run at once: the second mostly waits on its masters (about 10 s of CPU in a minute).
unit: redis60
	@$(MAKE) --no-print-directory -j2 unit-all unit-acl

unit-all:
	$(GO) test -race -count=1 ./...

unit-acl:
	REDLOCK_TEST_ACL=1 $(GO) test -race -count=1 -run 'Integration|Contract' ./redlock

# The modules beside the library's, their tests at once: each mostly waits
# on its redis-server or database processes (about a third of a core each).
# Not the bench's: its semaphore test needs all five masters within a 50 ms
# node timeout, which the others' load can break.
modules:
	@$(MAKE) --no-print-directory -j5 $(addprefix driver-,$(notdir $(DRIVERS))) oteltest fencingtest

# Each driver adapter's module: the driver contract (internal/drivertest) and
# its own tests, against real redis-server processes. The modules run at
# once: each mostly waits on its masters.
drivers:
	@$(MAKE) --no-print-directory -j2 $(addprefix driver-,$(notdir $(DRIVERS)))

driver-%:
	cd driver/$* && $(GO) test -race -count=1 ./...

# The OpenTelemetry observer's module: the real SDK's metrics and spans, and
# its Prometheus example, from real scenarios on redis-server processes.
oteltest:
	@if [ -f otel/go.mod ]; then cd otel && $(GO) test -race -count=1 ./...; fi

# Redis 6.0 for those tests, fetched once into the user's cache directory (see the script).
redis60:
	@.ci/fetch-redis-6.0

# The comparison module's own tests (its harness, floor and proxy), not its benchmarks.
benchtest:
	@if [ -f bench/go.mod ]; then cd bench && $(GO) test -count=1 ./...; fi

# The fencing guard against real databases (its own module, for the drivers):
# SQLite through a pure-Go driver, and PostgreSQL servers the tests start from
# the postgresql package's initdb and postgres; they fail without them. No
# -race: from a clean cache the race build of the pure-Go SQLite alone takes
# minutes, and without it the chaos suite reuses this build of the driver.
# The tests pass under -race too (cd fencing/sqltest && go test -race ./...).
fencingtest:
	@if [ -f fencing/sqltest/go.mod ]; then cd fencing/sqltest && $(GO) test -count=1 ./...; fi

# The Promela models (the lock, its waiting queue, the semaphore, the
# read-write lock and LockAll), checked with Spin: the exhaustive checks and
# every negative control (see model/README.md). model-deep runs the longer
# searches, outside make test.
model:
	model/check.sh

model-deep:
	model/check.sh deep

# The chaos suite (its own module): see chaos/README.md. make test runs
# every scenario on the process backend (REDLOCK_CHAOS_BACKEND=docker|all
# picks another); chaos-docker runs them on the docker backend, and
# chaos-all on both, outside make test, which the two backends together
# would keep above its 15 minutes. -p 1 runs one package at a time, -v
# streams a progress line per scenario.
chaos:
	@if [ -f chaos/go.mod ]; then cd chaos && REDLOCK_CHAOS_BACKEND=$${REDLOCK_CHAOS_BACKEND:-process} $(GO) test -count=1 -timeout 15m -p 1 -v ./...; fi

chaos-docker:
	@REDLOCK_CHAOS_BACKEND=docker $(MAKE) --no-print-directory chaos

chaos-all:
	@REDLOCK_CHAOS_BACKEND=all $(MAKE) --no-print-directory chaos

# The soak: scenario 20's rolling faults for REDLOCK_CHAOS_SOAK (default
# 10m) on the process backend (REDLOCK_CHAOS_BACKEND picks another).
chaos-soak:
	@cd chaos && REDLOCK_CHAOS_BACKEND=$${REDLOCK_CHAOS_BACKEND:-process} REDLOCK_CHAOS_SOAK=$${REDLOCK_CHAOS_SOAK:-10m} $(GO) test -count=1 -timeout 90m -run '^TestSoak$$' -v ./scenario

# Benchmarks: the library's own, then the side-by-side comparison with redsync and a raw floor,
# then that comparison's table from one run (see bench/README.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...
	@if [ -f bench/go.mod ]; then cd bench && $(GO) test -run '^$$' -bench . -benchmem -count 5 ./...; fi
	@$(MAKE) --no-print-directory bench-report

# The comparison table alone: every scenario in rounds (QUORUMLOCK_BENCH_ROUNDS, default 5).
bench-report:
	@if [ -f bench/go.mod ]; then cd bench && QUORUMLOCK_BENCH_REPORT=1 $(GO) test -run '^TestReport(Primitives)?$$' -count 1 -v -timeout 30m .; fi

# The files and functions of this module that one TryLock, Extend and
# Release enter on the default driver, read from coverage counters around
# each call (see internal/walk): the count behind docs/layout.md.
walk:
	@d=$$(mktemp -d) && $(GO) build -cover -covermode=atomic -coverpkg=./... -o $$d/walk ./internal/walk && GOCOVERDIR=$$d $$d/walk; rc=$$?; rm -rf $$d; exit $$rc
