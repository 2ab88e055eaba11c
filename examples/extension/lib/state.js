// Persistent settings, identity, credentials and health of the relay.
//
// chrome.storage.local (survives browser restarts): settings, clientId,
// deviceId, credentials. chrome.storage.session (survives service-worker
// restarts, cleared with the browser): health, Last-Event-ID, tab pins.

export const DEFAULT_SETTINGS = Object.freeze({
  serverUrl: 'http://127.0.0.1:7830',
  autoConnect: false,
  // Whether the browser user confirms each borrow of a tab by a remote
  // task; only the user changes it (the popup), never a request.
  borrowConfirm: true,
});

/** Health states shown by the popup (see README.md). */
export const Health = Object.freeze({
  CONNECTED: 'connected',
  RECONNECTING: 'reconnecting',
  AUTH_REQUIRED: 'auth_required',
  ERROR: 'error',
  PAUSED: 'paused',
});

let bundled; // config.json, read once per worker life

/**
 * Reads config.json from the extension directory when it exists. It holds
 * defaults for unattended set-ups and tests, e.g.
 * {"serverUrl":"http://127.0.0.1:7830","autoConnect":true}. Values the user
 * saves from the popup win over it.
 */
export async function bundledConfig() {
  if (bundled !== undefined) return bundled;
  try {
    const resp = await fetch(chrome.runtime.getURL('config.json'), { cache: 'no-store' });
    bundled = resp.ok ? sanitize(await resp.json()) : {};
  } catch {
    bundled = {}; // no config.json: plain defaults
  }
  return bundled;
}

function sanitize(c) {
  const out = {};
  if (c && typeof c.serverUrl === 'string') out.serverUrl = c.serverUrl;
  if (c && typeof c.autoConnect === 'boolean') out.autoConnect = c.autoConnect;
  return out;
}

/** Returns {serverUrl, autoConnect}: defaults < config.json < saved. */
export async function loadSettings() {
  const { settings } = await chrome.storage.local.get('settings');
  const s = { ...DEFAULT_SETTINGS, ...(await bundledConfig()), ...(settings || {}) };
  s.serverUrl = normalizeUrl(s.serverUrl);
  return s;
}

export async function saveSettings(patch) {
  const { settings } = await chrome.storage.local.get('settings');
  const next = { ...(settings || {}), ...patch };
  if (next.serverUrl) next.serverUrl = normalizeUrl(next.serverUrl);
  await chrome.storage.local.set({ settings: next });
  return loadSettings();
}

/** Returns the origin of u (no trailing slash); only http(s) is accepted. */
export function normalizeUrl(u) {
  const url = new URL(String(u).trim());
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`server URL must be http(s), got ${url.protocol}`);
  }
  return url.origin;
}

/** Stable ids of this install: {clientId, deviceId}, created on first use. */
export async function identity() {
  const got = await chrome.storage.local.get(['clientId', 'deviceId']);
  const out = {
    clientId: got.clientId || `ext-${crypto.randomUUID()}`,
    deviceId: got.deviceId || `device-${crypto.randomUUID()}`,
  };
  if (!got.clientId || !got.deviceId) await chrome.storage.local.set(out);
  return out;
}

export async function loadCreds() {
  const { creds } = await chrome.storage.local.get('creds');
  return creds || null;
}

export async function saveCreds(creds) {
  if (creds) await chrome.storage.local.set({ creds });
  else await chrome.storage.local.remove('creds');
}

export async function setHealth(state, detail = '') {
  const { health } = await chrome.storage.session.get('health');
  if (health && health.state === state && health.detail === detail) return;
  await chrome.storage.session.set({ health: { state, detail, since: new Date().toISOString() } });
}

export async function getHealth() {
  const { health } = await chrome.storage.session.get('health');
  return health || { state: Health.PAUSED, detail: '', since: '' };
}

export async function loadLastEventId() {
  const { lastEventId } = await chrome.storage.session.get('lastEventId');
  return lastEventId || '';
}

export async function saveLastEventId(id) {
  await chrome.storage.session.set({ lastEventId: id });
}
