// The dashboard's server-sent events parser (src/sse.js) on the framing the API writes
// (src/api/sse.cpp): every split of the stream into two chunks gives the same events.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SseParser } from '../src/sse.js';

function parse(chunks) {
  const events = [];
  const parser = new SseParser((e) => events.push(e));
  for (const c of chunks) parser.push(c);
  return events;
}

const kStream = ': keepalive\n\nevent: jobs\ndata: {"jobs":[]}\n\nevent: error\ndata: {"error":\ndata: 1}\n\n';
const kEvents = [
  { event: 'jobs', data: '{"jobs":[]}' },
  { event: 'error', data: '{"error":\n1}' },
];

test('every split of the stream into two chunks gives the same events', () => {
  for (let i = 0; i <= kStream.length; i++) {
    assert.deepEqual(parse([kStream.slice(0, i), kStream.slice(i)]), kEvents, `split at ${i}`);
  }
});

test('CRLF and CR line ends, split anywhere, and a missing space after the colon', () => {
  // (A CR at the very end could be the first half of a CRLF: a comment line follows.)
  const crlf = 'event:gpus\r\ndata: [1]\r\n\r\nevent: gpus\rdata: [2]\r\r:\n';
  const want = [{ event: 'gpus', data: '[1]' }, { event: 'gpus', data: '[2]' }];
  for (let i = 0; i <= crlf.length; i++) {
    assert.deepEqual(parse([crlf.slice(0, i), crlf.slice(i)]), want, `split at ${i}`);
  }
});

test('an event without a name is a message; one without data is no event; an unfinished one waits', () => {
  assert.deepEqual(parse(['data: x\n\nevent: nodes\n\n', 'event: nodes\ndata: y\n']),
    [{ event: 'message', data: 'x' }]);
});
