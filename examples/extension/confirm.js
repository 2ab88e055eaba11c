// The borrow confirmation window (lib/confirm.js opens it): shows the tab
// and sends the user's answer; closing the window declines.

const id = location.hash.slice(1);
const $ = (x) => document.getElementById(x);

chrome.runtime.sendMessage({ type: 'remote.borrow.get', id }).then((a) => {
  if (!a || a.error) { $('title').textContent = (a && a.error) || 'this request is over'; return; }
  $('title').textContent = a.title;
  $('url').textContent = a.url;
});

const answer = (allow) => chrome.runtime.sendMessage({ type: 'remote.borrow.answer', id, allow });
$('allow').addEventListener('click', () => answer(true));
$('deny').addEventListener('click', () => answer(false));
