// Command server is the reference assistant runtime: the event
// hub, pairing, the host-browser routes, the rate limiter and a backend
// selector on one loopback port, for the reference extension
// (examples/extension) and desktop bridge to connect to, plus
// POST /v1/browser/command to drive any backend by hand.
//
//	go run ./examples/server
//	curl -s localhost:7830/v1/browser/command -H 'Content-Type: application/json' \
//	  -d '{"conversationId":"c1","browser_mode":"auto","method":"Runtime.evaluate","params":{"expression":"1+1"}}'
//
// Flags:
//
//	-listen           address to listen on; must be loopback (default 127.0.0.1:7830, where
//	                  the Vellum extension looks for a self-hosted gateway)
//	-key-file         HS256 signing key, created 0600 when missing
//	                  (default $XDG_CONFIG_HOME/browserchain/server.key)
//	-allowed-origins  comma-separated extension ids (or chrome-extension://<id> origins) that
//	                  may pair, replacing the default list: the published Vellum ids (prod
//	                  hphbdmpffeigpcdjkckleobjmhhokpne, dev kajfcoaefacmjgdaloeafnpcfaeahcio,
//	                  staging idpcnibfinmkdhlpenkglianflkbhfim, local
//	                  gfcldmjjhcginboeldmknclbjilohcbn) and the reference extension's fixed id
//	-add-origins      extension ids or origins allowed in addition to that list (an unpacked
//	                  build without a manifest key has a path-derived id)
//	-policy           failover policy: default, or no-replay (a command whose client vanished
//	                  mid-command is not re-run on another browser)
//	-actor            actor principal id paired clients act for (default local-user)
//	-cdp-inspect      add cdp-inspect to every auto invocation (default false)
//	-cdp-port         DevTools port cdp-inspect probes (default 9222)
//	-local            add the local Playwright backend as the last resort (default true)
//	-chromium         browser executable for the local backend (default: $BROWSERCHAIN_CHROMIUM, else /usr/bin/chromium)
//	-nats             NATS broker URL (JetStream on); with -replica the server is one
//	                  replica of several sharing the broker (docs/replicas.md)
//	-replica          this replica's name, unique among the replicas
//	-trace-dir        record every command of the command endpoint (the selection, the command,
//	                  its outcome) and rewrite its conversation's trace, <id>.jsonl and <id>.html,
//	                  in this directory after each; not given: nothing is recorded
//	-v                debug logging (every selection record)
//
// The remote browser listener (package hostproxy/remote; docs/remote.md):
//
//	-remote-listen         address of the remote listener; empty (default): none
//	-public-url            its public wss:// URL, e.g. wss://browser.example.com:52800/extension;
//	                       links and grants are bound to it
//	-tls-cert, -tls-key    native TLS; without them -remote-listen must be loopback (behind a
//	                       TLS reverse proxy)
//	-remote-store          the device grant store (default remote.db next to the key file)
//	-pairing-ttl 5m, -device-ttl 2160h, -renew-after 720h, -max-connections 64,
//	-authorize-rate-limit 60, -max-setup 64
//
// Operator verbs on the same store (the server may be running):
//
//	server pair -public-url URL [-actor ID] [-pairing-ttl 5m]   print a single-use pairing link
//	server devices [-json]                                      list the device grants
//	server revoke DEVICE_ID | server revoke -all                revoke one, or every device and unused link
//
// The Vellum assistant's own extension pairs with no configuration: it
// posts an empty JSON body from one of the published origins, opens the
// events stream with its client id, and posts events and invalidations
// with its token alone (see hostproxy's WIRE notes).
//
// Selection logs carry module=cdp-factory: grep them to see which backend
// served a command.
package main
