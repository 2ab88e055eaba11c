// Runs host_browser_request commands in this Chrome through chrome.debugger
// and implements the Vellum.* tab operations (PXY-6, PXY-9).
//
// Targets: a command's cdpSessionId of decimal digits names a tab, the id of
// a flat child session the server opened (Target.attachToTarget or
// setAutoAttach with flatten:true) that session, anything else a CDP target
// id (WIRE-3, as the Vellum extension reads it); any other raw CDP command
// goes to the conversation's pinned tab, and a conversation without one
// gets a dedicated background tab (the user's own tabs are never driven
// unless the server selects or attaches one).
//
// The Vellum.* answers have the shapes of the Vellum extension (WIRE-3):
// tab ids are numbers in listTabs and strings in createTab and findTab.

import { identity } from './state.js';
import { armsObservation } from './observe.js';
import { requestHelp, waitingOn } from './help.js';

/** Error thrown for failures reported with a structured code. */
export class CommandError extends Error {
  /**
   * @param {string|number} code a transport code string (transport_error,
   *   unreachable, timeout, cdp_session_not_found, cancelled, …) or a CDP
   *   numeric code (-32601, -32000, …).
   */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
  toContent() { return { code: this.code, message: this.message }; }
}

const PROTOCOL_VERSION = '1.3';

const attached = new Map();      // tabId → Promise<void> of the attach
const tabTargets = new Map();    // tabId → CDP targetId
const childSessions = new Map(); // flat sessionId → tabId
const invalidated = new Set();   // tabIds whose invalidation was posted
let convTabs = null;             // conversationId → tabId (storage.session)

let sink = { event() {}, invalidate() {} };

/** Sets where CDP events and invalidations go (the relay). */
export function setSink(s) { sink = s; }

async function pins() {
  if (convTabs === null) {
    const { convTabs: stored } = await chrome.storage.session.get('convTabs');
    convTabs = stored || {};
  }
  return convTabs;
}

async function pin(conv, tabId) {
  const p = await pins();
  if (tabId == null) delete p[conv]; else p[conv] = tabId;
  await chrome.storage.session.set({ convTabs: p });
}

async function unpinTab(tabId) {
  const p = await pins();
  let changed = false;
  for (const [c, t] of Object.entries(p)) {
    if (t === tabId) { delete p[c]; changed = true; }
  }
  if (changed) await chrome.storage.session.set({ convTabs: p });
}

function tabInfo(t) {
  return {
    tabId: t.id, windowId: t.windowId, url: t.url || t.pendingUrl || '', title: t.title || '',
    active: !!t.active, pinned: !!t.pinned,
  };
}

/** Whether a tab's URL matches a findTab urlPattern: a match pattern with * wildcards, else a substring. */
function urlMatches(url, pattern) {
  if (!pattern) return true;
  if (!pattern.includes('*')) return url.includes(pattern);
  const re = new RegExp('^' + pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
  return re.test(url);
}

/** Attaches the debugger to tabId once; concurrent callers share the attach. */
export function ensureAttached(tabId) {
  let p = attached.get(tabId);
  if (p) return p;
  p = (async () => {
    try {
      await chrome.debugger.attach({ tabId }, PROTOCOL_VERSION);
    } catch (e) {
      // Our earlier attach from a previous worker life is still in place.
      if (!/already attached/i.test(String(e && e.message))) throw debuggerError(e, { tabId });
    }
    invalidated.delete(tabId);
    try {
      const targets = await chrome.debugger.getTargets();
      const t = targets.find((x) => x.tabId === tabId);
      if (t) tabTargets.set(tabId, t.id);
    } catch { /* the target id is informative only */ }
  })();
  attached.set(tabId, p);
  p.catch(() => { if (attached.get(tabId) === p) attached.delete(tabId); });
  return p;
}

/** Maps a chrome.debugger failure to a CommandError. */
function debuggerError(e, target) {
  const msg = String((e && e.message) || e);
  try {
    const j = JSON.parse(msg); // CDP errors arrive as the JSON of the error object
    if (j && typeof j.code === 'number') return new CommandError(j.code, j.message || msg);
  } catch { /* not JSON */ }
  if (/No tab with given id|No target with given id|Cannot find (tab|target)/i.test(msg)) {
    unpinTab(target.tabId).catch(() => {});
    return new CommandError('cdp_session_not_found', `tab ${target.tabId} is gone: ${msg}`);
  }
  if (/Detached while handling command|Target closed/i.test(msg)) {
    return new CommandError('transport_error', msg);
  }
  // chrome.debugger refused the command itself (e.g. a chrome:// page, a
  // restricted method): the browser answered, so this is protocol-class.
  return new CommandError(-32000, msg);
}

/**
 * Sends one CDP command, re-attaching once when the debugger was detached
 * under us. timing.ms accumulates the time spent inside sendCommand.
 */
async function send(target, method, params, timing) {
  if (!target.sessionId && lostTabs.has(target.tabId)) {
    // Chrome would leave the command unanswered: say so at once. Only a
    // navigation gives the tab a new renderer.
    if (method !== 'Page.navigate') {
      throw new CommandError('page_lost', `the renderer of tab ${target.tabId} crashed; navigate the tab to load a page again`);
    }
    lostTabs.delete(target.tabId);
  }
  for (let attempt = 0; ; attempt++) {
    const t0 = performance.now();
    try {
      // Chrome answers none of a crashed tab's pending commands: the
      // crash (Inspector.targetCrashed) fails them instead.
      const res = await Promise.race([chrome.debugger.sendCommand(target, method, params), crashOf(target.tabId)]);
      timing.ms += performance.now() - t0;
      learnSessions(target.tabId, method, res);
      return res ?? {};
    } catch (e) {
      timing.ms += performance.now() - t0;
      if (e instanceof CommandError) throw e; // already classified (a crash)
      if (attempt === 0 && /not attached/i.test(String(e && e.message))) {
        attached.delete(target.tabId);
        await ensureAttached(target.tabId);
        continue;
      }
      throw debuggerError(e, target);
    }
  }
}

// crashes maps a tab id to the promise that rejects when its renderer
// crashes; a crash settles and forgets it, so the next command waits for the
// next crash (a navigation brings a crashed tab back). lostTabs are the tabs
// whose renderer crashed and that no navigation has revived yet.
const crashes = new Map();
const lostTabs = new Set();

function crashOf(tabId) {
  let c = crashes.get(tabId);
  if (!c) {
    c = {};
    c.promise = new Promise((_, reject) => { c.reject = reject; });
    c.promise.catch(() => {}); // a crash with no command waiting is not an error
    crashes.set(tabId, c);
  }
  return c.promise;
}

function crashed(tabId) {
  lostTabs.add(tabId);
  const c = crashes.get(tabId);
  if (!c) return;
  crashes.delete(tabId);
  c.reject(new CommandError('target_crashed', `the renderer of tab ${tabId} crashed`));
}

function learnSessions(tabId, method, res) {
  if (method === 'Target.attachToTarget' && res && res.sessionId) childSessions.set(res.sessionId, tabId);
}

/** The tab sessionless commands of conv go to (created when missing). */
async function tabFor(conv, guard) {
  const p = await pins();
  // tabs.onRemoved unpins closed tabs, so a pin names a live tab; a tab
  // that vanished in between fails in sendCommand as cdp_session_not_found.
  if (p[conv] != null) return p[conv];
  const tabId = guard ? await guard.newTab(conv, false) : (await chrome.tabs.create({ url: 'about:blank', active: false })).id;
  await pin(conv, tabId);
  return tabId;
}

function needTab(params, fallback) {
  const id = params && params.tabId != null ? Number(params.tabId) : fallback;
  if (!Number.isInteger(id)) throw new CommandError(-32602, 'tabId (an integer) is required');
  return id;
}

async function existingTab(tabId) {
  try { return await chrome.tabs.get(tabId); } catch {
    throw new CommandError(-32000, `no tab with id ${tabId}`);
  }
}

const vellum = {
  async 'Vellum.listTabs'() {
    const tabs = await chrome.tabs.query({});
    return { tabs: tabs.map(tabInfo) };
  },
  async 'Vellum.createTab'(params, conv, guard) {
    // As the Vellum extension does it: an active about:blank whatever url
    // and active say (WIRE-3); the caller navigates the tab afterwards. A
    // remote task's tab opens in its Agent Window.
    const tabId = guard ? await guard.newTab(conv, true) : (await chrome.tabs.create({ url: 'about:blank', active: true })).id;
    await pin(conv, tabId);
    return { tabId: String(tabId), clientId: (await identity()).clientId };
  },
  async 'Vellum.findTab'(params) {
    const pattern = params.urlPattern || '';
    const tabs = await chrome.tabs.query({});
    const t = tabs.find((x) => urlMatches(x.url || x.pendingUrl || '', pattern));
    if (!t) throw new CommandError('target_not_found', `no tab matches ${pattern}`);
    return { tabId: String(t.id), url: t.url || t.pendingUrl || '', title: t.title || '' };
  },
  async 'Vellum.selectTab'(params, conv, guard) {
    const tab = await existingTab(needTab(params));
    if (guard) await guard.borrow(conv, tab.id);
    await pin(conv, tab.id);
    return {};
  },
  async 'Vellum.closeTab'(params, conv, guard) {
    const tabId = needTab(params, (await pins())[conv]);
    await existingTab(tabId);
    if (guard) await guard.check(conv, tabId);
    await chrome.tabs.remove(tabId);
    if (guard) await guard.closed(tabId);
    await unpinTab(tabId);
    return { closed: true, tabId: params.tabId ?? tabId, clientId: (await identity()).clientId };
  },
  async 'Vellum.attach'(params, conv, guard) {
    const tabId = needTab(params, (await pins())[conv]);
    await existingTab(tabId);
    if (guard) await guard.borrow(conv, tabId);
    await ensureAttached(tabId);
    await pin(conv, tabId);
    return { attached: true, target: { tabId } };
  },
  async 'Vellum.detach'(params, conv, guard) {
    const tabId = needTab(params, (await pins())[conv]);
    let returned = true;
    if (guard) {
      await guard.check(conv, tabId);
      // A borrowed tab: access ends, then it goes back to its window.
      returned = await guard.returned(conv, tabId);
    }
    attached.delete(tabId);
    try {
      await chrome.debugger.detach({ tabId });
    } catch (e) {
      if (!/not attached|No tab with given id/i.test(String(e && e.message))) throw debuggerError(e, { tabId });
    }
    const out = { detached: true, target: { tabId } };
    if (!returned) out.returned = false; // the tab stays in the Agent Window
    return out;
  },
  async 'Vellum.requestHelp'(params, conv, guard, requestId) {
    const tabId = params.tabId != null ? needTab(params) : await tabFor(conv, guard);
    if (guard) await guard.check(conv, tabId);
    const message = typeof params.message === 'string' ? params.message.slice(0, 500) : '';
    return requestHelp(tabId, message, ensureAttached, requestId);
  },
};

/**
 * CDP methods that move files between the page and the browser's machine
 * (and a drag that carries files): a remote task gets the "unsupported"
 * error for them.
 */
const FILE_TRANSFER = new Set([
  'DOM.setFileInputFiles', 'Page.setInterceptFileChooserDialog',
  'Page.setDownloadBehavior', 'Browser.setDownloadBehavior', 'Browser.cancelDownload',
]);

function movesFiles(method, params) {
  if (FILE_TRANSFER.has(method)) return true;
  const files = method === 'Input.dispatchDragEvent' && params.data && params.data.files;
  return Array.isArray(files) && files.length > 0;
}

/** The tab a CDP target id belongs to, or null. */
async function tabOfTarget(targetId) {
  for (const [tabId, t] of tabTargets) if (t === targetId) return tabId;
  const targets = await chrome.debugger.getTargets();
  const t = targets.find((x) => x.id === targetId);
  return t && t.tabId != null ? t.tabId : null;
}

/**
 * Executes one host_browser_request message and resolves to the result as
 * the wire carries it: {content, isError}, content being the JSON text of
 * the CDP result or of the error ({code, message}); it never rejects.
 */
export async function executeToContent(msg, timing, guard) {
  try {
    return { content: JSON.stringify(await execute(msg, timing, guard)), isError: false };
  } catch (e) {
    const err = e instanceof CommandError ? e : new CommandError('transport_error', String((e && e.message) || e));
    return { content: JSON.stringify(err.toContent()), isError: true };
  }
}

/**
 * Executes one host_browser_request message. Resolves to the CDP result
 * object, or rejects with a CommandError. timing.ms receives the time spent
 * in chrome.debugger.sendCommand. guard, given for the commands of a remote
 * socket only, enforces tab ownership (REM-8, lib/ownership.js); local mode
 * passes none.
 */
export async function execute(msg, timing, guard) {
  const method = msg.cdpMethod;
  const params = msg.cdpParams || {};
  if (typeof method !== 'string' || method === '') throw new CommandError(-32600, 'cdpMethod is required');
  if (method.startsWith('Vellum.')) {
    const op = vellum[method];
    if (!op) throw new CommandError(-32601, `'${method}' wasn't found`);
    return op(params, msg.conversationId || '', guard, msg.requestId);
  }
  if (guard && movesFiles(method, params)) {
    throw new CommandError('unsupported', `${method}: remote upload and download are unsupported`);
  }
  let target;
  const sid = msg.cdpSessionId;
  if (sid && /^[0-9]+$/.test(sid)) {
    target = { tabId: Number(sid) };
  } else if (sid && childSessions.has(sid)) {
    target = { tabId: childSessions.get(sid), sessionId: sid };
  } else if (sid) {
    const tabId = await tabOfTarget(sid);
    if (tabId == null) throw new CommandError('cdp_session_not_found', `no tab or session for cdpSessionId ${sid}`);
    target = { tabId };
  } else {
    target = { tabId: await tabFor(msg.conversationId || '', guard) };
  }
  const conv = msg.conversationId || '';
  if (guard) await guard.check(conv, target.tabId);
  if (guard && method.startsWith('Input.') && waitingOn(target.tabId)) {
    throw new CommandError('help_pending', `tab ${target.tabId} waits for the browser user's help; only the user answers it`);
  }
  await ensureAttached(target.tabId);
  const watch = guard && armsObservation(method, params) ? await guard.watch(conv, target.tabId) : null;
  if (!watch) return send(target, method, params, timing);
  // Native click or key input: observe the tabs it opens (lib/observe.js),
  // armed right before the dispatch.
  watch.arm();
  let res;
  try {
    res = await send(target, method, params, timing);
  } catch (e) {
    watch.cancel();
    throw e;
  } finally {
    await guard.observed(conv, watch);
  }
  return res;
}

/**
 * Returns a borrowed tab (REM-8): detaches the debugger and forgets the
 * conversations pinned to it; the tab stays open. Never rejects.
 */
export async function releaseTab(tabId) {
  attached.delete(tabId);
  try { await chrome.debugger.detach({ tabId }); } catch { /* not attached, or gone */ }
  await unpinTab(tabId).catch(() => {});
}

function invalidateTab(tabId, reason) {
  attached.delete(tabId);
  for (const [sid, t] of childSessions) {
    if (t === tabId) {
      childSessions.delete(sid);
      sink.invalidate({ sessionId: sid, reason });
    }
  }
  const targetId = tabTargets.get(tabId);
  if (targetId && !invalidated.has(tabId)) {
    invalidated.add(tabId);
    sink.invalidate({ targetId, reason });
  }
}

// Listeners are registered at the top level so that Chrome can wake the
// worker for them.
chrome.debugger.onEvent.addListener((source, method, params) => {
  if (method === 'Inspector.targetCrashed' && source.tabId != null && !source.sessionId) crashed(source.tabId);
  if (method === 'Target.attachedToTarget' && params && params.sessionId) {
    childSessions.set(params.sessionId, source.tabId);
  } else if (method === 'Target.detachedFromTarget' && params && params.sessionId) {
    childSessions.delete(params.sessionId);
  }
  // The Vellum extension's shape ({type, method, params, cdpSessionId} with
  // the session id only for a child session's event), plus the tab the event
  // came from, so the server routes it to the conversation of that tab
  // (WIRE-4).
  const ev = { type: 'host_browser_event', method, params: params ?? {} };
  if (source.sessionId) ev.cdpSessionId = source.sessionId;
  if (source.tabId != null) ev.tabId = String(source.tabId);
  sink.event(ev);
});

chrome.debugger.onDetach.addListener((source, reason) => {
  if (source.tabId == null) return;
  // A closed tab reports both this and tabs.onRemoved; invalidateTab posts once.
  invalidateTab(source.tabId, reason === 'target_closed' ? 'tab_closed' : `debugger_detached:${reason}`);
});

chrome.tabs.onRemoved.addListener((tabId) => {
  crashes.delete(tabId);
  lostTabs.delete(tabId);
  invalidateTab(tabId, 'tab_closed');
  tabTargets.delete(tabId);
  unpinTab(tabId).catch(() => {});
});
