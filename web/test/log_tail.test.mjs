// The job page's log window (src/log_tail.js): the tail of a stream, earlier output on request,
// new output while following, with chunks shorter than asked as a remote node sends them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEarlier, readNew, readTail } from '../src/log_tail.js';

// A fake GET .../logs over `file` (a string of ASCII), answering at most `cap` bytes a read.
function fakeLog(file, cap = Infinity) {
  const reads = [];
  const read = async (offset, limit) => {
    reads.push([offset, limit]);
    const end = Math.min(file.text.length, offset + Math.min(limit, cap));
    return { bytes: new TextEncoder().encode(file.text.slice(offset, end)), size: file.text.length, next: Math.max(offset, end) };
  };
  return { read, reads };
}
const text = (tail) => new TextDecoder().decode(tail.bytes);

test('a short stream is read whole: nothing earlier', async () => {
  const { read } = fakeLog({ text: 'line 1\nline 2\n' });
  const tail = await readTail(read, 64);
  assert.equal(tail.from, 0);
  assert.equal(text(tail), 'line 1\nline 2\n');
  assert.equal(tail.next, 14);
});

test('a long stream shows its last window, read in short chunks; earlier output joins in front', async () => {
  const file = { text: 'x'.repeat(100) + 'y'.repeat(50) };
  const { read } = fakeLog(file, 7);
  const tail = await readTail(read, 60);
  assert.equal(tail.from, 90);
  assert.equal(text(tail), 'x'.repeat(10) + 'y'.repeat(50));
  const wider = await readEarlier(read, tail, 60);
  assert.equal(wider.from, 30);
  assert.equal(text(wider), file.text.slice(30));
  const whole = await readEarlier(read, wider, 60);
  assert.equal(whole.from, 0);
  assert.equal(text(whole), file.text);
});

test('follow appends what the job wrote since, and answers the same window when nothing came', async () => {
  const file = { text: 'a\n' };
  const { read } = fakeLog(file, 3);
  const tail = await readTail(read);
  assert.equal(await readNew(read, tail), tail);
  file.text += 'b\nc\nd\n';
  const more = await readNew(read, tail);
  assert.equal(text(more), 'a\nb\nc\nd\n');
  assert.equal(more.next, 8);
  assert.equal(more.size, 8);
});

test('an empty stream reads nothing', async () => {
  const { read } = fakeLog({ text: '' });
  const tail = await readTail(read);
  assert.deepEqual([tail.from, tail.next, tail.size, tail.bytes.length], [0, 0, 0, 0]);
});
