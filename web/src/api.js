// The dashboard's only way to the server: fetch() on /api/v1 with the signed-in user's bearer
// token in the Authorization header. The token lives in sessionStorage (gone when the tab
// closes) and never goes into a URL: EventSource cannot send headers, so watch streams are
// read with fetch() and a streaming body reader instead.
import { SseParser } from './sse.js';

const kTokenKey = 'gpufleet.token';

export function getToken() {
  return sessionStorage.getItem(kTokenKey) || '';
}

export function setToken(token) {
  if (token) sessionStorage.setItem(kTokenKey, token);
  else sessionStorage.removeItem(kTokenKey);
}

// "gft_abcdef123456_<secret>" → "gft_abcdef123456": the token's id, safe to show.
export function tokenId(token) {
  const parts = token.split('_');
  return parts.length >= 3 ? `${parts[0]}_${parts[1]}` : 'token';
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers() {
  const token = getToken();
  const h = { Accept: 'application/json' };
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function errorOf(response) {
  let code = 'http_' + response.status;
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code;
      message = body.error.message;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
}

// `method` path → the response, or throws ApiError with the server's code and message.
async function request(method, path, signal) {
  const response = await fetch(path, { method, headers: headers(), signal, cache: 'no-store' });
  if (!response.ok) throw await errorOf(response);
  return response;
}

// GET path → parsed JSON.
export async function apiGet(path, signal) {
  return (await request('GET', path, signal)).json();
}

// POST path (no body: the job actions) → parsed JSON.
export async function apiPost(path) {
  return (await request('POST', path)).json();
}

// A chunk of a job's output (GET /api/v1/jobs/ID/logs): its bytes, the file's size and where
// the next read continues (the X-Gpufleet-Log-Size and X-Gpufleet-Next-Offset headers).
export async function logChunk(id, stream, offset, limit, signal) {
  const path = `/api/v1/jobs/${encodeURIComponent(id)}/logs?stream=${stream}&offset=${offset}&limit=${limit}`;
  const response = await request('GET', path, signal);
  return {
    bytes: new Uint8Array(await response.arrayBuffer()),
    size: Number(response.headers.get('X-Gpufleet-Log-Size')),
    next: Number(response.headers.get('X-Gpufleet-Next-Offset')),
  };
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// Follows GET path?watch=1 (server-sent events named `event`) until `signal` aborts: onData
// gets each list as the server sends it (the whole list, each time it changed). A refusal
// (4xx) is final and goes to onError; a lost connection or a 5xx is retried with backoff
// (onError sees it too, onData clears it).
export async function watch(path, event, { onData, onError, signal }) {
  const url = path + (path.includes('?') ? '&' : '?') + 'watch=1';
  let backoff = 500;
  while (!signal.aborted) {
    try {
      const response = await fetch(url, { headers: headers(), signal, cache: 'no-store' });
      if (!response.ok) {
        const error = await errorOf(response);
        onError(error);
        if (response.status >= 400 && response.status < 500 && response.status !== 429) return;
      } else {
        backoff = 500;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let final = null;
        const parser = new SseParser(({ event: name, data }) => {
          if (name === event) {
            onData(JSON.parse(data));
          } else if (name === 'error') {
            const body = JSON.parse(data).error || {};
            final = new ApiError(0, body.code, body.message);
          }
        });
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value);
        }
        if (final) {
          onError(final);
          if (final.code === 'unauthenticated' || final.code === 'permission_denied') return;
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      onError(new ApiError(0, 'unavailable', `lost the server (${e.message}); reconnecting`));
    }
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 10000);
  }
}
