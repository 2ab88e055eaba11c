// Popup, remote part (REM-7): pastes a pairing link and shows the remote
// device's state — connection, expiry, a pending or failed renewal, and
// "pair again" when the credential is refused. The link goes to the service
// worker in one message and is cleared from the field at once.

const $ = (id) => document.getElementById(id);

function fmt(iso) {
  const t = Date.parse(iso || '');
  return t ? new Date(t).toLocaleString() : '?';
}

function render(s) {
  const el = $('remote');
  if (!s) { el.textContent = ''; return; }
  const parts = [];
  if (s.error) parts.push(s.error);
  if (s.mode !== 'remote') {
    parts.push('Not in use.');
  } else if (s.storeError) {
    parts.push(`Credential storage failed: ${s.storeError}`);
  } else {
    parts.push(`${s.connected ? 'Connected to' : 'Not connected to'} ${s.serviceName || s.host || 'the server'}.`);
    if (s.expiresAt) {
      parts.push(s.expired ? `Authorization expired ${fmt(s.expiresAt)}.` : `Authorized until ${fmt(s.expiresAt)}.`);
    }
    if (s.renewalPending) parts.push('Renewal not yet confirmed.');
    if (s.renewError) parts.push(`Renewal failed: ${s.renewError}.`);
    if (s.pairAgain) parts.push('Pair again with a new link.');
  }
  el.textContent = parts.join(' ');
  el.dataset.connected = String(!!s.connected);
}

async function send(msg) {
  render(await chrome.runtime.sendMessage(msg));
}

$('pair').addEventListener('click', () => {
  const link = $('link').value;
  $('link').value = '';
  send({ type: 'remote.pair', link }).catch((e) => render({ error: e.message }));
});

chrome.storage.onChanged.addListener((_changes, area) => {
  if (area === 'session') send({ type: 'remote.status' }).catch(() => {});
});

send({ type: 'remote.status' }).catch((e) => render({ error: e.message }));
