#!/usr/bin/env bash
# scripts/setup.sh — prepare this machine for browserchain's demo and tests
# (SPEC §1, LOC-2). Idempotent: every step checks first and does nothing when
# its result is already in place, so a second run takes about a second.
#
# What it installs, and nothing more:
#   1. Debian's `chromium` (apt-get update + install, only when missing). The
#      local backend drives this system browser; Playwright's browser CDN is
#      never used.
#   2. The Go modules of go.mod and of internal/otlpe2e/go.mod (`go mod download`).
#   3. The Playwright driver that github.com/mxschmitt/playwright-go expects,
#      assembled offline-style from the npm package instead of the CDN:
#        npm pack playwright-core@<version playwright-go pins>
#        → extracted to $DRIVER_DIR/package (so package/cli.js exists)
#        + the system node symlinked as $DRIVER_DIR/node
#      where DRIVER_DIR defaults to $HOME/.cache/ms-playwright-go/<version>
#      (playwright-go's own default; PLAYWRIGHT_DRIVER_PATH overrides it as it
#      does for playwright-go). The driver bundle gets the same small patch
#      playwright-go's installer applies (page errors without a location).
#   4. The MCP Inspector CLI (@modelcontextprotocol/inspector, pinned), the
#      independent MCP client the tests of examples/mcp run, installed with
#      npm into $HOME/.cache/browserchain/mcp-inspector/<version> (no global
#      install). Its 1.x line runs on Node 20; 2.x needs Node 22.19.
#   4b. The MCP conformance suite (@modelcontextprotocol/conformance, pinned)
#      and the Node 22 it needs, both from npm (Node as the node-linux-<arch>
#      package), into $HOME/.cache/browserchain/mcp-conformance/<version>;
#      examples/mcp's tests run it against the server over streamable HTTP.
#   5. A nats-server binary for the distributed hub's tests (DHUB-7), built
#      from its Go module at a pinned version with `go install` into
#      $NATS_SERVER_DIR (default $HOME/.cache/browserchain/nats-server-<ver>);
#      internal/natstest finds it there (or through BROWSERCHAIN_NATS_SERVER).
#      The server module is never a dependency of the library itself.
#   6. Only for `make bench` (BROWSERCHAIN_SETUP_BENCH=1): the two peer MCP servers `make bench` compares examples/mcp with, pinned
#      to the newest versions whose engines accept Node 20: Chrome DevTools MCP
#      (chrome-devtools-mcp, engines ^20.19) and Playwright MCP (@playwright/mcp,
#      engines >=18), each with npm into
#      $HOME/.cache/browserchain/mcp-peers/<name>-<version> (no global install,
#      install scripts off: both attach to an already running Chromium, so no
#      browser download is needed).
#
# Works as root without a TTY (CI); uses sudo for apt only when not root.
# Node.js >= 20 is required by playwright-core; it is installed from apt when
# absent, but Debian 12's own nodejs is 18, so on a bare Debian 12 provide
# Node 20+ (e.g. NodeSource) first.
set -euo pipefail

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

cd "$(dirname "$0")/.."

# ---- 1. system packages -----------------------------------------------------
missing=()
dpkg -s chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${missing[*]}"
		sudo="sudo"
	fi
	log "installing ${missing[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
fi
[ -x /usr/bin/chromium ] || log "warning: /usr/bin/chromium not found; set BROWSERCHAIN_CHROMIUM to your browser"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old: playwright-core needs Node.js >= 20"

# ---- 2. Go modules ----------------------------------------------------------
command -v go >/dev/null 2>&1 || die "go is not on PATH"
go mod download
(cd internal/otlpe2e && go mod download)

# ---- 3. Playwright driver ---------------------------------------------------
pw_mod=github.com/mxschmitt/playwright-go
pw_dir="$(go list -m -f '{{.Dir}}' "$pw_mod")"
[ -n "$pw_dir" ] && [ -f "$pw_dir/run.go" ] || die "cannot find $pw_mod source (go mod download failed?)"
pw_version="$(sed -n 's/^[[:space:]]*playwrightCliVersion[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$pw_dir/run.go")"
[ -n "$pw_version" ] || die "cannot read playwrightCliVersion from $pw_dir/run.go"

if [ -n "${PLAYWRIGHT_DRIVER_PATH:-}" ]; then
	driver_dir="$PLAYWRIGHT_DRIVER_PATH"
else
	[ -n "${HOME:-}" ] || die "HOME is not set (playwright-go keeps its driver under \$HOME/.cache)"
	driver_dir="$HOME/.cache/ms-playwright-go/$pw_version"
fi

installed_version=""
if [ -f "$driver_dir/package/package.json" ] && [ -f "$driver_dir/package/cli.js" ]; then
	installed_version="$(node -p "require(process.argv[1]).version" "$driver_dir/package/package.json" 2>/dev/null || true)"
fi
if [ "$installed_version" != "$pw_version" ]; then
	log "assembling Playwright driver $pw_version in $driver_dir"
	mkdir -p "$driver_dir"
	stage="$(mktemp -d "$driver_dir/.stage.XXXXXX")"
	trap 'rm -rf "$stage"' EXIT
	(cd "$stage" && npm pack "playwright-core@$pw_version" --silent --no-fund --no-audit </dev/null >/dev/null)
	tar -xzf "$stage/playwright-core-$pw_version.tgz" -C "$stage"
	[ -f "$stage/package/cli.js" ] || die "playwright-core $pw_version tarball has no package/cli.js"
	# Same replacements as playwright-go's patchDriverBundle (run.go).
	node -e '
		const fs = require("fs"); const f = process.argv[1];
		let s = fs.readFileSync(f, "utf8");
		s = s.split("pageError.location.url").join("pageError.location?.url || \"\"")
		     .split("pageError.location.lineNumber").join("pageError.location?.lineNumber || 0")
		     .split("pageError.location.columnNumber").join("pageError.location?.columnNumber || 0");
		fs.writeFileSync(f, s);' "$stage/package/lib/coreBundle.js"
	rm -rf "$driver_dir/package"
	mv "$stage/package" "$driver_dir/package"
	rm -rf "$stage"
	trap - EXIT
fi
if [ "$(readlink "$driver_dir/node" 2>/dev/null || true)" != "$(command -v node)" ]; then
	ln -sfn "$(command -v node)" "$driver_dir/node"
fi
# ---- 4. MCP Inspector CLI -----------------------------------------------------
inspector_version=1.0.3 # keep in step with examples/mcp/inspector_test.go
inspector_dir="$HOME/.cache/browserchain/mcp-inspector/$inspector_version"
inspector_pkg="$inspector_dir/node_modules/@modelcontextprotocol/inspector/package.json"
installed_inspector=""
if [ -f "$inspector_pkg" ] && [ -x "$inspector_dir/node_modules/.bin/mcp-inspector" ]; then
	installed_inspector="$(node -p "require(process.argv[1]).version" "$inspector_pkg" 2>/dev/null || true)"
fi
if [ "$installed_inspector" != "$inspector_version" ]; then
	log "installing the MCP Inspector CLI $inspector_version in $inspector_dir"
	mkdir -p "$inspector_dir"
	npm install --prefix "$inspector_dir" --no-audit --no-fund --omit=dev --ignore-scripts --loglevel=error \
		"@modelcontextprotocol/inspector@$inspector_version" </dev/null >/dev/null
	[ -x "$inspector_dir/node_modules/.bin/mcp-inspector" ] || die "the MCP Inspector install has no mcp-inspector binary"
fi

# ---- 4b. MCP conformance suite ------------------------------------------------
# @modelcontextprotocol/conformance (pinned), which the tests of examples/mcp
# run against the server, needs Node >= 22 (it imports fs.globSync). Node 22
# comes from the npm registry too: the package node-linux-<arch> at a pinned
# 22.x ships the official node binary (bin/node), installed next to the suite
# in $HOME/.cache/browserchain/mcp-conformance/<version> (no global install,
# the system node untouched).
conformance_version=0.1.16 # keep in step with examples/mcp/conformance_test.go
conformance_node=22.23.5
case "$(uname -m)" in
	x86_64 | amd64) node_arch=x64 ;;
	aarch64 | arm64) node_arch=arm64 ;;
	*) die "no node-linux package for $(uname -m): install Node 22 and the conformance suite by hand" ;;
esac
conformance_dir="$HOME/.cache/browserchain/mcp-conformance/$conformance_version"
conformance_pkg="$conformance_dir/node_modules/@modelcontextprotocol/conformance/package.json"
installed_conformance=""
if [ -f "$conformance_pkg" ] && [ -x "$conformance_dir/node_modules/node-linux-$node_arch/bin/node" ]; then
	installed_conformance="$("$conformance_dir/node_modules/node-linux-$node_arch/bin/node" -p \
		"require(process.argv[1]).version + ' ' + process.versions.node" "$conformance_pkg" 2>/dev/null || true)"
fi
if [ "$installed_conformance" != "$conformance_version $conformance_node" ]; then
	log "installing the MCP conformance suite $conformance_version with Node $conformance_node in $conformance_dir"
	mkdir -p "$conformance_dir"
	npm install --prefix "$conformance_dir" --no-audit --no-fund --omit=dev --ignore-scripts --loglevel=error \
		"@modelcontextprotocol/conformance@$conformance_version" "node-linux-$node_arch@$conformance_node" </dev/null >/dev/null
	[ -x "$conformance_dir/node_modules/node-linux-$node_arch/bin/node" ] || die "the node-linux-$node_arch install has no bin/node"
fi
ln -sfn "node_modules/node-linux-$node_arch/bin/node" "$conformance_dir/node"

# ---- 5. nats-server (distributed hub tests) ---------------------------------
nats_version=v2.15.2 # keep in step with internal/natstest.Version
nats_dir="${NATS_SERVER_DIR:-$HOME/.cache/browserchain/nats-server-$nats_version}"
if ! [ -x "$nats_dir/nats-server" ] || ! "$nats_dir/nats-server" --version 2>/dev/null | grep -q "${nats_version#v}"; then
	log "building nats-server $nats_version into $nats_dir"
	mkdir -p "$nats_dir"
	(cd "$nats_dir" && GOBIN="$nats_dir" GOFLAGS=-buildvcs=false go install "github.com/nats-io/nats-server/v2@$nats_version")
fi
# ---- 6. peer MCP servers for the benchmarks (make bench only) ----------------
# Keep the versions in step with bench/harness/mcppeers.go.
peer_root="$HOME/.cache/browserchain/mcp-peers"
install_peer() { # <npm package> <version> <bin name>
	local pkg="$1" version="$2" bin="$3" dir got=""
	dir="$peer_root/${pkg//[@\/]/_}-$version"
	if [ -f "$dir/node_modules/$pkg/package.json" ] && [ -x "$dir/node_modules/.bin/$bin" ]; then
		got="$(node -p "require(process.argv[1]).version" "$dir/node_modules/$pkg/package.json" 2>/dev/null || true)"
	fi
	if [ "$got" != "$version" ]; then
		log "installing $pkg $version in $dir"
		mkdir -p "$dir"
		npm install --prefix "$dir" --no-audit --no-fund --omit=dev --ignore-scripts --loglevel=error \
			"$pkg@$version" </dev/null >/dev/null
		[ -x "$dir/node_modules/.bin/$bin" ] || die "the $pkg install has no $bin binary"
	fi
}
if [ "${BROWSERCHAIN_SETUP_BENCH:-}" = 1 ]; then
	install_peer chrome-devtools-mcp 1.11.0 chrome-devtools-mcp
	install_peer @playwright/mcp 0.0.83 playwright-mcp
fi

log "ok: chromium $( [ -x /usr/bin/chromium ] && echo /usr/bin/chromium || echo '(custom)' ), node $(node --version), playwright driver $pw_version at $driver_dir, mcp-inspector $inspector_version, mcp conformance $conformance_version (node $conformance_node), nats-server $nats_version"
