// The UI channel of the remote socket (REM-9). A server that shows its own
// view of a running task sends request frames
//   {"id":"ui-1","method":"ui.task_preview","params":{"session_id":"conv"}}
// and gets {"id","result"} or {"id","error":{"code","message","data":{"reason"}}}.
// The session_id is the task's conversation id. Requests are answered
// outside the command queue and never create a tab or a claim: they work
// only on a tab the task controls in its Agent Window (lib/ownership.js).
//
//   ui.task_preview → {image_base64, format:"jpeg", tab_id, title, captured_at}
//                     a JPEG at most 640 px wide; one capture per tab at a
//                     time, a second one refused with timeout/preview_busy
//   ui.task_focus   → {focused:true}: the task's tab activated, its window raised
//
// Each request has 3 s in all (timeout/ui_deadline); a late result is
// dropped, while the per-tab capture fence stays until Chrome's command
// settles. A frame without a non-empty string id is consumed without a
// reply; any other ui.* method, and any non-ui method, answers
// unknown_method.

import { ensureAttached } from './executor.js';
import { claimOf, tabsOf, windowOf } from './ownership.js';

/** The whole budget of one UI request, in ms. */
export const DEADLINE_MS = 3000;
/** The widest preview, in px. */
export const MAX_WIDTH = 640;
const JPEG_QUALITY = 70;

/** A failure answered as {code, message, data:{reason}}. */
class UIError extends Error {
  constructor(code, reason, message) { super(message); this.code = code; this.reason = reason; }
}

const stats = { requests: 0, consumed: 0, replies: 0, captures: 0, settled: 0, busy: 0, deadlines: 0 };
const waiters = []; // [counter, n, resolve]
function bump(counter) {
  stats[counter]++;
  for (let i = waiters.length - 1; i >= 0; i--) {
    const [c, n, resolve] = waiters[i];
    if (c === counter && stats[c] >= n) { waiters.splice(i, 1); resolve(stats[c]); }
  }
}

// The deadline clock: setTimeout, unless a test switched to a manual clock
// whose deadlines pass only when it says so.
let manual = null; // Set of pending expiry functions, or null
function deadline(ms) {
  let cancel;
  const promise = new Promise((resolve) => {
    if (manual) {
      const fire = () => resolve();
      manual.add(fire);
      cancel = () => manual && manual.delete(fire);
    } else {
      const t = setTimeout(resolve, ms);
      cancel = () => clearTimeout(t);
    }
  });
  return { promise, cancel };
}

// A test can hold every capture before it reaches Chrome, to stand for a
// screenshot Chrome takes its time with.
let hold = null; // {promise, release} or null

const fences = new Map(); // tabId → the capture in flight on it

/**
 * Handles one UI request frame m; reply(frame) sends the answer on the
 * socket the request came on. guard is that socket's tab guard.
 */
export function handle(m, reply, guard) {
  if (typeof m.id !== 'string' || m.id === '') { bump('consumed'); return; }
  bump('requests');
  const answer = (frame) => { if (reply(frame)) bump('replies'); };
  const op = methods[m.method];
  if (!op) {
    answer({ id: m.id, error: { code: 'unknown_method', message: `unknown method ${m.method}` } });
    return;
  }
  const params = m.params && typeof m.params === 'object' ? m.params : {};
  const session = params.session_id;
  if (typeof session !== 'string' || session === '') {
    answer({ id: m.id, error: { code: 'invalid_params', message: 'params.session_id must be a non-empty string' } });
    return;
  }
  const d = deadline(DEADLINE_MS);
  const expired = d.promise.then(() => {
    bump('deadlines');
    throw new UIError('timeout', 'ui_deadline', `${m.method} took longer than ${DEADLINE_MS / 1000} s`);
  });
  const state = { over: false };
  Promise.race([op(session, guard, state), expired]).then(
    (result) => answer({ id: m.id, result }),
    (e) => {
      const err = e instanceof UIError ? e : new UIError('cdp_failed', '', String((e && e.message) || e));
      const error = { code: err.code, message: err.message };
      if (err.reason) error.data = { reason: err.reason };
      answer({ id: m.id, error });
    },
  ).finally(() => { state.over = true; d.cancel(); });
}

/**
 * The tab of session's task that UI requests act on: one it controls in
 * its Agent Window, a created one first.
 */
async function taskTab(session, guard) {
  if (!guard || !guard.live) throw new UIError('cancelled', 'task_stopping', 'the task is stopping');
  const owned = await tabsOf(session);
  if (owned.length === 0) throw new UIError('not_found', 'task_unavailable', `no task ${session} with a tab on this socket`);
  const win = await windowOf(session);
  for (const { tabId } of owned) {
    let tab;
    try { tab = await chrome.tabs.get(tabId); } catch { continue; }
    if (tab.windowId === win) return tab;
  }
  throw new UIError('not_found', 'target_unavailable', `no tab of task ${session} is in its Agent Window`);
}

/** Throws unless tab still belongs to session and shows the same document. */
async function recheck(session, guard, tab, state) {
  if (state.over) throw new UIError('timeout', 'ui_deadline', 'the request is over');
  if (!guard.live) throw new UIError('cancelled', 'task_stopping', 'the task is stopping');
  const claim = await claimOf(tab.id);
  if (!claim || claim.conv !== session) throw new UIError('cancelled', 'task_stopping', 'the tab was returned');
  let now;
  try { now = await chrome.tabs.get(tab.id); } catch {
    throw new UIError('not_found', 'target_unavailable', `the task's tab ${tab.id} is gone`);
  }
  if ((now.url || '') !== (tab.url || '') || now.windowId !== tab.windowId || now.windowId !== await windowOf(session)) {
    throw new UIError('cancelled', 'stale_frame', 'the tab changed document or window during the capture');
  }
  return now;
}

function send(tabId, method, params) {
  return chrome.debugger.sendCommand({ tabId }, method, params);
}

/** Takes one JPEG of tabId's viewport, scaled to at most MAX_WIDTH px. */
async function capture(tabId) {
  if (hold) await hold.promise;
  await ensureAttached(tabId);
  const m = await send(tabId, 'Page.getLayoutMetrics', {});
  const vp = m.cssVisualViewport || m.visualViewport || {};
  const width = vp.clientWidth || MAX_WIDTH;
  const height = vp.clientHeight || Math.round(width * 0.75);
  // Chrome multiplies by the device pixel ratio; fit() corrects the rest.
  const scale = Math.min(1, MAX_WIDTH / width);
  const shot = await send(tabId, 'Page.captureScreenshot', {
    format: 'jpeg', quality: JPEG_QUALITY,
    clip: { x: vp.pageX || 0, y: vp.pageY || 0, width, height, scale },
  });
  return fit(shot.data);
}

/** Re-encodes a JPEG wider than MAX_WIDTH (a device pixel ratio above 1). */
async function fit(b64) {
  const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
  const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/jpeg' }));
  if (bitmap.width <= MAX_WIDTH) { bitmap.close(); return b64; }
  const h = Math.max(1, Math.round(bitmap.height * MAX_WIDTH / bitmap.width));
  const canvas = new OffscreenCanvas(MAX_WIDTH, h);
  canvas.getContext('2d').drawImage(bitmap, 0, 0, MAX_WIDTH, h);
  bitmap.close();
  const blob = await canvas.convertToBlob({ type: 'image/jpeg', quality: JPEG_QUALITY / 100 });
  const buf = new Uint8Array(await blob.arrayBuffer());
  let s = '';
  for (let i = 0; i < buf.length; i += 0x8000) s += String.fromCharCode(...buf.subarray(i, i + 0x8000));
  return btoa(s);
}

const methods = {
  async 'ui.task_preview'(session, guard, state) {
    const tab = await taskTab(session, guard);
    if (fences.has(tab.id)) {
      bump('busy');
      throw new UIError('timeout', 'preview_busy', `a capture of tab ${tab.id} is still running`);
    }
    const p = capture(tab.id);
    fences.set(tab.id, p);
    // The fence lasts until Chrome's command settles, past any deadline.
    p.catch(() => {}).finally(() => { if (fences.get(tab.id) === p) fences.delete(tab.id); bump('settled'); });
    bump('captures');
    let data;
    try { data = await p; } catch (e) {
      if (e instanceof UIError) throw e;
      throw new UIError('cdp_failed', '', `the capture failed: ${(e && e.message) || e}`);
    }
    const now = await recheck(session, guard, tab, state);
    return {
      image_base64: data, format: 'jpeg', tab_id: String(tab.id), title: now.title || '',
      captured_at: new Date().toISOString(),
    };
  },
  async 'ui.task_focus'(session, guard, state) {
    const tab = await taskTab(session, guard);
    await recheck(session, guard, tab, state);
    try {
      await chrome.tabs.update(tab.id, { active: true });
      if (state.over) throw new UIError('timeout', 'ui_deadline', 'the request is over');
      await chrome.windows.update(tab.windowId, { focused: true });
    } catch (e) {
      if (e instanceof UIError) throw e;
      throw new UIError('cdp_failed', '', `focusing the tab failed: ${(e && e.message) || e}`);
    }
    return { focused: true };
  },
};

/** Test hooks, reachable through the worker's DevTools target only. */
export const testHooks = {
  stats,
  /** Resolves once stats[counter] reached n in this worker life. */
  when(counter, n) {
    if (stats[counter] >= n) return Promise.resolve(stats[counter]);
    return new Promise((resolve) => waiters.push([counter, n, resolve]));
  },
  /** From now on deadlines pass only at expire(). */
  manualClock() { if (!manual) manual = new Set(); return true; },
  /** Passes every pending deadline; returns how many. */
  expire() {
    const fire = manual ? [...manual] : [];
    if (manual) manual.clear();
    fire.forEach((f) => f());
    return fire.length;
  },
  /** Holds every capture before Chrome until release(). */
  hold() {
    if (!hold) { let release; const promise = new Promise((r) => { release = r; }); hold = { promise, release }; }
    return true;
  },
  release() { const h = hold; hold = null; if (h) h.release(); return true; },
  /** Feeds one frame to the UI channel as if it came on the open socket. */
  frame: null, // set by remote.js
};
