// The browser user's confirmation of a borrow: a small extension window
// (confirm.html) that names the tab and offers Allow and Deny. Closing the
// window declines. Only the user answers it: the page is the extension's
// own, so no website script can reach its buttons.

const asks = new Map(); // id → {resolve, windowId, tab}

/** Counters a test reads: asks opened, answered each way. */
export const confirmStats = { asks: 0, allowed: 0, declined: 0 };
const waiters = []; // [counter, n, resolve]

function bump(counter) {
  confirmStats[counter]++;
  for (let i = waiters.length - 1; i >= 0; i--) {
    const [c, n, resolve] = waiters[i];
    if (c === counter && confirmStats[c] >= n) { waiters.splice(i, 1); resolve(confirmStats[c]); }
  }
}

/** Resolves once confirmStats[counter] reached n in this worker life. */
export function whenConfirm(counter, n) {
  if (confirmStats[counter] >= n) return Promise.resolve(confirmStats[counter]);
  return new Promise((resolve) => waiters.push([counter, n, resolve]));
}

function settle(id, allow) {
  const a = asks.get(id);
  if (!a) return;
  asks.delete(id);
  bump(allow ? 'allowed' : 'declined');
  a.resolve(allow);
  if (a.windowId != null) chrome.windows.remove(a.windowId).catch(() => {});
}

/**
 * Asks the browser user whether a remote task may borrow tab; resolves
 * true (allowed) or false (denied, window closed, or declineAll).
 */
export async function ask(tab) {
  const id = crypto.randomUUID();
  const answer = new Promise((resolve) => asks.set(id, { resolve, windowId: null, tab }));
  try {
    const win = await chrome.windows.create({
      type: 'popup', focused: true, width: 440, height: 240,
      url: chrome.runtime.getURL(`confirm.html#${id}`),
    });
    const a = asks.get(id);
    if (a) a.windowId = win.id; else chrome.windows.remove(win.id).catch(() => {});
  } catch {
    settle(id, false);
  }
  bump('asks');
  return answer;
}

/** Declines every open ask (the task's connection ended). */
export function declineAll() {
  for (const id of [...asks.keys()]) settle(id, false);
}

chrome.windows.onRemoved.addListener((windowId) => {
  for (const [id, a] of asks) if (a.windowId === windowId) settle(id, false);
});

// {type:"remote.borrow.get", id} → {title, url}; {type:"remote.borrow.answer", id, allow}.
chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  if (!msg || (msg.type !== 'remote.borrow.get' && msg.type !== 'remote.borrow.answer')) return false;
  // Only the extension's own page answers.
  if (sender.id !== chrome.runtime.id || !String(sender.url || '').startsWith(chrome.runtime.getURL('confirm.html'))) {
    reply({ error: 'not the confirmation page' });
    return false;
  }
  const a = asks.get(msg.id);
  if (!a) { reply({ error: 'this request is over' }); return false; }
  if (msg.type === 'remote.borrow.get') reply({ title: a.tab.title || '', url: a.tab.url || '' });
  else { settle(msg.id, msg.allow === true); reply({ ok: true }); }
  return false;
});
