// Unit tests of lib/observe.js (the timing rules of observed popups) under
// Node's test runner, on a manual clock: time passes only at expire().
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { BUDGET_MS, ManualClock, PHASE_MS, Watch, armsObservation, withinBudget } from '../lib/observe.js';

const ev = (tabId, sourceFrameId = 0, sourceTabId = 1) => ({ sourceTabId, sourceFrameId, tabId });

test('the delays are the seed numbers: 100 ms per input phase, 500 ms of processing, 600 ms in all', () => {
  assert.equal(PHASE_MS, 100);
  assert.equal(BUDGET_MS, 500);
  assert.equal(PHASE_MS + BUDGET_MS, 600);
});

test('only main-frame events of the source during an open interval are candidates', async () => {
  const clock = new ManualClock();
  const w = new Watch(1, clock);
  assert.equal(w.offer(ev(2)), false, 'before arm: no interval');
  w.arm();
  assert.equal(w.offer(ev(3)), true);
  assert.equal(w.offer(ev(4, 7)), false, 'a subframe source');
  assert.equal(w.offer(ev(5, 0, 9)), false, 'another source tab');
  const settled = w.settle();
  assert.equal(clock.expire(), 1);
  assert.deepEqual(await settled, [3]);
  assert.equal(w.offer(ev(6)), false, 'after the interval');
});

test('an event does not extend the interval; a second phase does', async () => {
  const clock = new ManualClock();
  const w = new Watch(1, clock);
  w.arm();
  w.offer(ev(3));
  w.arm(); // the release phase
  const settled = w.settle();
  clock.expire(); // both intervals end
  assert.deepEqual(await settled, [3]);
});

test('cancel closes the listener at once and drops the candidates', async () => {
  const clock = new ManualClock();
  const w = new Watch(1, clock);
  w.arm();
  w.offer(ev(3));
  const settled = w.settle();
  w.cancel();
  assert.deepEqual(await settled, []);
  assert.equal(w.offer(ev(4)), false);
});

test('an expired budget invalidates late continuations', async () => {
  const clock = new ManualClock();
  let release;
  const slow = new Promise((r) => { release = r; });
  let granted = false;
  const done = withinBudget(async (budget) => { await slow; if (budget.valid) granted = true; }, clock);
  assert.equal(clock.expire(), 1);
  await done;
  release();
  await slow;
  await new Promise((r) => setImmediate(r));
  assert.equal(granted, false);
});

test('only native click and key phases arm observation', () => {
  assert.equal(armsObservation('Input.dispatchMouseEvent', { type: 'mousePressed' }), true);
  assert.equal(armsObservation('Input.dispatchMouseEvent', { type: 'mouseReleased' }), true);
  assert.equal(armsObservation('Input.dispatchMouseEvent', { type: 'mouseMoved' }), false);
  assert.equal(armsObservation('Input.dispatchKeyEvent', { type: 'keyDown' }), true);
  assert.equal(armsObservation('Input.insertText', {}), false);
  assert.equal(armsObservation('Runtime.evaluate', {}), false);
  assert.equal(armsObservation('Page.navigate', {}), false);
});
