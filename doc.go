// Package browserchain is the root of a library that lets an assistant
// runtime drive a web browser over the Chrome DevTools Protocol (CDP) and
// choose, for every tool call, the best browser it can reach:
//
//  1. the user's own Chrome through the paired extension ("extension"), or,
//     when no extension is connected, through a desktop app ("host-bridge");
//  2. a Chrome the user started with a remote-debugging port ("cdp-inspect");
//  3. a sacrificial Chromium the library launches through Playwright ("local").
//
// The packages:
//
//   - browserbackend: the selection engine — ScopedClient, providers,
//     failover policy, cooldowns, the conversation memo, typed errors and the
//     per-invocation Client (also a cdproto cdp.Session). Test kit in
//     browserbackend/browserbackendtest.
//   - eventhub: the in-process event hub and its SSE endpoint GET /v1/events,
//     backpressure, liveness and rate limiting.
//   - hostproxy: one CDP command to a connected client and its result routes;
//     the extension and host-bridge backends; hostproxy/auth (pairing, JWT);
//     hostproxy/bridge (the reference desktop bridge).
//   - cdpinspect: discovery of a debuggable Chrome and the cdp-inspect backend.
//   - local: the Playwright-launched backend.
//   - examples: quickstart (the demo), server (a reference runtime), bridge,
//     and the reference Chrome extension.
//
// This package holds no code; see README.md for the chain, the two commands,
// and how to compose a selector.
package browserchain
