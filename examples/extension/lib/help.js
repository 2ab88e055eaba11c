// Vellum.requestHelp: a task waits for the browser user. The extension
// shows a help bar on top of the task's tab — the task's message, Done and
// Cancel — and the command answers {outcome: "answered"} when the user
// clicks Done, {outcome: "cancelled"} on Cancel, when the page removes the
// bar, or when the task's connection ends (cancelAll). The bar lives in a
// closed shadow root and counts only trusted (real input) clicks, so the
// page's own scripts cannot answer for the user. A navigation of the tab
// shows the bar again in the new document. While the task waits, the UI
// channel (lib/ui.js) keeps answering previews, which show the bar, and the
// task's own input to that tab is refused (help_pending): only the user
// answers.

import { CommandError } from './executor.js';

/** At most this many documents show the bar for one request (navigations). */
const MAX_SHOWINGS = 20;

const waits = new Set(); // {cancel, tabId, id, key}

/** Counters a test reads: requests waiting, and answered each way. */
export const helpStats = { waiting: 0, answered: 0, cancelled: 0 };
const waiters = [];
function bump(counter) {
  helpStats[counter]++;
  for (let i = waiters.length - 1; i >= 0; i--) {
    const [c, n, resolve] = waiters[i];
    if (c === counter && helpStats[c] >= n) { waiters.splice(i, 1); resolve(helpStats[c]); }
  }
}
/** Resolves once helpStats[counter] reached n in this worker life. */
export function whenHelp(counter, n) {
  if (helpStats[counter] >= n) return Promise.resolve(helpStats[counter]);
  return new Promise((resolve) => waiters.push([counter, n, resolve]));
}

/** The bar's geometry, in CSS px from the viewport's top right corner. */
export const BAR = Object.freeze({ height: 56, buttonTop: 8, buttonWidth: 100, buttonHeight: 40, doneRight: 8, cancelRight: 116 });

function overlay(id, message) {
  return `new Promise((resolve) => {
  const host = document.createElement('div');
  host.id = ${JSON.stringify(id)};
  host.style.cssText = 'all: initial; position: fixed; top: 0; left: 0; right: 0; height: ${BAR.height}px; z-index: 2147483647;';
  const root = host.attachShadow({ mode: 'closed' });
  root.innerHTML = '<style>'
    + '.bar { position: absolute; inset: 0; background: #fff6d6; color: #4a3500; border-bottom: 2px solid #d4a400; font: 14px system-ui, sans-serif; }'
    + '.msg { position: absolute; left: 12px; top: 0; right: 232px; line-height: ${BAR.height}px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }'
    + 'button { position: absolute; top: ${BAR.buttonTop}px; width: ${BAR.buttonWidth}px; height: ${BAR.buttonHeight}px; font: inherit; }'
    + '.done { right: ${BAR.doneRight}px; } .cancel { right: ${BAR.cancelRight}px; }'
    + '</style><div class="bar"><span class="msg"></span><button class="cancel">Cancel</button><button class="done">Done</button></div>';
  root.querySelector('.msg').textContent = ${JSON.stringify('The assistant needs your help: ' + message)};
  const answer = (sel, v) => root.querySelector(sel).addEventListener('click', (e) => {
    if (!e.isTrusted) return;
    resolve(v);
    host.remove();
  });
  answer('.done', 'answered');
  answer('.cancel', 'cancelled');
  new MutationObserver(() => { if (!host.isConnected) resolve('cancelled'); })
    .observe(document.documentElement, { childList: true, subtree: true });
  (document.body || document.documentElement).appendChild(host);
})`;
}

function removeOverlay(tabId, id) {
  chrome.debugger.sendCommand({ tabId }, 'Runtime.evaluate', {
    expression: `document.getElementById(${JSON.stringify(id)})?.remove(); true`,
  }).catch(() => {});
}

/**
 * Shows the help bar with message on tabId (debugger attached by attach)
 * and resolves {outcome: "answered" | "cancelled"} once the user answered
 * or the wait was cancelled (cancel(key), cancelAll). Rejects with a
 * CommandError when the tab cannot show it (closed, a page the debugger
 * cannot script).
 */
export async function requestHelp(tabId, message, attach, key) {
  await attach(tabId);
  const id = `bc-help-${crypto.randomUUID()}`;
  let cancel;
  const cancelled = new Promise((resolve) => { cancel = () => resolve({ outcome: 'cancelled' }); });
  const w = { cancel, tabId, id, key };
  waits.add(w);
  bump('waiting');
  try {
    for (let i = 0; i < MAX_SHOWINGS; i++) {
      const shown = chrome.debugger.sendCommand({ tabId }, 'Runtime.evaluate', {
        expression: overlay(id, message), awaitPromise: true, returnByValue: true,
      }).then((res) => ({ res }), (err) => ({ err }));
      const r = await Promise.race([shown, cancelled]);
      if (r.outcome) { removeOverlay(tabId, id); return done(r.outcome); }
      if (r.err) {
        // The document went away under the bar: show it in the next one
        // once that one loaded.
        if (/context was destroyed|navigated or closed|Cannot find (default )?(execution )?context/i.test(String(r.err.message))) {
          if ((await Promise.race([loaded(tabId), cancelled])).outcome) return done('cancelled');
          continue;
        }
        throw new CommandError('transport_error', `the help bar cannot be shown on tab ${tabId}: ${r.err.message}`);
      }
      const v = r.res && r.res.result && r.res.result.value;
      return done(v === 'answered' ? 'answered' : 'cancelled');
    }
    throw new CommandError('transport_error', `tab ${tabId} navigated ${MAX_SHOWINGS} times while waiting for help`);
  } finally {
    waits.delete(w);
  }
}

/** Resolves {} once tabId's status is complete (at once when it is). */
function loaded(tabId) {
  return new Promise((resolve) => {
    const finish = () => { chrome.tabs.onUpdated.removeListener(listener); resolve({}); };
    const listener = (id, info) => { if (id === tabId && info.status === 'complete') finish(); };
    chrome.tabs.onUpdated.addListener(listener);
    chrome.tabs.get(tabId).then((t) => { if (t.status === 'complete') finish(); }, finish);
  });
}

function done(outcome) {
  bump(outcome);
  return { outcome };
}

/** Whether a help request waits on tabId. */
export function waitingOn(tabId) {
  for (const w of waits) if (w.tabId === tabId) return true;
  return false;
}

/** Cancels the wait of request key (the server cancelled it). */
export function cancel(key) {
  for (const w of [...waits]) if (key && w.key === key) w.cancel();
}

/** Cancels every wait (the task's connection ended); the bars are removed. */
export function cancelAll() {
  for (const w of [...waits]) w.cancel();
}
