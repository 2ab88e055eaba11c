// The relay: pairs with the assistant runtime, subscribes, runs the
// host_browser_request commands it receives and sends their results back,
// and forwards CDP events and tab invalidations (PXY-8, PXY-9). When the
// server offers it, one WebSocket (the result socket in its subscribed mode)
// carries all of that; otherwise an SSE subscription to GET /v1/events
// brings the commands, results go over the result socket when it is open or
// by POST, and events by POST.

import { SSEParser } from './sse.js';
import { TOO_LARGE_CONTENT, resultFrame } from './limit.js';
import { executeToContent, setSink } from './executor.js';
import {
  Health, getHealth, identity, loadCreds, loadLastEventId, loadSettings, saveCreds, saveLastEventId, setHealth,
} from './state.js';

const INTERFACE_ID = 'chrome-extension';
const EVENT_TYPE = 'assistant_event';
/** Refresh or re-pair when the token expires within this window. */
const RENEW_BEFORE_MS = 5 * 60 * 1000;
/** Abort a stream that sent nothing (not even a heartbeat) for this long. */
const STALL_MS = 30 * 1000;
/** Reconnect backoff: base, cap, and failures after which health is "error". */
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 30 * 1000;
const FAILURES_BEFORE_ERROR = 8;
/** The result socket: path, and the delay before another attempt after a failed one. */
const RESULT_SOCKET_PATH = '/v1/host-browser-result/ws';
const SOCKET_RETRY_BASE_MS = 1000;
const SOCKET_RETRY_CAP_MS = 30 * 1000;
/** A socket not ready this long after it was opened is closed (a failed attempt). */
const SOCKET_READY_MS = 10 * 1000;
/** Bounds of the bookkeeping sets. */
const MAX_REMEMBERED = 1000;
const MAX_EVENT_QUEUE = 2000;

class AuthError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
class RetryableError extends Error {
  constructor(message, retryAfterMs = 0) { super(message); this.retryAfterMs = retryAfterMs; }
}

/** Counters and hooks a test can read through the worker's DevTools target. */
export const stats = {
  requests: 0, results: 0, resultFailures: 0, suppressed: 0, expired: 0, duplicates: 0,
  events: 0, eventsDropped: 0, invalidations: 0, pings: 0, connects: 0, pairings: 0, refreshes: 0,
  subscribes: 0, resultsTooLarge: 0,
  // Results by transport, and the result socket's openings and failures.
  resultsOverSocket: 0, resultsOverFetch: 0, socketReady: 0, socketFailures: 0, socketFallbacks: 0,
  // Connections served wholly by the socket; events and invalidations by transport.
  socketStreams: 0, eventsOverSocket: 0, eventsOverFetch: 0, eventsRefused: 0,
};
const connectWaiters = []; // [n, resolve]
const suppressWaiters = new Map(); // requestId → resolve
const suppressedIds = new Set();

/** Resolves once the event stream has been opened n times in this worker. */
export function whenConnected(n) {
  if (stats.connects >= n) return Promise.resolve(stats.connects);
  return new Promise((resolve) => connectWaiters.push([n, resolve]));
}

function connected() {
  stats.connects++;
  for (let i = connectWaiters.length - 1; i >= 0; i--) {
    const [n, resolve] = connectWaiters[i];
    if (stats.connects >= n) { connectWaiters.splice(i, 1); resolve(stats.connects); }
  }
}

/** Resolves once the result socket has become ready n times in this worker. */
export function whenResultSocket(n) {
  if (stats.socketReady >= n) return Promise.resolve(stats.socketReady);
  return new Promise((resolve) => socketWaiters.push([n, resolve]));
}
const socketWaiters = []; // [n, resolve]

/**
 * Resolves once n results have been handed over in this worker: the server
 * acknowledged them (socket "accepted" or the POST's answer), so the
 * per-transport counters already include them.
 */
export function whenResults(n) {
  if (stats.results >= n) return Promise.resolve(stats.results);
  return new Promise((resolve) => resultWaiters.push([n, resolve]));
}
const resultWaiters = []; // [n, resolve]

function resultDone() {
  stats.results++;
  for (let i = resultWaiters.length - 1; i >= 0; i--) {
    const [n, resolve] = resultWaiters[i];
    if (stats.results >= n) { resultWaiters.splice(i, 1); resolve(stats.results); }
  }
}

/** Resolves when the relay has dropped the result of requestId after a cancel. */
export function whenSuppressed(requestId) {
  if (suppressedIds.has(requestId)) return Promise.resolve(true);
  return new Promise((resolve) => suppressWaiters.set(requestId, resolve));
}

function remember(set, id) {
  set.add(id);
  if (set.size > MAX_REMEMBERED) set.delete(set.values().next().value);
}

// ---- connection state (one per worker life) ----
let gen = 0;            // bumps on every start/stop; stale loops exit
let running = false;
let abortStream = null; // aborts the current fetch
let wake = null;        // cuts the current backoff sleep short
let conn = null;        // {serverUrl, token, clientId} while subscribed
const inflight = new Map(); // requestId → {cancelled}
const cancelledEarly = new Set();
const seen = new Set();

export function isRunning() { return running; }
export function isConnected() { return conn !== null; }

/**
 * Starts the connection loop unless it runs already, the user paused the
 * relay, or pairing was refused (auth_required) and force is not set.
 * Idempotent; called at worker start, by the alarm and by the popup.
 */
export async function start({ force = false } = {}) {
  if (running) return;
  const settings = await loadSettings();
  if (!settings.autoConnect) {
    await setHealth(Health.PAUSED);
    return;
  }
  // A refused pairing is not retried behind the user's back (the alarm and
  // worker restarts land here); the popup's Connect forces a new attempt.
  if (!force && (await getHealth()).state === Health.AUTH_REQUIRED) return;
  if (running) return;
  running = true;
  const my = ++gen;
  setSink(sink); // remote mode may have taken the executor's events
  loop(my, settings).finally(() => { if (gen === my) running = false; });
}

/** Stops the loop and closes the stream (pause, or a settings change). */
export function stop() {
  gen++;
  running = false;
  conn = null;
  abortStream?.();
  wake?.();
  closeResultSocket();
}

/** Cuts a reconnect backoff short (the alarm uses it). */
export function nudge() { wake?.(); }

function backoff(failures) {
  const exp = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(exp * (0.5 + Math.random() / 2)); // jitter: 50–100 %
}

function sleep(ms) {
  return new Promise((resolve) => {
    const t = setTimeout(() => { wake = null; resolve(); }, ms);
    wake = () => { clearTimeout(t); wake = null; resolve(); };
  });
}

async function loop(my, settings) {
  let failures = 0;
  let repaired = false;
  while (gen === my) {
    let retryAfter = 0;
    try {
      const creds = await credentials(settings);
      const onOpen = () => {
        failures = 0;
        repaired = false;
        connected();
        setHealth(Health.CONNECTED, settings.serverUrl);
      };
      // One socket for everything when the server offers it; else SSE + POST.
      if (!(await serveOverSocket(my, settings, creds, onOpen))) await subscribe(my, settings, creds, onOpen);
      if (gen !== my) return;
      await setHealth(Health.RECONNECTING, 'stream closed by the server');
    } catch (e) {
      if (gen !== my) return;
      if (e instanceof AuthError) {
        if (e.status === 401 && !repaired) {
          // The token was rejected (expired, key rotated): pair again once.
          repaired = true;
          await saveCreds(null);
          continue;
        }
        await setHealth(Health.AUTH_REQUIRED, e.message);
        running = false;
        gen++;
        return;
      }
      failures++;
      retryAfter = e.retryAfterMs || 0;
      await setHealth(failures >= FAILURES_BEFORE_ERROR ? Health.ERROR : Health.RECONNECTING,
        `${e.message} (attempt ${failures})`);
    }
    if (gen !== my) return;
    await sleep(Math.max(retryAfter, backoff(failures)));
  }
}

// ---- pairing ----

async function credentials(settings) {
  const creds = await loadCreds();
  const fresh = creds && creds.serverUrl === settings.serverUrl
    && Date.parse(creds.expiresAt) - Date.now() > RENEW_BEFORE_MS;
  if (fresh) return creds;
  const { clientId, deviceId } = await identity();
  if (creds && creds.serverUrl === settings.serverUrl && creds.refreshToken) {
    try {
      stats.refreshes++;
      return await obtain(settings.serverUrl, '/v1/pair/refresh', { refreshToken: creds.refreshToken, deviceId });
    } catch (e) {
      if (!(e instanceof AuthError)) throw e;
      // The refresh token is spent or expired: pair from scratch below.
    }
  }
  stats.pairings++;
  return obtain(settings.serverUrl, '/v1/pair', { clientId, deviceId });
}

async function obtain(serverUrl, path, body) {
  let resp;
  try {
    resp = await fetch(serverUrl + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Vellum-Interface-Id': INTERFACE_ID },
      body: JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (e) {
    throw new RetryableError(`cannot reach ${serverUrl}: ${e.message}`);
  }
  if (resp.status === 429) {
    throw new RetryableError('pairing rate-limited', 1000 * Number(resp.headers.get('Retry-After') || 60));
  }
  if (resp.status === 401 || resp.status === 403 || resp.status === 400) {
    throw new AuthError(resp.status, `pairing refused (${resp.status}): ${await errorText(resp)}`);
  }
  if (!resp.ok) throw new RetryableError(`pairing failed (${resp.status})`);
  const t = await resp.json();
  const creds = {
    serverUrl, token: t.token, expiresAt: t.expiresAt, refreshToken: t.refreshToken || '',
    actorPrincipalId: t.actorPrincipalId,
  };
  await saveCreds(creds);
  return creds;
}

async function errorText(resp) {
  try {
    const j = await resp.json();
    return (j && j.error && j.error.message) || resp.statusText;
  } catch { return resp.statusText; }
}

// ---- the event stream ----

// The stream position (the last event id, for Last-Event-ID on the next
// connection) is saved in a task of its own, after the event's command went
// to chrome.debugger: a chrome.storage call costs the worker about 0.7 ms,
// which on the way from the frame to sendCommand delayed every command; the
// worker is idle while the command runs. Ids that arrive before the save
// runs are coalesced into the newest.
let unsavedEventId = '';

function noteEventId(id) {
  if (!id) return;
  const scheduled = unsavedEventId !== '';
  unsavedEventId = id;
  if (!scheduled) setTimeout(flushEventId, 0);
}

function flushEventId() {
  const id = unsavedEventId;
  unsavedEventId = '';
  return id ? saveLastEventId(id).catch(() => {}) : Promise.resolve();
}

/** The last event id seen, saved first if its save is still due. */
async function lastEventId() {
  await flushEventId();
  return loadLastEventId();
}

async function subscribe(my, settings, creds, onOpen) {
  const { clientId } = await identity();
  const ctrl = new AbortController();
  abortStream = () => ctrl.abort();
  const headers = {
    Accept: 'text/event-stream',
    Authorization: `Bearer ${creds.token}`,
    'X-Vellum-Client-Id': clientId,
    'X-Vellum-Interface-Id': INTERFACE_ID,
  };
  const last = await lastEventId();
  if (last) headers['Last-Event-ID'] = last;
  stats.subscribes++;
  let resp;
  try {
    resp = await fetch(settings.serverUrl + '/v1/events', { headers, signal: ctrl.signal, cache: 'no-store' });
  } catch (e) {
    throw new RetryableError(`cannot reach ${settings.serverUrl}: ${e.message}`);
  }
  if (resp.status === 401 || resp.status === 403) {
    throw new AuthError(resp.status, `event stream refused (${resp.status}): ${await errorText(resp)}`);
  }
  if (!resp.ok || !resp.body) throw new RetryableError(`event stream failed (${resp.status})`);
  if (gen !== my) { ctrl.abort(); return; }

  const mine = { serverUrl: settings.serverUrl, token: creds.token, clientId };
  conn = mine;
  onOpen();
  openResultSocket(mine, false);
  let stall;
  const arm = () => { clearTimeout(stall); stall = setTimeout(() => ctrl.abort(), STALL_MS); };
  arm();
  const parser = new SSEParser({
    onEvent: (ev) => {
      noteEventId(ev.id);
      if (ev.type === EVENT_TYPE || ev.type === 'message') dispatch(ev.data);
    },
    onComment: (text) => {
      if (text.startsWith('heartbeat ')) ping(text.slice('heartbeat '.length));
    },
  }, last);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      arm();
      parser.push(value);
    }
  } catch (e) {
    if (gen !== my) return;
    throw new RetryableError(`event stream broke: ${e.message}`);
  } finally {
    clearTimeout(stall);
    if (conn === mine) conn = null; // a newer stream may already be up
    reader.releaseLock?.();
  }
}

function dispatch(data) {
  let env;
  try { env = JSON.parse(data); } catch { return; } // a malformed frame is skipped
  dispatchEnvelope(env);
}

function dispatchEnvelope(env) {
  const msg = env && env.message;
  if (!msg || typeof msg !== 'object') return;
  if (msg.type === 'host_browser_request') handleRequest(msg, env);
  else if (msg.type === 'host_browser_cancel') handleCancel(msg);
}

function handleCancel(msg) {
  const st = inflight.get(msg.requestId);
  if (st) st.cancelled = true;
  else remember(cancelledEarly, msg.requestId);
}

async function handleRequest(msg, env) {
  const id = msg.requestId;
  if (!id) return;
  if (seen.has(id)) { stats.duplicates++; return; }
  remember(seen, id);
  if (cancelledEarly.has(id)) { suppress(id); return; }
  // A request replayed after its server-side deadline is dropped: the
  // server has already answered its caller with a timeout.
  const emitted = Date.parse(env.emittedAt || '');
  if (msg.timeout_seconds && emitted && Date.now() > emitted + msg.timeout_seconds * 1000) {
    stats.expired++;
    return;
  }
  stats.requests++;
  const received = performance.now();
  const st = { cancelled: false };
  inflight.set(id, st);
  const timing = { ms: 0 };
  const { content, isError } = await executeToContent(msg, timing);
  inflight.delete(id);
  if (st.cancelled) { suppress(id); return; }
  // durationMs: time inside chrome.debugger.sendCommand; handledMs: from
  // the frame's arrival to this post. Both are informative only.
  const handledMs = round(performance.now() - received);
  const wall = (t) => round(performance.timeOrigin + t);
  await deliverResult({ requestId: id, content, isError, durationMs: round(timing.ms), handledMs,
    receivedAt: wall(received), postedAt: wall(performance.now()) })
    .then(resultDone, () => { stats.resultFailures++; });
}

function round(ms) { return Math.round(ms * 1000) / 1000; }

function suppress(id) {
  stats.suppressed++;
  remember(suppressedIds, id);
  const w = suppressWaiters.get(id);
  if (w) { suppressWaiters.delete(id); w(true); }
}

// ---- the socket ----
//
// One WebSocket per connection, GET /v1/host-browser-result/ws. It
// authenticates with its first message (a WebSocket cannot carry an
// Authorization header), {"type":"auth","token","clientId"}, and answers
// every result with {"type":"accepted"} or {"type":"error",status}. A
// message on an open socket costs the worker a fraction of a fetch.
//
// Subscribed mode: at connect the relay asks for everything
// ("subscribe":true, with its Last-Event-ID). A server that offers it
// answers {"type":"ready","subscribed":true} and the socket replaces the
// event stream and every POST: hub events arrive as
// {"type":"assistant_event","event":<envelope>}, and CDP events and
// invalidations leave as {"type":"host_browser_event",…} and
// {"type":"host_browser_session_invalidated",…} — the remote socket's
// framing. A server that answers ready without "subscribed" gets the
// results only, and the relay subscribes to GET /v1/events as before; a
// server without the route (the handshake fails) gets SSE + POST.
//
// Results-only mode: opened after the event stream and, after a failure,
// again at a later result (never sooner than the retry delay); until it is
// ready, and for any result the socket could not deliver, the result is
// POSTed. Its traffic counts as extension activity for the worker's
// lifetime (Chrome 116+), like the keepalive's API calls.

// {ws, conn, ready, subscribed, unacked: Map(requestId → {body, resolve, reject}), opened, closed}
let sock = null;
let sockFailures = 0;   // failed attempts in a row (no ready)
let sockRetryAt = 0;    // performance.now() before which no new attempt is made

function sameConn(a, b) {
  return a && b && a.serverUrl === b.serverUrl && a.token === b.token && a.clientId === b.clientId;
}

/**
 * Serves one connection over the subscribed socket when the server offers
 * it: resolves true once that socket has closed, false when the caller
 * must subscribe over SSE instead (no socket, or a results-only one, which
 * stays open for the results).
 */
async function serveOverSocket(my, settings, creds, onOpen) {
  if (performance.now() < sockRetryAt) return false;
  if (sock && !sock.subscribed) closeResultSocket(); // a results-only socket of the last connection
  const { clientId } = await identity();
  const c = { serverUrl: settings.serverUrl, token: creds.token, clientId };
  const me = openResultSocket(c, true, await lastEventId());
  if (!me || !(await me.opened) || !me.subscribed) return false;
  if (gen !== my) { me.ws.close(1000, 'relay stopped'); return true; }
  conn = c;
  stats.socketStreams++;
  onOpen();
  await me.closed;
  if (conn === c) conn = null;
  return true;
}

/**
 * Opens the socket for c unless one is open or opening for it; subscribe
 * asks for the subscribed mode. Returns the socket's record, or null.
 */
function openResultSocket(c, subscribe, lastEventId = '') {
  if (sock && sameConn(sock.conn, c)) return sock;
  closeResultSocket();
  if (performance.now() < sockRetryAt) return null;
  let ws;
  try {
    ws = new WebSocket(c.serverUrl.replace(/^http/, 'ws') + RESULT_SOCKET_PATH);
  } catch {
    socketFailed();
    return null;
  }
  let opened, closed;
  const me = {
    ws, conn: c, ready: false, subscribed: false, unacked: new Map(),
    opened: new Promise((r) => { opened = r; }), closed: new Promise((r) => { closed = r; }),
  };
  sock = me;
  const late = setTimeout(() => { if (!me.ready) ws.close(); }, SOCKET_READY_MS);
  ws.onopen = () => {
    const auth = { type: 'auth', token: c.token, clientId: c.clientId };
    if (subscribe) Object.assign(auth, { subscribe: true, interfaceId: INTERFACE_ID, lastEventId: lastEventId || '' });
    ws.send(JSON.stringify(auth));
  };
  ws.onmessage = (e) => {
    let m;
    try { m = JSON.parse(e.data); } catch { return; }
    if (m.type === 'ready') {
      clearTimeout(late);
      me.ready = true;
      me.subscribed = subscribe && m.subscribed === true;
      me.maxBody = Number(m.maxBodyBytes) || 0;
      sockFailures = 0;
      stats.socketReady++;
      for (let i = socketWaiters.length - 1; i >= 0; i--) {
        const [n, resolve] = socketWaiters[i];
        if (stats.socketReady >= n) { socketWaiters.splice(i, 1); resolve(stats.socketReady); }
      }
      opened(true);
      return;
    }
    if (m.type === 'assistant_event') {
      if (!me.subscribed || sock !== me) return;
      const env = m.event;
      if (env) noteEventId(env.id);
      dispatchEnvelope(env);
      return;
    }
    const u = me.unacked.get(m.requestId);
    if (!u) {
      if (m.type === 'error') stats.eventsRefused++; // an event or invalidation the server refused
      return;
    }
    me.unacked.delete(m.requestId);
    if (m.type === 'accepted') { stats.resultsOverSocket++; u.resolve(); }
    else u.reject(Object.assign(new Error(`result refused (${m.status}): ${m.error}`), { status: m.status })); // a POST would be refused alike
  };
  ws.onclose = () => {
    clearTimeout(late);
    if (sock === me) sock = null;
    if (!me.ready) socketFailed();
    opened(false);
    // Results the server did not acknowledge go by POST (a duplicate is
    // answered 404 and changes nothing).
    for (const u of me.unacked.values()) {
      stats.socketFallbacks++;
      postResult(u.body).then(u.resolve, u.reject);
    }
    me.unacked.clear();
    closed();
  };
  return me;
}

function socketFailed() {
  sockFailures++;
  stats.socketFailures++;
  sockRetryAt = performance.now()
    + Math.min(SOCKET_RETRY_CAP_MS, SOCKET_RETRY_BASE_MS * 2 ** Math.max(0, sockFailures - 1));
}

function closeResultSocket() {
  const s = sock;
  sock = null;
  if (s) s.ws.close(1000, 'relay stopped'); // onclose posts what is unacknowledged
}

/** Sends a result over the socket when it is ready, else POSTs it. */
function sendResult(body) {
  const s = sock;
  if (s && s.ready && s.ws.readyState === WebSocket.OPEN) {
    // Over the socket's cap the payload_too_large error goes instead
    // (lib/limit.js): the server would close the socket, and with it, on a
    // subscribed socket, this client's stream.
    const { text: frame, tooLarge } = resultFrame(body, s.maxBody);
    if (tooLarge) stats.resultsTooLarge++;
    return new Promise((resolve, reject) => {
      s.unacked.set(body.requestId, { body, resolve, reject });
      try {
        s.ws.send(frame);
      } catch {
        s.unacked.delete(body.requestId);
        postResult(body).then(resolve, reject);
      }
    });
  }
  if (conn && !s) openResultSocket(conn, false); // lazily, for the next result
  return postResult(body);
}

function postResult(body) {
  return post('/v1/host-browser-result', body, 3).then(() => { stats.resultsOverFetch++; });
}

/**
 * Sends a result; when the server refuses it as too large (413), reports
 * that instead as a payload_too_large error, so the caller fails at once
 * rather than waiting out its timeout (WIRE-5).
 */
function deliverResult(body) {
  return sendResult(body).catch((e) => {
    if (!e || e.status !== 413) throw e;
    stats.resultsTooLarge++;
    return postResult({ requestId: body.requestId, content: TOO_LARGE_CONTENT, isError: true });
  });
}

// ---- posting back ----

/** POSTs body to path on the connected server, retrying network errors and 5xx. */
async function post(path, body, tries = 1) {
  const c = conn;
  if (!c) throw new Error('not connected');
  let lastErr;
  for (let i = 0; i < tries; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100 * i));
    let resp;
    try {
      resp = await fetch(c.serverUrl + path, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Bearer ${c.token}`,
          'X-Vellum-Client-Id': c.clientId,
        },
        body: JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (e) {
      lastErr = e; // network failure: try again
      continue;
    }
    if (resp.ok) return;
    lastErr = Object.assign(new Error(`${path}: ${resp.status}`), { status: resp.status });
    if (resp.status < 500) break; // the server refused it; retrying will not help
  }
  throw lastErr;
}

function ping(token) {
  if (!conn) return;
  stats.pings++;
  post('/v1/ping', { heartbeat: token }).catch(() => {});
}

// Events and invalidations go through one ordered queue: the server sees
// them in the order chrome.debugger reported them.
const queue = [];
let draining = false;

function enqueue(path, body) {
  if (!conn) return;
  if (!draining && queue.length === 0 && sendFrame(path, body)) return;
  if (queue.length >= MAX_EVENT_QUEUE) { queue.shift(); stats.eventsDropped++; }
  queue.push([path, body]);
  if (!draining) drain();
}

async function drain() {
  draining = true;
  while (queue.length > 0) {
    const [path, body] = queue.shift();
    if (sendFrame(path, body)) continue;
    try { await post(path, body); stats.eventsOverFetch++; } catch { stats.eventsDropped++; }
  }
  draining = false;
}

/** The frame type of each POST route a subscribed socket replaces. */
const FRAME_TYPES = {
  '/v1/host-browser-event': 'host_browser_event',
  '/v1/host-browser-session-invalidated': 'host_browser_session_invalidated',
};

/** Sends an event or invalidation on the subscribed socket; false when there is none. */
function sendFrame(path, body) {
  const s = sock;
  if (!s || !s.subscribed || s.ws.readyState !== WebSocket.OPEN || !sameConn(s.conn, conn)) return false;
  try {
    s.ws.send(JSON.stringify({ ...body, type: FRAME_TYPES[path] }));
  } catch { return false; }
  stats.eventsOverSocket++;
  return true;
}

const sink = {
  event(ev) { stats.events++; enqueue('/v1/host-browser-event', ev); },
  invalidate(inv) { stats.invalidations++; enqueue('/v1/host-browser-session-invalidated', inv); },
};
setSink(sink);
