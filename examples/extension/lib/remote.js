// Remote mode (REM-7): the assistant runtime runs on a server and this
// browser dials out to it. The user pastes a pairing link
// wss://HOST/PATH#SECRET; the secret in the fragment is exchanged once at
// POST https://HOST/PATH/authorize for a device credential (a token this
// extension generated), which then opens the WebSocket at wss://HOST/PATH
// as the one subprotocol "bsk-auth.TOKEN". Over that socket arrive the same
// host_browser_request / host_browser_cancel envelopes as over the local
// event stream; the commands run in the same executor, and results, CDP
// events and invalidations go back as JSON frames.
//
// Storage: the credential lives in extension-origin IndexedDB
// (database browserchain-remote, store grant, key "device"); the settings
// in chrome.storage.local hold only mode ("local" | "remote") and a
// non-secret remoteRevision. Local mode never opens the database.
//
// Renewal is checked at start-up, whenever the alarm wakes the worker, and
// by a timer while connected. Its next token is written to IndexedDB before
// the request leaves, so an answer lost to a worker kill or a server
// restart is completed later by the exact same old/new pair (the server
// answers an exact retry with its first answer). A temporary failure keeps
// the credential and is retried at most once a minute; a refusal asks the
// user to pair again. A failed remote authentication never selects local
// mode by itself.

import { executeToContent, setSink } from './executor.js';
import { Health, loadSettings, saveSettings, setHealth } from './state.js';
import * as relay from './relay.js';
import {
  Guard, ownershipHooks, ownershipStats, pendingReturns, releaseAll, whenOwnership, whenReleased, whenResolved,
} from './ownership.js';
import { confirmStats, whenConfirm } from './confirm.js';
import { cancel as cancelHelpOf, cancelAll as cancelHelp, helpStats, whenHelp } from './help.js';
import { ManualClock } from './observe.js';
import * as ui from './ui.js';
import { resultFrame } from './limit.js';

const DB_NAME = 'browserchain-remote';
const DB_STORE = 'grant';
const DB_KEY = 'device';
const SUBPROTOCOL_PREFIX = 'bsk-auth.';
/** Close status the server uses for a revoked or expired grant. */
const STATUS_REVOKED = 4401;
/** Temporary renewal failures are retried at most this often. */
const RENEW_RETRY_MS = 60 * 1000;
/** Longest wait between two renewal checks while connected. */
const RENEW_CHECK_MS = 60 * 1000;
/** Reconnect backoff: base and cap; failures after which health is "error". */
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 30 * 1000;
const FAILURES_BEFORE_ERROR = 8;
/** A cheap extension API call this often keeps the worker alive while remote. */
const KEEPALIVE_MS = 20 * 1000;
const MAX_REMEMBERED = 1000;

/** A refusal by the server (4xx): the credential or link will not work again. */
export class RefusedError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
/** A failure worth retrying later (network, 429, 5xx). */
export class TemporaryError extends Error {}
/** A pairing link that is not wss://HOST/PATH#SECRET. */
export class LinkError extends Error {}

/** Counters and waiters a test reads through the worker's DevTools target. */
export const stats = {
  pairings: 0, renewals: 0, renewed: 0, renewFailures: 0, dials: 0, connects: 0,
  requests: 0, results: 0, dropped: 0, duplicates: 0, events: 0, invalidations: 0, resultsTooLarge: 0,
};
const waiters = []; // [counter, n, resolve]
function bump(counter) {
  stats[counter]++;
  for (let i = waiters.length - 1; i >= 0; i--) {
    const [c, n, resolve] = waiters[i];
    if (c === counter && stats[c] >= n) { waiters.splice(i, 1); resolve(stats[c]); }
  }
}
/** Resolves once stats[counter] reached n in this worker life. */
export function when(counter, n) {
  if (stats[counter] >= n) return Promise.resolve(stats[counter]);
  return new Promise((resolve) => waiters.push([counter, n, resolve]));
}

// ---- the credential store (IndexedDB) ----

function openDB() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(DB_STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error('the credential database is blocked'));
  });
}

async function withStore(mode, fn) {
  const db = await openDB();
  try {
    return await new Promise((resolve, reject) => {
      const t = db.transaction(DB_STORE, mode, { durability: 'strict' });
      const req = fn(t.objectStore(DB_STORE));
      t.oncomplete = () => resolve(req.result);
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error || new Error('the credential transaction was aborted'));
    });
  } finally {
    db.close();
  }
}

/**
 * The stored grant or null: {endpoint, deviceId, token, expiresAt,
 * renewAfter, serviceName, pending (the next token of a renewal not yet
 * confirmed, or null), renewError, refused}.
 */
export async function loadGrant() {
  return (await withStore('readonly', (s) => s.get(DB_KEY))) || null;
}

async function saveGrant(g) {
  await withStore('readwrite', (s) => (g ? s.put(g, DB_KEY) : s.delete(DB_KEY)));
}

// ---- links, tokens, the authorize exchange ----

function loopbackHost(h) {
  return h === 'localhost' || h === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * Splits a pairing link into {endpoint, secret}. endpoint is the link
 * without its fragment; the secret (32–256 base64url characters) never
 * goes into any URL. Plain ws:// is accepted only for a loopback host.
 * Throws LinkError.
 */
export function parseLink(link) {
  let u;
  try { u = new URL(String(link).trim()); } catch { throw new LinkError('the pairing link is not a URL'); }
  if (u.protocol !== 'wss:' && !(u.protocol === 'ws:' && loopbackHost(u.hostname))) {
    throw new LinkError('the pairing link must start with wss:// (ws:// only on this machine)');
  }
  if (u.username || u.password || u.search) throw new LinkError('the pairing link has no user, password or query');
  const secret = u.hash.slice(1);
  if (!/^[A-Za-z0-9_-]{32,256}$/.test(secret)) {
    throw new LinkError('the pairing link needs its secret after # (32–256 base64url characters)');
  }
  u.hash = '';
  return { endpoint: u.href, secret };
}

function authorizeUrl(endpoint) {
  const u = new URL(endpoint);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  u.pathname = u.pathname.replace(/\/$/, '') + '/authorize';
  return u.href;
}

/** A fresh 256-bit credential, unpadded base64url (43 characters). */
export function newToken() {
  const b = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function deviceLabel() {
  try {
    const p = await chrome.runtime.getPlatformInfo();
    return `Chrome on ${p.os}`;
  } catch { return 'Chrome'; }
}

/**
 * POSTs body to the endpoint's authorize route with credential as bearer.
 * No redirects, no cookies. Returns the checked answer; throws
 * RefusedError (4xx other than 429) or TemporaryError.
 */
async function authorize(endpoint, credential, body) {
  let resp;
  try {
    resp = await fetch(authorizeUrl(endpoint), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${credential}` },
      body: JSON.stringify(body),
      redirect: 'error', credentials: 'omit', cache: 'no-store',
    });
  } catch (e) {
    throw new TemporaryError(`cannot reach ${new URL(endpoint).host}: ${e.message}`);
  }
  if (resp.status === 429 || resp.status >= 500) throw new TemporaryError(`authorization failed (${resp.status})`);
  if (!resp.ok) throw new RefusedError(resp.status, `authorization refused (${resp.status}): ${await errorText(resp)}`);
  let a;
  try { a = await resp.json(); } catch { throw new TemporaryError('the authorization answer is not JSON'); }
  if (!a || !/^[0-9a-f]{32}$/.test(a.device_id || '') || !Date.parse(a.expires_at) || !Date.parse(a.renew_after)) {
    throw new TemporaryError('the authorization answer is malformed');
  }
  return a;
}

async function errorText(resp) {
  try {
    const j = await resp.json();
    return (j && j.error && j.error.message) || resp.statusText;
  } catch { return resp.statusText; }
}

// ---- mode ----

/** Whether the user selected remote mode (reads settings only, never the credential). */
export async function selected() {
  return (await loadSettings()).mode === 'remote';
}

/**
 * Pairs with link (REM-7): ends the current connection, local or remote,
 * exchanges the secret for a new device credential, stores it and connects.
 * Throws LinkError, RefusedError (a used, expired or unknown link) or
 * TemporaryError; on failure the previous credential is kept.
 */
export async function pair(link) {
  const { endpoint, secret } = parseLink(link);
  relay.stop();
  stop();
  const token = newToken();
  stats.pairings++;
  let a;
  try {
    a = await authorize(endpoint, secret, { action: 'pair', next_token: token, label: await deviceLabel() });
  } catch (e) {
    // Resume whichever connection was selected before.
    if (await selected()) start(); else relay.start().catch(() => {});
    throw e;
  }
  await saveGrant({
    endpoint, deviceId: a.device_id, token, expiresAt: a.expires_at, renewAfter: a.renew_after,
    serviceName: a.service_name || '', pending: null, renewError: '', refused: false,
  });
  const s = await loadSettings();
  await saveSettings({ mode: 'remote', remoteRevision: (Number(s.remoteRevision) || 0) + 1, autoConnect: true });
  await setHealth(Health.RECONNECTING, 'connecting to the remote server');
  start();
}

/** Leaves remote mode (the popup's local Connect): closes the socket, keeps the credential. */
export async function leave() {
  stop();
  if (await selected()) await saveSettings({ mode: 'local' });
}

// ---- renewal ----

let renewing = null;     // the renewal in progress, shared by concurrent callers
let renewRetryAt = 0;    // performance.now() before which a failed renewal is not retried

/**
 * Renews the credential when a renewal is pending or due (REM-3, REM-7)
 * and returns the grant in force afterwards. The next token is persisted
 * before the request. A refusal marks the grant refused (pair again).
 */
export function renewIfDue() {
  if (!renewing) renewing = doRenew().finally(() => { renewing = null; });
  return renewing;
}

async function doRenew() {
  let g = await loadGrant();
  if (!g || g.refused) return g;
  const due = g.pending || Date.now() >= Date.parse(g.renewAfter);
  if (!due || performance.now() < renewRetryAt) return g;
  if (!g.pending) {
    g = { ...g, pending: newToken() };
    await saveGrant(g); // before the request: a lost answer is retried with the same pair
  }
  stats.renewals++;
  try {
    const a = await authorize(g.endpoint, g.token, { action: 'renew', next_token: g.pending });
    if (a.device_id !== g.deviceId) throw new RefusedError(0, 'the renewal answered for another device');
    g = { ...g, token: g.pending, pending: null, expiresAt: a.expires_at, renewAfter: a.renew_after, renewError: '' };
    await saveGrant(g);
    bump('renewed');
  } catch (e) {
    stats.renewFailures++;
    if (e instanceof RefusedError) {
      g = { ...g, refused: true, renewError: e.message };
    } else {
      renewRetryAt = performance.now() + RENEW_RETRY_MS;
      g = { ...g, renewError: e.message };
    }
    await saveGrant(g);
  }
  return g;
}

// ---- the socket ----

let gen = 0;
let running = false;
let cur = null;          // {ws, ready, gen} of the open (or opening) socket
let wake = null;
let keepalive = null;
const seen = new Set();  // request ids received in this worker life

/** Whether the remote socket is open and the server said ready. */
export function isConnected() {
  return !!(cur && cur.ready && cur.ws.readyState === WebSocket.OPEN);
}

/**
 * Starts the remote connection loop when remote mode is selected; when it
 * runs already, checks the renewal. Idempotent (start-up, alarm, popup).
 */
export async function start() {
  if (running) { renewIfDue().catch(() => {}); return; }
  if ((await loadSettings()).autoConnect === false) { await setHealth(Health.PAUSED); return; }
  if (running) return;
  running = true;
  const my = ++gen;
  setSink(sink);
  startKeepalive();
  loop(my).catch(() => {}).finally(() => { if (gen === my) running = false; });
}

/** Closes the socket and stops the loop (the commands in flight are not answered). */
export function stop() {
  gen++;
  running = false;
  wake?.();
  const c = cur;
  cur = null;
  if (c) {
    endTasks(c);
    c.ws.close(1000, 'remote mode stopped');
  }
}

// endTasks ends the tasks of socket me (REM-8): its guard releases their
// tabs (created ones closed, borrowed ones returned). Idempotent.
function endTasks(me) {
  cancelHelp();
  if (me.guard) me.guard.end().catch(() => {});
}

function startKeepalive() {
  if (keepalive) return;
  keepalive = setInterval(() => {
    if (!running) { clearInterval(keepalive); keepalive = null; return; }
    chrome.runtime.getPlatformInfo().catch(() => {});
  }, KEEPALIVE_MS);
}

function sleep(ms) {
  return new Promise((resolve) => {
    const t = setTimeout(() => { wake = null; resolve(); }, ms);
    wake = () => { clearTimeout(t); wake = null; resolve(); };
  });
}

function backoff(failures) {
  const exp = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(exp * (0.5 + Math.random() / 2));
}

async function loop(my) {
  let failures = 0;
  // A new worker has no socket, whatever an earlier one last recorded.
  await setHealth(Health.RECONNECTING, 'connecting to the remote server');
  // Tabs still claimed by the tasks of a socket this worker no longer has
  // (it was killed with them) are released before a new socket serves.
  await releaseAll().catch(() => {});
  while (gen === my) {
    let g;
    try {
      g = await renewIfDue();
    } catch (e) {
      // The credential database failed: report it; never fall back to local.
      await setHealth(Health.ERROR, `remote credential store unavailable: ${e.message}`);
      return;
    }
    if (gen !== my) return;
    if (!g) { await setHealth(Health.AUTH_REQUIRED, 'remote: paste a pairing link'); return; }
    if (g.refused) { await setHealth(Health.AUTH_REQUIRED, `remote: pair again (${g.renewError})`); return; }
    // A borrowed tab whose return failed is resolved by the user first.
    if ((await pendingReturns().catch(() => [])).length > 0) {
      await setHealth(Health.ERROR, 'remote: a borrowed tab could not be returned; move it out of the Agent Window or close it to reconnect');
      await Promise.race([whenResolved(), new Promise((resolve) => { wake = resolve; })]);
      wake = null;
      continue;
    }
    const end = await dial(my, g);
    if (end.released) await end.released; // its tabs are back before the next socket
    if (gen !== my) return;
    if (end.code === STATUS_REVOKED) {
      await saveGrant({ ...g, refused: true, renewError: 'the server revoked this device or its grant expired' }).catch(() => {});
      await setHealth(Health.AUTH_REQUIRED, 'remote: this device was revoked or expired; pair again');
      return;
    }
    failures = end.opened ? 0 : failures + 1;
    await setHealth(failures >= FAILURES_BEFORE_ERROR ? Health.ERROR : Health.RECONNECTING,
      `remote socket closed (${end.code}${end.reason ? ': ' + end.reason : ''})`);
    await sleep(backoff(Math.max(1, failures)));
  }
}

/**
 * Opens one socket and resolves with {opened, code, reason, released} when
 * it closes; released resolves once its tasks' tabs were released.
 */
function dial(my, g) {
  return new Promise((resolve) => {
    stats.dials++;
    let ws;
    try {
      ws = new WebSocket(g.endpoint, [SUBPROTOCOL_PREFIX + g.token]);
    } catch (e) {
      resolve({ opened: false, code: 0, reason: e.message });
      return;
    }
    const me = { ws, ready: false, maxBody: 0, gen: my, timer: null, guard: new Guard() };
    cur = me;
    ws.onmessage = (e) => onFrame(me, e.data);
    ws.onclose = (e) => {
      clearTimeout(me.timer);
      const opened = me.ready;
      me.ready = false;
      if (cur === me) cur = null;
      endTasks(me);
      if (gen === my && opened) setHealth(Health.RECONNECTING, 'remote socket closed').catch(() => {});
      resolve({ opened, code: e.code, reason: e.reason, released: me.guard.end().catch(() => {}) });
    };
  });
}

function scheduleRenewal(me) {
  clearTimeout(me.timer);
  loadGrant().then((g) => {
    if (!g || cur !== me) return;
    const wait = Math.max(1000, Math.min(RENEW_CHECK_MS, Date.parse(g.renewAfter) - Date.now()));
    me.timer = setTimeout(() => {
      renewIfDue().catch(() => {}).finally(() => { if (cur === me) scheduleRenewal(me); });
    }, wait);
  }, () => {});
}

function onFrame(me, data) {
  let m;
  try { m = JSON.parse(data); } catch { return; }
  if (!m || typeof m !== 'object') return;
  if (m.type === 'ready') {
    me.ready = true;
    me.maxBody = Number(m.maxBodyBytes) || 0; // the largest frame the server reads
    setHealth(Health.CONNECTED, new URL(me.ws.url).host).catch(() => {});
    bump('connects');
    scheduleRenewal(me);
    return;
  }
  if (m.type === 'assistant_event') {
    const env = m.event;
    const msg = env && env.message;
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'host_browser_request') handleRequest(me, msg, env);
    else if (msg.type === 'host_browser_cancel') handleCancel(me, msg);
    return;
  }
  if (m.type === 'accepted') { bump('results'); return; }
  // A request frame of the UI channel (REM-9): {"id","method":"ui.*","params"}.
  if (m.type === undefined && typeof m.method === 'string') ui.handle(m, (frame) => send(me, frame), me.guard);
}

function remember(set, id) {
  set.add(id);
  if (set.size > MAX_REMEMBERED) set.delete(set.values().next().value);
}

const inflight = new Map(); // requestId → {cancelled}
const cancelledEarly = new Set();

function handleCancel(_me, msg) {
  const st = inflight.get(msg.requestId);
  if (st) st.cancelled = true;
  else remember(cancelledEarly, msg.requestId);
  cancelHelpOf(msg.requestId); // a task waiting for the user stops waiting
}

async function handleRequest(me, msg, env) {
  const id = msg.requestId;
  if (!id) return;
  if (seen.has(id)) { stats.duplicates++; return; }
  remember(seen, id);
  if (cancelledEarly.has(id)) return;
  const emitted = Date.parse(env.emittedAt || '');
  if (msg.timeout_seconds && emitted && Date.now() > emitted + msg.timeout_seconds * 1000) return;
  bump('requests');
  const st = { cancelled: false };
  inflight.set(id, st);
  const timing = { ms: 0 };
  const { content, isError } = await executeToContent(msg, timing, me.guard);
  inflight.delete(id);
  // A result belongs to the socket its request came on: after that socket
  // closed the server has failed the command already, so the result is
  // dropped, never sent on a newer socket (reconnection replays nothing).
  if (st.cancelled || cur !== me || !me.ready) { stats.dropped++; return; }
  // Over the server's cap the payload_too_large error goes instead
  // (lib/limit.js), so the socket and its registration stay up.
  const { text, tooLarge } = resultFrame({ requestId: id, content, isError, durationMs: Math.round(timing.ms * 1000) / 1000 }, me.maxBody);
  if (tooLarge) stats.resultsTooLarge++;
  sendText(me, text);
}

function send(me, frame) {
  return sendText(me, JSON.stringify(frame));
}

function sendText(me, text) {
  if (!me || !me.ready || me.ws.readyState !== WebSocket.OPEN) return false;
  try { me.ws.send(text); return true; } catch { return false; }
}

const sink = {
  event(ev) {
    // The POST body's fields (cdpSessionId for a child session, tabId): the
    // server attributes the event to its tab as for a local event (WIRE-4).
    if (send(cur, { ...ev, type: 'host_browser_event' })) stats.events++;
  },
  invalidate(inv) {
    if (send(cur, { type: 'host_browser_session_invalidated', ...inv })) stats.invalidations++;
  },
};

// ---- popup messages and test hooks ----

/** What the popup shows; never the credential. */
export async function status() {
  const settings = await loadSettings();
  const out = { mode: settings.mode === 'remote' ? 'remote' : 'local', connected: isConnected() };
  if (out.mode !== 'remote') return out;
  try {
    const g = await loadGrant();
    if (g) {
      Object.assign(out, {
        host: new URL(g.endpoint).host, deviceId: g.deviceId, serviceName: g.serviceName,
        expiresAt: g.expiresAt, renewAfter: g.renewAfter, renewalPending: !!g.pending,
        renewError: g.renewError || '', pairAgain: !!g.refused,
        // A pending renewal may have succeeded on the server: the local
        // expiry is then not known to be final.
        expired: !g.pending && Date.now() >= Date.parse(g.expiresAt),
      });
    } else {
      out.pairAgain = true;
    }
  } catch (e) {
    out.storeError = String((e && e.message) || e);
  }
  return out;
}

// {type:"remote.pair", link} | {type:"remote.status"}; other types are the
// background's.
chrome.runtime.onMessage.addListener((msg, _sender, reply) => {
  if (!msg || typeof msg.type !== 'string' || !msg.type.startsWith('remote.')) return false;
  if (msg.type.startsWith('remote.borrow.')) return false; // lib/confirm.js answers
  (async () => {
    if (msg.type === 'remote.pair') await pair(msg.link);
    return status();
  })().then(reply, async (e) => reply({ ...(await status().catch(() => ({}))), error: String((e && e.message) || e) }));
  return true;
});

ui.testHooks.frame = (obj) => {
  if (!isConnected()) return false;
  onFrame(cur, JSON.stringify(obj));
  return true;
};

let observeClock = null;

globalThis.vellumRemote = {
  stats, when, status, isConnected, grant: loadGrant, ownership: ownershipStats, whenReleased, ui: ui.testHooks,
  whenOwnership, confirm: confirmStats, whenConfirm, help: helpStats, whenHelp, pendingReturns,
  /** The next return of tabId fails (a scripted fault). */
  failReturnOf(tabId) { ownershipHooks.failReturnOf.add(tabId); return true; },
  /** From now on observation intervals and budgets end only at expireObservation(). */
  manualObservation() { observeClock = observeClock || new ManualClock(); ownershipHooks.useClock(observeClock); return true; },
  expireObservation() { return observeClock ? observeClock.expire() : 0; },
};
