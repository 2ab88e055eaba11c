// Command server is the reference assistant runtime (SPEC EX-2): the event
// hub, pairing, the host-browser routes, the rate limiter and a backend
// selector on one loopback port, for the reference extension
// (examples/extension) and desktop bridge to connect to, plus
// POST /v1/browser/command to drive any backend by hand.
//
//	go run ./examples/server -listen 127.0.0.1:7821
//	curl -s localhost:7821/v1/browser/command -H 'Content-Type: application/json' \
//	  -d '{"conversationId":"c1","browser_mode":"auto","method":"Runtime.evaluate","params":{"expression":"1+1"}}'
//
// Flags:
//
//	-listen           address to listen on; must be loopback (default 127.0.0.1:7821)
//	-key-file         HS256 signing key, created 0600 when missing
//	                  (default $XDG_CONFIG_HOME/browserchain/server.key)
//	-allowed-origins  comma-separated chrome-extension://<id> origins that may pair
//	                  (default: the reference extension's fixed id)
//	-actor            actor principal id paired clients act for (default local-user)
//	-cdp-inspect      add cdp-inspect to every auto invocation (default false)
//	-cdp-port         DevTools port cdp-inspect probes (default 9222)
//	-local            add the local Playwright backend as the last resort (default true)
//	-chromium         browser executable for the local backend (default: $BROWSERCHAIN_CHROMIUM, else /usr/bin/chromium)
//	-nats             NATS broker URL (JetStream on); with -replica the server is one
//	                  replica of several sharing the broker (DHUB-1; README "Running three replicas")
//	-replica          this replica's name, unique among the replicas
//	-v                debug logging (every selection record)
//
// Selection logs carry module=cdp-factory: grep them to see which backend
// served a command (SEL-11).
package main
