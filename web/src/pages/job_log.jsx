// A job's output on its page: stdout or stderr, opened at the tail (the last 64 KiB) with the
// earlier bytes a click away, and followed while the job runs (the next offset read every
// second; a last read when it ends). The text reaches the DOM as a text node, which preact
// escapes: job output is never markup.
import { useEffect, useRef, useState } from 'preact/hooks';
import { logChunk } from '../api.js';
import { kTailBytes, readEarlier, readNew, readTail } from '../log_tail.js';
import { ErrorNote } from './common.jsx';

const kFollowMs = 1000;
const decoder = new TextDecoder();

function kib(bytes) {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}

// running: the job may still write (follow reads on); version changes when the job does.
export function JobLog({ id, running }) {
  const [stream, setStream] = useState('stdout');
  const [follow, setFollow] = useState(true);
  const [tail, setTail] = useState(null);
  const [error, setError] = useState(null);
  const box = useRef(null);
  const read = (offset, limit, signal) => logChunk(id, stream, offset, limit, signal);

  useEffect(() => {
    const abort = new AbortController();
    setTail(null);
    setError(null);
    readTail((o, l) => read(o, l, abort.signal))
      .then(setTail)
      .catch((e) => { if (!abort.signal.aborted) setError(e); });
    return () => abort.abort();
  }, [id, stream]);

  // Follow: while the job runs, and once more after it ended (its last lines).
  const following = follow && tail != null;
  useEffect(() => {
    if (!following) return undefined;
    const abort = new AbortController();
    let timer = null;
    const poll = async () => {
      if (document.hidden) return;  // a hidden tab reads nothing (live.js)
      try {
        const more = await readNew((o, l) => read(o, l, abort.signal), tail);
        if (!abort.signal.aborted && more !== tail) setTail(more);
      } catch (e) {
        if (!abort.signal.aborted) setError(e);
      }
    };
    if (running) timer = setInterval(poll, kFollowMs);
    else poll();
    return () => { clearInterval(timer); abort.abort(); };
  }, [following, running, tail]);

  // New lines scroll into view while following.
  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [tail && tail.next]);

  const earlier = async () => {
    try {
      setTail(await readEarlier(read, tail));
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div class="log">
      <div class="toolbar" role="tablist">
        {['stdout', 'stderr'].map((s) => (
          <button key={s} type="button" role="tab" aria-selected={s === stream} class={s === stream ? 'tab active' : 'tab'}
            onClick={() => setStream(s)}>{s}</button>
        ))}
        <label><input type="checkbox" class="follow" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> follow{running ? '' : ' (the job has ended)'}</label>
        {tail && <span class="muted log-size">{kib(tail.size)} in all</span>}
      </div>
      {error && (error.code === 'failed_precondition'
        ? <p class="muted log-none">{error.message}</p>
        : <ErrorNote error={error} />)}
      {!tail && !error && <p class="muted">Loading {stream}…</p>}
      {tail && tail.from > 0 && (
        <p class="note log-earlier">
          {kib(tail.from)} of earlier output not shown (the page opens at the last {kib(kTailBytes)}).{' '}
          <button type="button" class="load-earlier" onClick={earlier}>Load earlier</button>
        </p>
      )}
      {tail && (tail.bytes.length === 0
        ? <p class="muted log-empty">No {stream} output{running ? ' yet' : ''}.</p>
        : <pre class="log-text" ref={box} data-from={tail.from} data-next={tail.next}>{decoder.decode(tail.bytes)}</pre>)}
    </div>
  );
}
