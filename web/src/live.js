// The live lists (jobs, gpus, nodes) from the API's watch streams, shared by every page.
//
// A stream is open only while some mounted page uses its list (useLive(['gpus', 'nodes'])),
// and none while the tab is hidden: the server is HTTP/1.1, and a browser gives one host six
// connections for all its tabs together, so streams held needlessly would leave the tabs' plain
// requests waiting. A page uses at most two. A list released is kept (shown at once if a page
// wants it again) but closed after kLingerMs, so moving between pages does not reopen it.
// Jobs need a signed-in user (the API answers 401 without one); gpus and nodes are public.
// For the job page's charts, the gpus list also keeps each GPU's samples seen since it opened.
import { useEffect, useState } from 'preact/hooks';
import { watch } from './api.js';

const kPaths = { jobs: '/api/v1/jobs', gpus: '/api/v1/gpus', nodes: '/api/v1/nodes' };
const kKeptSamples = 3600;  // per GPU: an hour at the server's 1 s watch tick
const kLingerMs = 5000;

const lists = {};  // name → {data, error, users, abort, linger}
for (const name of Object.keys(kPaths)) lists[name] = { data: null, error: null, users: 0, abort: null, linger: null };
const history = new Map();  // GPU uuid → samples, oldest first
const listeners = new Set();
let token = '';

function changed() {
  for (const listener of listeners) listener();
}

function keepSamples(gpus) {
  for (const gpu of gpus) {
    const s = gpu.sample;
    if (!s || s.lost) continue;
    let h = history.get(gpu.uuid);
    if (!h) history.set(gpu.uuid, (h = []));
    if (h.length > 0 && h[h.length - 1].time_ms >= s.time_ms) continue;
    h.push({ time_ms: s.time_ms, util_gpu_pct: s.util_gpu_pct, memory_used_mib: s.memory_used_mib });
    if (h.length > kKeptSamples) h.splice(0, h.length - kKeptSamples);
  }
}

function open(name) {
  const list = lists[name];
  if (list.abort || document.hidden || (name === 'jobs' && !token)) return;
  list.abort = new AbortController();
  watch(kPaths[name], name, {
    signal: list.abort.signal,
    onData: (body) => {
      if (name === 'gpus') keepSamples(body.gpus);
      list.data = body[name];
      list.error = null;
      changed();
    },
    onError: (error) => {
      list.error = error;
      changed();
    },
  });
}

function close(name) {
  const list = lists[name];
  if (list.abort) list.abort.abort();
  list.abort = null;
}

document.addEventListener('visibilitychange', () => {
  for (const name of Object.keys(lists)) {
    if (document.hidden) close(name);
    else if (lists[name].users > 0) open(name);
  }
});

// Signing in or out: every list is read again as the new caller, and nothing the old one saw
// stays on screen.
export function setLiveToken(next) {
  token = next;
  for (const [name, list] of Object.entries(lists)) {
    close(name);
    list.data = null;
    list.error = null;
    if (list.users > 0) open(name);
  }
  history.clear();
  changed();
}

function use(name) {
  const list = lists[name];
  list.users += 1;
  clearTimeout(list.linger);
  open(name);
  return () => {
    list.users -= 1;
    if (list.users === 0) list.linger = setTimeout(() => close(name), kLingerMs);
  };
}

// {jobs, gpus, nodes (null until the first event), errors: {name: ApiError|null}, history} for
// the named lists, which stay open while the calling component is mounted.
export function useLive(names = []) {
  const [, setTick] = useState(0);
  const key = names.join(',');
  useEffect(() => {
    const listener = () => setTick((t) => t + 1);
    listeners.add(listener);
    const releases = names.map(use);
    return () => {
      listeners.delete(listener);
      releases.forEach((release) => release());
    };
  }, [key]);
  const out = { errors: {}, history };
  for (const [name, list] of Object.entries(lists)) {
    out[name] = list.data;
    out.errors[name] = list.error;
  }
  return out;
}
