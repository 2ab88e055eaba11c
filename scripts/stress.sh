#!/usr/bin/env bash
# stress: run the real-browser packages three times under -race while busy
# loops keep every core busy, to shake out tests that depend on timing (a
# loaded CI machine). The busy loops are always killed, however the tests end.
#
#   STRESS_COUNT  runs per test (default 3)
#   STRESS_HOGS   busy loops (default: the number of cores)
#   STRESS_PKGS   packages (default: every package that starts a real browser)
#   STRESS_RUN    a go test -run pattern (default: every test)
set -euo pipefail

GO=${GO:-go}
count=${STRESS_COUNT:-3}
hogs=${STRESS_HOGS:-$(nproc)}
pkgs=${STRESS_PKGS:-"./local/... ./cdpinspect/... ./hostproxy/bridge/... ./browserbackend/tools/... \
./examples/bridge/... ./examples/extension/... ./examples/quickstart/... ./internal/..."}

pids=()
stop_hogs() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
trap stop_hogs EXIT INT TERM

for _ in $(seq "$hogs"); do
	(while :; do :; done) &
	pids+=("$!")
done
echo "stress: $hogs busy loop(s) running; go test -race -count=$count $pkgs" >&2

start=$(date +%s)
# -p 1: one package at a time, as the real-browser suites share the machine.
# shellcheck disable=SC2086 # pkgs is a list
$GO test -race -count="$count" -p 1 -timeout 90m ${STRESS_RUN:+-run "$STRESS_RUN"} $pkgs
echo "stress: passed in $(($(date +%s) - start)) s" >&2
