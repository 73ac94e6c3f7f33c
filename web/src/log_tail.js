// The job page's view of one output stream: a window [from, next) of the file's bytes, opened at
// its tail, widened back on request and extended forward while the job runs (follow). No DOM:
// `read(offset, limit)` is the fetch (api.js logChunk, or a fake in the tests) and answers
// {bytes, size, next}; a chunk may be shorter than asked (a remote node sends at most 512 KiB),
// so each range is read on until it is whole.
export const kTailBytes = 64 * 1024;
const kChunk = 1024 * 1024;

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

// The bytes of [from, to) (or up to the end when to is null), and the size the last read saw.
async function readRange(read, from, to) {
  let bytes = new Uint8Array(0);
  let offset = from;
  let size = from;
  for (;;) {
    const want = to == null ? kChunk : Math.min(kChunk, to - offset);
    if (want <= 0) break;
    const chunk = await read(offset, want);
    size = chunk.size;
    bytes = concat(bytes, chunk.bytes);
    if (chunk.next <= offset) break;  // nothing more there
    offset = chunk.next;
    if (offset >= size) break;
  }
  return { bytes, size, next: from + bytes.length };
}

// The last kTailBytes (or `window`) of the stream: {from, next, size, bytes}; `from` > 0 says
// earlier output exists.
export async function readTail(read, window = kTailBytes) {
  const { size } = await read(0, 0);
  const from = Math.max(0, size - window);
  const got = await readRange(read, from, null);
  return { from, next: got.next, size: Math.max(size, got.size), bytes: got.bytes };
}

// `tail` widened back by `window` bytes (to the file's start at most).
export async function readEarlier(read, tail, window = kTailBytes) {
  const from = Math.max(0, tail.from - window);
  const got = await readRange(read, from, tail.from);
  return { ...tail, from, bytes: concat(got.bytes, tail.bytes) };
}

// `tail` with whatever the job wrote since: the same object when nothing came.
export async function readNew(read, tail) {
  const got = await readRange(read, tail.next, null);
  if (got.bytes.length === 0 && got.size === tail.size) return tail;
  return { ...tail, next: got.next, size: Math.max(got.size, got.next), bytes: concat(tail.bytes, got.bytes) };
}
