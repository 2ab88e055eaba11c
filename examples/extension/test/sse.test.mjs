// Unit tests of lib/sse.js under Node's test runner (node --test); run by
// TestJavaScriptUnitTests in node_test.go.
import test from 'node:test';
import assert from 'node:assert/strict';
import { SSEParser } from '../lib/sse.js';

function collect(lastId = '') {
  const events = [];
  const comments = [];
  const p = new SSEParser({ onEvent: (e) => events.push(e), onComment: (c) => comments.push(c) }, lastId);
  return { p, events, comments };
}

test('frames split across chunks are reassembled', () => {
  const { p, events } = collect();
  p.push('event: assistant_event\nid: 4');
  p.push('2\ndata: {"a":');
  p.push('1}\n\n');
  assert.deepEqual(events, [{ type: 'assistant_event', data: '{"a":1}', id: '42' }]);
});

test('CRLF line endings and multi-line data', () => {
  const { p, events } = collect();
  p.push('data: one\r\ndata: two\r\n\r\n');
  assert.deepEqual(events, [{ type: 'message', data: 'one\ntwo', id: '' }]);
});

test('heartbeat comments are reported, not dispatched', () => {
  const { p, events, comments } = collect();
  p.push(': heartbeat abc123\n\n');
  assert.equal(events.length, 0);
  assert.deepEqual(comments, ['heartbeat abc123']);
});

test('the last event id persists across events and starts from the resume id', () => {
  const { p, events } = collect('7');
  p.push('data: x\n\nid: 8\ndata: y\n\ndata: z\n\n');
  assert.deepEqual(events.map((e) => e.id), ['7', '8', '8']);
  assert.equal(p.lastEventId, '8');
});

test('an event without data is not dispatched; unknown fields are ignored', () => {
  const { p, events } = collect();
  p.push('event: assistant_event\nfoo: bar\n\n');
  assert.equal(events.length, 0);
  p.push('data\n\n');
  assert.deepEqual(events, [{ type: 'message', data: '', id: '' }]);
});

test('an id containing NUL is ignored', () => {
  const { p, events } = collect('1');
  p.push('id: a\0b\ndata: x\n\n');
  assert.equal(events[0].id, '1');
});
