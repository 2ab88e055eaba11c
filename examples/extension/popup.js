// Popup: shows the relay's health and lets the user set the server URL,
// connect and pause. All work happens in the service worker; the popup only
// sends it {type:"status"|"connect"|"pause"|"prefs"} messages.

const LABELS = {
  connected: 'Connected',
  reconnecting: 'Reconnecting…',
  auth_required: 'Action required: pairing refused',
  error: 'Action required: server unreachable',
  paused: 'Paused',
};

const $ = (id) => document.getElementById(id);

function render(s) {
  if (!s || s.error) {
    $('detail').textContent = s ? s.error : 'no answer from the service worker';
    return;
  }
  const state = s.health.state;
  $('state').className = `state ${state}`;
  $('state').textContent = LABELS[state] || state;
  $('detail').textContent = s.health.detail || '';
  if (document.activeElement !== $('server')) $('server').value = s.settings.serverUrl;
  $('borrow-confirm').checked = s.settings.borrowConfirm !== false;
  $('meta').textContent = `client ${s.clientId}` + (s.actorPrincipalId ? ` · actor ${s.actorPrincipalId}` : '');
}

async function send(msg) {
  render(await chrome.runtime.sendMessage(msg));
}

$('connect').addEventListener('click', () => {
  const serverUrl = $('server').value.trim();
  send({ type: 'connect', serverUrl: serverUrl || undefined }).catch((e) => render({ error: e.message }));
});
$('borrow-confirm').addEventListener('change', (e) =>
  send({ type: 'prefs', borrowConfirm: e.target.checked }).catch((err) => render({ error: err.message })));
$('pause').addEventListener('click', () => send({ type: 'pause' }).catch((e) => render({ error: e.message })));

chrome.storage.onChanged.addListener((_changes, area) => {
  if (area === 'session') send({ type: 'status' }).catch(() => {});
});

send({ type: 'status' }).catch((e) => render({ error: e.message }));
