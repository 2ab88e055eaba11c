// Tabs and Agent Windows of remote tasks. A task is a conversation
// served over the remote socket; its tabs live in its own Agent Window, a
// normal window the extension opens for it. It may read, screenshot and
// send input only to tabs it controls:
//   - created: Vellum.createTab, or the background tab a conversation
//     without a tab gets; opened in the Agent Window, closed on stop;
//   - borrowed: Vellum.attach or Vellum.selectTab on a user tab nobody
//     controls, after the browser user allowed it when the "borrowConfirm"
//     setting (chrome.storage.local, default on) asks for it — no request
//     parameter changes that. The tab moves into the Agent Window;
//     Vellum.detach or stop returns it to its window and ends all access;
//   - observed: a tab a controlled tab opened in the same Agent Window
//     during native click or key input (lib/observe.js); released, not
//     closed, on stop; closing it or moving it out of the window ends it.
// Listing tabs (Vellum.listTabs, Vellum.findTab) stays open so that a task
// can pick the tab to borrow. A tab inside an Agent Window that the task
// does not control is never borrowed (move it to a regular window first);
// a tab controlled by any task cannot be claimed a second time.
//
// When the socket that carried the task's commands ends, every claim is
// released: borrowed tabs are returned, created tabs closed, observed and
// user tabs left open. A return that fails leaves its tab in the Agent
// Window, which therefore stays; such a tab must be moved out or closed
// before the extension connects again (whenResolved). Claims live in
// chrome.storage.session, so a worker killed with claims in place releases
// them when it starts again, before any new socket serves a command.
//
// Local mode never consults this module.

import { CommandError, releaseTab } from './executor.js';
import { loadSettings } from './state.js';
import { ask, declineAll } from './confirm.js';
import { Watch, realClock, withinBudget } from './observe.js';

const KEY = 'remoteTabs';
const WINDOWS_KEY = 'remoteWindows';
const UNRESOLVED_KEY = 'remoteUnresolved';

/** The code of a refused read or action on a tab the task does not control. */
export const CODE_NOT_OWNED = 'tab_not_owned';
/** The code of a borrow the browser user declined. */
export const CODE_DECLINED = 'borrow_declined';

let claims = null;     // tabId (string) → {conv, kind: 'created'|'borrowed'|'observed', home?: {windowId, index}}
let windows = null;    // conv → windowId of its Agent Window
let unresolved = null; // tabId (string) → windowId: tabs whose return failed
let writing = Promise.resolve();
const reserved = new Set(); // tabIds with a borrow in progress
const watches = new Set();  // open Watches
let clock = realClock;

/** Counters a test reads, and scripted faults. */
export const ownershipStats = {
  releases: 0, closed: 0, returned: 0, returnFailed: 0, released: 0, refused: 0,
  armed: 0, candidates: 0, observed: 0, notObserved: 0,
};
const statWaiters = []; // [counter, n, resolve]
function bump(counter) {
  ownershipStats[counter]++;
  for (let i = statWaiters.length - 1; i >= 0; i--) {
    const [c, n, resolve] = statWaiters[i];
    if (c === counter && ownershipStats[c] >= n) { statWaiters.splice(i, 1); resolve(ownershipStats[c]); }
  }
}
/** Resolves once ownershipStats[counter] reached n in this worker life. */
export function whenOwnership(counter, n) {
  if (ownershipStats[counter] >= n) return Promise.resolve(ownershipStats[counter]);
  return new Promise((resolve) => statWaiters.push([counter, n, resolve]));
}

/** Test hooks: the tab ids whose next return fails; the observation clock. */
export const ownershipHooks = {
  failReturnOf: new Set(),
  useClock(c) { clock = c; },
};

async function load() {
  if (claims === null) {
    const got = await chrome.storage.session.get([KEY, WINDOWS_KEY, UNRESOLVED_KEY]);
    if (claims === null) {
      claims = got[KEY] || {};
      windows = got[WINDOWS_KEY] || {};
      unresolved = got[UNRESOLVED_KEY] || {};
    }
  }
  return claims;
}

function persist() {
  const snapshot = { [KEY]: { ...claims }, [WINDOWS_KEY]: { ...windows }, [UNRESOLVED_KEY]: { ...unresolved } };
  writing = writing.then(() => chrome.storage.session.set(snapshot)).catch(() => {});
  return writing;
}

/** The claim on tabId, or null. */
export async function claimOf(tabId) {
  return (await load())[String(tabId)] || null;
}

/** The tabs conv controls, created ones first: [{tabId, kind}]. */
export async function tabsOf(conv) {
  const c = await load();
  const out = [];
  for (const [id, v] of Object.entries(c)) if (v.conv === conv) out.push({ tabId: Number(id), kind: v.kind });
  const rank = { created: 0, borrowed: 1, observed: 2 };
  out.sort((a, b) => rank[a.kind] - rank[b.kind]);
  return out;
}

/** The Agent Window of conv, or null. */
export async function windowOf(conv) {
  await load();
  return windows[conv] ?? null;
}

function isAgentWindow(windowId) {
  return Object.values(windows).includes(windowId);
}

const ended = () => new CommandError('cancelled', 'the remote connection of this task ended');

/**
 * A guard for the commands of one remote socket: the executor calls it
 * when a task creates, borrows, returns or touches a tab. end() releases
 * every claim; afterwards the guard refuses borrows and closes new tabs.
 */
export class Guard {
  constructor() { this.live = true; }

  /**
   * Opens a tab for conv in its Agent Window (opening the window first)
   * and records it as created; returns the tab id.
   */
  async newTab(conv, active) {
    await load();
    if (!this.live) throw ended();
    let tab = null;
    const win = windows[conv];
    if (win != null) {
      try { tab = await chrome.tabs.create({ windowId: win, url: 'about:blank', active }); } catch { /* window gone */ }
    }
    if (!tab) {
      const w = await chrome.windows.create({ url: 'about:blank', focused: false, type: 'normal' });
      windows[conv] = w.id;
      tab = w.tabs[0];
    }
    await this.created(conv, tab.id);
    return tab.id;
  }

  /** Records tabId as created by conv (an ended guard closes it instead). */
  async created(conv, tabId) {
    const c = await load();
    // live is read after the await: end() flips it synchronously, before
    // releaseAll takes its snapshot, so no claim can slip past a release.
    if (!this.live) {
      await chrome.tabs.remove(tabId).catch(() => {});
      throw ended();
    }
    c[String(tabId)] = { conv, kind: 'created' };
    await persist();
  }

  /**
   * Lets conv use tabId: a tab it controls already passes; a user tab
   * nobody controls is borrowed after the user's confirmation (when the
   * setting asks for it) and moved into conv's Agent Window. Refused
   * (tab_not_owned): a tab another task controls or is borrowing, a tab
   * inside an Agent Window; declined by the user: borrow_declined.
   */
  async borrow(conv, tabId) {
    const c = await load();
    if (!this.live) throw ended();
    const cur = c[String(tabId)];
    if (cur && cur.conv === conv) return;
    if (cur || reserved.has(tabId)) {
      bump('refused');
      throw new CommandError(CODE_NOT_OWNED, `tab ${tabId} is controlled by another task`);
    }
    let tab;
    try { tab = await chrome.tabs.get(tabId); } catch { throw new CommandError(-32000, `no tab with id ${tabId}`); }
    if (isAgentWindow(tab.windowId)) {
      bump('refused');
      throw new CommandError(CODE_NOT_OWNED, `tab ${tabId} is inside an Agent Window; move it to a regular window to borrow it`);
    }
    reserved.add(tabId);
    try {
      const allowed = (await loadSettings()).borrowConfirm === false || await ask(tab);
      const now = await load(); // a release in between replaced the claims
      if (!this.live) throw ended();
      if (!allowed) throw new CommandError(CODE_DECLINED, `the browser user declined to lend tab ${tabId}`);
      if (now[String(tabId)]) throw new CommandError(CODE_NOT_OWNED, `tab ${tabId} is controlled by another task`);
      try { tab = await chrome.tabs.get(tabId); } catch { throw new CommandError(-32000, `tab ${tabId} was closed`); }
      const home = { windowId: tab.windowId, index: tab.index };
      const win = windows[conv];
      let moved = false;
      if (win != null) {
        try { await chrome.tabs.move(tabId, { windowId: win, index: -1 }); moved = true; } catch { /* window gone */ }
      }
      if (!moved) windows[conv] = (await chrome.windows.create({ tabId, focused: false, type: 'normal' })).id;
      now[String(tabId)] = { conv, kind: 'borrowed', home };
      await persist();
    } finally {
      reserved.delete(tabId);
    }
  }

  /**
   * Returns conv's borrowed tabId (Vellum.detach): content access ends
   * first, then the tab goes back to its window. Resolves whether it
   * got there; a created or observed tab stays controlled.
   */
  async returned(conv, tabId) {
    const c = await load();
    const cur = c[String(tabId)];
    if (!cur || cur.conv !== conv || cur.kind !== 'borrowed') return true;
    delete c[String(tabId)];
    await persist();
    return returnTab(tabId, cur);
  }

  /** Throws tab_not_owned unless conv controls tabId. */
  async check(conv, tabId) {
    const cur = (await load())[String(tabId)];
    if (cur && cur.conv === conv) return;
    bump('refused');
    throw new CommandError(CODE_NOT_OWNED,
      `tab ${tabId} was neither created nor borrowed by this task; borrow it with Vellum.attach first`);
  }

  /** Forgets the claim on a tab the task closed. */
  async closed(tabId) {
    const c = await load();
    if (c[String(tabId)]) {
      delete c[String(tabId)];
      await persist();
    }
  }

  /**
   * Starts observing what conv's tabId opens during one native input
   * command; null when the tab is not conv's. Call arm() right before
   * the input is dispatched, then observed(conv, watch).
   */
  async watch(conv, tabId) {
    const cur = (await load())[String(tabId)];
    if (!this.live || !cur || cur.conv !== conv) return null;
    const w = new Watch(tabId, clock);
    const arm = w.arm.bind(w);
    w.arm = () => { arm(); bump('armed'); };
    watches.add(w);
    return w;
  }

  /**
   * Waits for the rest of w's interval, then grants conv the qualifying
   * candidates within the processing budget: each must lie in conv's
   * Agent Window, as must the source (still conv's), and be unclaimed and
   * not being borrowed. Never rejects.
   */
  async observed(conv, w) {
    let candidates;
    try { candidates = await w.settle(); } finally { watches.delete(w); }
    if (candidates.length === 0) return;
    await withinBudget(async (budget) => {
      for (const tabId of candidates) {
        const ok = await this.qualifies(conv, w.source, tabId);
        // The last check and the grant run without an await in between.
        const c = claims;
        if (ok && budget.valid && this.live && !c[String(tabId)] && !reserved.has(tabId)) {
          c[String(tabId)] = { conv, kind: 'observed' };
          bump('observed');
          await persist();
        } else {
          bump('notObserved');
        }
      }
    }, clock);
  }

  async qualifies(conv, sourceTabId, tabId) {
    const c = await load();
    const src = c[String(sourceTabId)];
    const win = windows[conv];
    if (!this.live || !src || src.conv !== conv || win == null) return false;
    try {
      const [s, t] = await Promise.all([chrome.tabs.get(sourceTabId), chrome.tabs.get(tabId)]);
      return s.windowId === win && t.windowId === win;
    } catch { return false; }
  }

  /** Ends the guard and releases every claim (see releaseAll); idempotent. */
  end() {
    if (!this.ending) {
      this.live = false;
      declineAll();
      for (const w of watches) w.cancel();
      watches.clear();
      this.ending = releaseAll();
    }
    return this.ending;
  }
}

/**
 * Returns a borrowed tab: debugger detached, moved back to the window it
 * came from (a new window when that one is gone). Resolves false when the
 * move failed: the tab then stays where it is and is recorded unresolved.
 */
async function returnTab(tabId, claim) {
  await releaseTab(tabId);
  try {
    if (ownershipHooks.failReturnOf.delete(tabId)) throw new Error('scripted return failure');
    const home = claim.home || {};
    try {
      await chrome.tabs.move(tabId, { windowId: home.windowId, index: home.index ?? -1 });
    } catch (e) {
      if (!/No window with id/i.test(String(e && e.message))) throw e;
      await chrome.windows.create({ tabId, focused: false, type: 'normal' });
    }
    bump('returned');
    return true;
  } catch {
    try {
      const t = await chrome.tabs.get(tabId);
      unresolved[String(tabId)] = t.windowId;
    } catch { /* the tab is gone: nothing to resolve */ }
    await persist();
    bump('returnFailed');
    return false;
  }
}

let releasing = Promise.resolve();

/**
 * Releases every claim: returns the borrowed tabs, closes the created
 * ones, releases the observed ones (debugger detached, tab left open).
 * A window holding a tab whose return failed, an observed tab or a user
 * tab stays open. Serialized; resolves when done, whatever Chrome
 * answered for each tab.
 */
export function releaseAll() {
  releasing = releasing.then(async () => {
    const c = await load();
    const all = Object.entries(c);
    claims = {};
    windows = {};
    await persist();
    for (const [id, v] of all) if (v.kind === 'borrowed') await returnTab(Number(id), v);
    for (const [id, v] of all) {
      const tabId = Number(id);
      if (v.kind === 'created') {
        try { await chrome.tabs.remove(tabId); bump('closed'); } catch { /* already gone */ }
      } else if (v.kind === 'observed') {
        await releaseTab(tabId);
        bump('released');
      }
    }
    bump('releases');
  });
  return releasing;
}

/** Resolves once n releases finished in this worker life. */
export function whenReleased(n) {
  return whenOwnership('releases', n);
}

/** The tabs whose return failed and that are still in the window they were left in: [{tabId, windowId}]. */
export async function pendingReturns() {
  await load();
  const out = [];
  let changed = false;
  for (const [id, windowId] of Object.entries(unresolved)) {
    let t = null;
    try { t = await chrome.tabs.get(Number(id)); } catch { /* closed */ }
    if (t && t.windowId === windowId) out.push({ tabId: Number(id), windowId });
    else { delete unresolved[id]; changed = true; }
  }
  if (changed) await persist();
  return out;
}

const resolveWaiters = new Set();
function recheckResolved() {
  if (resolveWaiters.size === 0) return;
  pendingReturns().then((left) => {
    if (left.length > 0) return;
    for (const r of resolveWaiters) r();
    resolveWaiters.clear();
  }, () => {});
}

/**
 * Resolves once no failed return is pending: the browser user moved each
 * such tab out of the window it was left in, or closed it.
 */
export async function whenResolved() {
  if ((await pendingReturns()).length === 0) return;
  await new Promise((resolve) => { resolveWaiters.add(resolve); recheckResolved(); });
}

/** Offers a navigation target event to every open watch. */
function offer(ev) {
  for (const w of watches) if (w.offer(ev)) bump('candidates');
}

// A closed tab ends its claim, whoever closed it; an observed tab moved
// out of its window ends its claim too.
chrome.tabs.onRemoved.addListener((tabId) => {
  load().then((c) => {
    recheckResolved();
    if (c[String(tabId)]) { delete c[String(tabId)]; return persist(); }
    return undefined;
  }).catch(() => {});
});
chrome.tabs.onDetached.addListener((tabId) => {
  load().then((c) => {
    recheckResolved();
    const cur = c[String(tabId)];
    if (cur && cur.kind === 'observed') { delete c[String(tabId)]; return persist(); }
    return undefined;
  }).catch(() => {});
});
chrome.tabs.onAttached.addListener(() => recheckResolved());
chrome.windows.onRemoved.addListener((windowId) => {
  load().then(() => {
    for (const [conv, w] of Object.entries(windows)) if (w === windowId) delete windows[conv];
    return persist();
  }).catch(() => {});
});
chrome.webNavigation.onCreatedNavigationTarget.addListener((d) => offer(d));
