# browserchain — developer entry points. POSIX make; every target runs
# scripts/setup.sh first, which is quick when everything is installed.

GO ?= go
TESTFLAGS ?= -race -count=1 -timeout 40m

.PHONY: all setup demo test bench

all: test

setup:
	bash scripts/setup.sh

demo: setup
	$(GO) run ./examples/quickstart

test: setup
	$(GO) test $(TESTFLAGS) ./...

bench:
	@echo "no benchmarks yet"
