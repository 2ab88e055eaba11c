# browserchain — developer entry points. POSIX make; every target runs
# scripts/setup.sh first, which is quick when everything is installed.

GO ?= go
TESTFLAGS ?= -race -count=1 -timeout 40m

.PHONY: all setup demo test bench stress soak

all: test

setup:
	bash scripts/setup.sh

demo: setup
	$(GO) run ./examples/quickstart

test: setup
	$(GO) vet ./...
	# no function of the selection core above cyclomatic complexity 15
	$(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -over 15 $(wildcard browserbackend/*.go)
	# no function of the library above cyclomatic complexity 25 (bench and tests aside)
	$(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -over 25 -ignore '_test.go$$|^bench/' .
	$(GO) test $(TESTFLAGS) ./...
	# the recorder's spans over OTLP/HTTP: a module of its own (the exporter's
	# protobuf and gRPC packages stay out of go.mod)
	cd internal/otlpe2e && $(GO) vet ./... && $(GO) test $(TESTFLAGS) ./...

# bench: the benchmark harness lives in its own module (bench/, so the peer
# libraries it compares against stay out of go.mod); it writes BENCHMARKS.md.
# BENCHFLAGS=-quick runs a short smoke pass.
bench:
	BROWSERCHAIN_SETUP_BENCH=1 bash scripts/setup.sh
	cd bench && $(GO) mod download && $(GO) run ./cmd/benchreport -out ../BENCHMARKS.md $(BENCHFLAGS)

# stress: the real-browser packages three times under -race while busy loops
# take every core (a loaded CI machine); scripts/stress.sh always stops them.
stress: setup
	GO=$(GO) bash scripts/stress.sh

# soak: page events (dialogs, popups, downloads) and random faults from the fault matrix (browser killed, renderer
# crashed, driver killed, client vanished, browser stalled) on all four
# backends while conversations run tool scenarios, for SOAK (default 10m;
# SOAK=60s for a short run). TMPDIR is a fresh directory, so that the soak
# can tell it left no temporary profile or file behind. Not part of test.
SOAK ?= 10m
SOAK_TIMEOUT ?= 90m
soak: setup
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	TMPDIR=$$tmp SOAK=$(SOAK) $(GO) test -race -count=1 -tags soak -run '^TestSoak$$' -v \
		-timeout $(SOAK_TIMEOUT) ./internal/faulttest/
