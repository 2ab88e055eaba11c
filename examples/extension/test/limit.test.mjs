// Unit tests of lib/limit.js under Node's test runner (node --test); run by
// TestJavaScriptUnitTests in node_test.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TOO_LARGE_CONTENT, overLimit, resultFrame } from '../lib/limit.js';

test('overLimit counts UTF-8 bytes, not UTF-16 units', () => {
  assert.equal(overLimit('abc', 3), false);
  assert.equal(overLimit('abcd', 3), true);
  assert.equal(overLimit('é', 1), true); // two bytes
  assert.equal(overLimit('€€', 6), false); // three bytes each
  assert.equal(overLimit('€€', 5), true);
});

test('resultFrame keeps a result within the cap and replaces one over it', () => {
  const body = { requestId: 'r1', content: JSON.stringify({ v: 'x'.repeat(100) }), isError: false, durationMs: 1 };
  const small = resultFrame(body, 1000);
  assert.equal(small.tooLarge, false);
  assert.deepEqual(JSON.parse(small.text), { type: 'result', ...body });

  const big = resultFrame(body, 64);
  assert.equal(big.tooLarge, true);
  assert.deepEqual(JSON.parse(big.text), { type: 'result', requestId: 'r1', content: TOO_LARGE_CONTENT, isError: true });
  assert.equal(JSON.parse(TOO_LARGE_CONTENT).code, 'payload_too_large');
  assert.ok(Object.keys(JSON.parse(big.text)).indexOf('requestId') < Object.keys(JSON.parse(big.text)).indexOf('content'),
    'requestId comes before content, so a server that cuts a frame still finds it');
});

test('resultFrame applies no cap when the server named none', () => {
  const body = { requestId: 'r2', content: 'x'.repeat(1000), isError: false };
  assert.equal(resultFrame(body, 0).tooLarge, false);
  assert.equal(resultFrame(body, undefined).tooLarge, false);
});
