// Service worker of the browserchain reference extension (PXY-9).
//
// Lifecycle: an MV3 worker with no debugger attached is killed after 30 s
// without extension-API calls and does not restart on its own (SPEC §1). So:
//   - while the relay runs, a timer makes a cheap extension API call every
//     KEEPALIVE_MS (≤ 20 s), which keeps the worker and its SSE stream alive
//     (traffic on the result WebSocket also counts as activity since Chrome
//     116, but an idle socket does not, so the timer stays);
//   - an alarm (vellum-relay-keepalive, every 30 s, the minimum) is the
//     safety net: it wakes a worker that was killed anyway and restarts the
//     relay, which resumes the stream with Last-Event-ID.

import * as relay from './lib/relay.js';
import * as remote from './lib/remote.js';
import { Health, getHealth, identity, loadCreds, loadSettings, saveSettings, setHealth } from './lib/state.js';

const ALARM = 'vellum-relay-keepalive';
const KEEPALIVE_MS = 20 * 1000;

let keepalive = null;

function startKeepalive() {
  if (keepalive) return;
  keepalive = setInterval(() => {
    if (!relay.isRunning()) { clearInterval(keepalive); keepalive = null; return; }
    chrome.runtime.getPlatformInfo().catch(() => {});
  }, KEEPALIVE_MS);
}

async function boot(opts) {
  await chrome.alarms.create(ALARM, { periodInMinutes: 0.5 });
  if (await remote.selected()) { await remote.start(); return; } // REM-7: never falls back to local
  await relay.start(opts);
  if (relay.isRunning()) startKeepalive();
}

chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name !== ALARM) return;
  if (relay.isRunning()) relay.nudge(); else boot().catch(() => {});
});

chrome.runtime.onStartup.addListener(() => { boot().catch(() => {}); });
chrome.runtime.onInstalled.addListener(() => { boot().catch(() => {}); });

// Popup commands: {type:"status"} | {type:"connect", serverUrl?} | {type:"pause"}
// | {type:"prefs", borrowConfirm} (the browser user's borrow confirmation).
chrome.runtime.onMessage.addListener((msg, _sender, reply) => {
  if (msg && typeof msg.type === 'string' && msg.type.startsWith('remote.')) return false; // lib/remote.js answers
  (async () => {
    if (msg && msg.type === 'connect') {
      await remote.leave(); // Connect selects the local connection
      relay.stop();
      const patch = { autoConnect: true };
      if (msg.serverUrl) patch.serverUrl = msg.serverUrl;
      await saveSettings(patch);
      await setHealth(Health.RECONNECTING, 'connecting');
      await boot({ force: true });
    } else if (msg && msg.type === 'prefs') {
      await saveSettings({ borrowConfirm: msg.borrowConfirm !== false });
    } else if (msg && msg.type === 'pause') {
      relay.stop();
      remote.stop(); // a paused remote mode stays stopped until the next pairing
      await saveSettings({ autoConnect: false });
      await setHealth(Health.PAUSED);
    }
    const [settings, stored, ids, creds] = await Promise.all([loadSettings(), getHealth(), identity(), loadCreds()]);
    // Remote mode is connected only while its socket is open (a killed worker left its last state behind).
    const health = settings.mode === 'remote' && stored.state === Health.CONNECTED && !remote.isConnected()
      ? { ...stored, state: Health.RECONNECTING } : stored;
    return {
      settings, health, clientId: ids.clientId,
      actorPrincipalId: creds && creds.actorPrincipalId, stats: relay.stats,
    };
  })().then(reply, (e) => reply({ error: String((e && e.message) || e) }));
  return true; // reply asynchronously
});

// Test and debugging hooks, reachable through the worker's DevTools target.
globalThis.vellum = {
  stats: relay.stats,
  whenSuppressed: relay.whenSuppressed,
  whenConnected: relay.whenConnected,
  whenResultSocket: relay.whenResultSocket,
  whenResults: relay.whenResults,
  health: getHealth,
  isConnected: relay.isConnected,
};

// Every worker start (browser start, alarm, event) resumes the relay.
boot().catch(() => {});
