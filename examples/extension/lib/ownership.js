// Tab ownership of remote tasks (REM-8). A task is a conversation served
// over the remote socket. It may read, screenshot and send input only to
// tabs it created (Vellum.createTab, or the background tab a conversation
// without a tab gets) or explicitly borrowed (Vellum.attach or
// Vellum.selectTab on a tab nobody claims); listing tabs (Vellum.listTabs,
// Vellum.findTab) stays open so that a task can pick the tab to borrow.
// Vellum.detach returns a borrowed tab; closing an owned tab ends its claim.
//
// When the socket that carried the task's commands ends (disconnect, stop,
// revocation, or a worker that died with it), every claim is released:
// created tabs are closed, borrowed tabs are returned (debugger detached,
// left open), and the user's other tabs are untouched. The claims live in
// chrome.storage.session, so a worker that was killed with claims in place
// releases them when it starts again, before any new socket serves a
// command. A command of an ended socket that creates a tab afterwards gets
// it closed at once; one that tries to borrow is refused.
//
// Local mode never consults this module.

import { CommandError, releaseTab } from './executor.js';

const KEY = 'remoteTabs';

/** The code of a refused read or action on a tab the task does not own. */
export const CODE_NOT_OWNED = 'tab_not_owned';

let claims = null; // tabId (string) → {conv, kind: 'created' | 'borrowed'}
let writing = Promise.resolve();

/** Counters a test reads: releases (claim sets released) and the tabs each way. */
export const ownershipStats = { releases: 0, closed: 0, returned: 0, refused: 0 };

async function load() {
  if (claims === null) {
    const { [KEY]: stored } = await chrome.storage.session.get(KEY);
    if (claims === null) claims = stored || {};
  }
  return claims;
}

function persist() {
  const snapshot = { ...claims };
  writing = writing.then(() => chrome.storage.session.set({ [KEY]: snapshot })).catch(() => {});
  return writing;
}

/** The claim on tabId, or null. */
export async function claimOf(tabId) {
  return (await load())[String(tabId)] || null;
}

/** The tabs conv owns, created ones first: [{tabId, kind}]. */
export async function tabsOf(conv) {
  const c = await load();
  const out = [];
  for (const [id, v] of Object.entries(c)) if (v.conv === conv) out.push({ tabId: Number(id), kind: v.kind });
  out.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'created' ? -1 : 1));
  return out;
}

/**
 * A guard for the commands of one remote socket: the executor calls it
 * when a task creates, borrows, returns or touches a tab. end() releases
 * every claim; afterwards the guard refuses borrows and closes new tabs.
 */
export class Guard {
  constructor() { this.live = true; }

  /** Records tabId as created by conv (an ended guard closes it instead). */
  async created(conv, tabId) {
    const c = await load();
    // live is read after the await: end() flips it synchronously, before
    // releaseAll takes its snapshot, so no claim can slip past a release.
    if (!this.live) {
      await chrome.tabs.remove(tabId).catch(() => {});
      throw new CommandError('cancelled', 'the remote connection of this task ended');
    }
    c[String(tabId)] = { conv, kind: 'created' };
    await persist();
  }

  /**
   * Lets conv use tabId, borrowing it when nobody claims it. A tab another
   * task claims is refused (one claim per tab).
   */
  async borrow(conv, tabId) {
    const c = await load();
    if (!this.live) throw new CommandError('cancelled', 'the remote connection of this task ended');
    const cur = c[String(tabId)];
    if (cur && cur.conv === conv) return;
    if (cur) {
      ownershipStats.refused++;
      throw new CommandError(CODE_NOT_OWNED, `tab ${tabId} belongs to another task`);
    }
    c[String(tabId)] = { conv, kind: 'borrowed' };
    await persist();
  }

  /** Ends conv's borrow of tabId (Vellum.detach); a created tab stays owned. */
  async returned(conv, tabId) {
    const c = await load();
    const cur = c[String(tabId)];
    if (cur && cur.conv === conv && cur.kind === 'borrowed') {
      delete c[String(tabId)];
      await persist();
    }
  }

  /** Throws tab_not_owned unless conv created or borrowed tabId. */
  async check(conv, tabId) {
    const cur = (await load())[String(tabId)];
    if (cur && cur.conv === conv) return;
    ownershipStats.refused++;
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

  /** Ends the guard and releases every claim (see releaseAll); idempotent. */
  end() {
    if (!this.ending) {
      this.live = false;
      this.ending = releaseAll();
    }
    return this.ending;
  }
}

let releasing = Promise.resolve();

/**
 * Releases every claim: closes the created tabs and returns the borrowed
 * ones (debugger detached, tab left open). Serialized; resolves when done,
 * whatever Chrome answered for each tab.
 */
export function releaseAll() {
  releasing = releasing.then(async () => {
    const c = await load();
    const all = Object.entries(c);
    claims = {};
    await persist();
    for (const [id, v] of all) {
      const tabId = Number(id);
      if (v.kind === 'created') {
        try { await chrome.tabs.remove(tabId); ownershipStats.closed++; } catch { /* already gone */ }
      } else {
        await releaseTab(tabId);
        ownershipStats.returned++;
      }
    }
    ownershipStats.releases++;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (ownershipStats.releases >= waiters[i][0]) { waiters[i][1](ownershipStats.releases); waiters.splice(i, 1); }
    }
  });
  return releasing;
}

const waiters = []; // [n, resolve]

/** Resolves once n releases finished in this worker life. */
export function whenReleased(n) {
  if (ownershipStats.releases >= n) return Promise.resolve(ownershipStats.releases);
  return new Promise((resolve) => waiters.push([n, resolve]));
}

// A closed tab ends its claim, whoever closed it.
chrome.tabs.onRemoved.addListener((tabId) => {
  load().then((c) => {
    if (c[String(tabId)]) { delete c[String(tabId)]; return persist(); }
    return undefined;
  }).catch(() => {});
});
