# browserchain — developer entry points. POSIX make; every target runs
# scripts/setup.sh first, which is quick when everything is installed.

GO ?= go
TESTFLAGS ?= -race -count=1 -timeout 40m

.PHONY: all setup demo test bench stress

all: test

setup:
	bash scripts/setup.sh

demo: setup
	$(GO) run ./examples/quickstart

test: setup
	$(GO) vet ./...
	# issue 11: no function of the selection core above cyclomatic complexity 15
	$(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -over 15 $(wildcard browserbackend/*.go)
	$(GO) test $(TESTFLAGS) ./...

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
