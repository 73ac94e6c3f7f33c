// The gpufleet dashboard: a single page served by gpufleet at / (docs/dashboard.md). Pages are
// hash routes (#/overview, the first; #/gpus, #/queue, #/jobs/12, #/quota, #/reports,
// #/signin), so the server serves one HTML file and two bundles; every figure comes from
// /api/v1.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getToken, setToken, tokenId } from './api.js';
import { setLiveToken, useLive } from './live.js';
import { HeatMap } from './pages/heatmap.jsx';
import { Overview } from './pages/overview.jsx';
import { setTheme, useTheme } from './theme.js';
import { Queue } from './pages/queue.jsx';
import { JobPage } from './pages/job.jsx';
import { Quota } from './pages/quota.jsx';
import { Reports } from './pages/report.jsx';
import { ErrorNote } from './pages/common.jsx';
import './style.css';

const kHome = '#/overview';

function useHash() {
  const [hash, setHash] = useState(location.hash || kHome);
  useEffect(() => {
    const onChange = () => setHash(location.hash || kHome);
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

// Checks a pasted token against a route that needs an identity before keeping it.
async function checkToken(token) {
  const response = await fetch('/api/v1/jobs?limit=1', {
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    cache: 'no-store',
  });
  if (response.ok) return;
  let message = `${response.status} ${response.statusText}`;
  try {
    message = (await response.json()).error.message;
  } catch {
    // keep the status line
  }
  throw new ApiError(response.status, 'unauthenticated', message);
}

function SignIn({ token, onToken }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const pasted = value.trim();
    if (!pasted) return;
    setBusy(true);
    try {
      await checkToken(pasted);
      setValue('');
      setError(null);
      onToken(pasted);
      location.hash = '#/queue';
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="signin">
      <h1>Sign in</h1>
      {token && <p>Signed in with token <code>{tokenId(token)}</code>. <button type="button" onClick={() => onToken('')}>Sign out</button></p>}
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck={false} value={value}
          placeholder="gft_…" onInput={(e) => setValue(e.currentTarget.value)} />
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
      {error && <ErrorNote error={error} />}
      <p class="muted">
        Paste a token made by an admin with <code>gpufleet token create --user NAME</code>. It is kept in this
        tab only (sessionStorage) and sent in the Authorization header, never in a URL. You see your own
        jobs; operators and admins see everyone's.
      </p>
    </section>
  );
}

const kNav = [
  ['#/overview', 'Overview'],
  ['#/gpus', 'GPUs'],
  ['#/queue', 'Queue'],
  ['#/quota', 'Teams & quotas'],
  ['#/reports', 'Reports'],
];

// A route is the hash up to its query ("#/queue?user=alice": the queue page's filters).
function routeOf(hash) {
  return hash.split('?')[0];
}

function Page({ hash, token, onToken }) {
  const job = hash.match(/^#\/jobs\/([^/]+)$/);
  // Keyed by the id: another job's page starts afresh, never showing (or asking for) parts of
  // the last one's under the new id.
  if (job) return <JobPage key={job[1]} id={decodeURIComponent(job[1])} token={token} />;
  switch (routeOf(hash)) {
    case '#/overview': return <Overview token={token} />;
    case '#/gpus': return <HeatMap />;
    case '#/queue': return <Queue token={token} hash={hash} />;
    case '#/quota': return <Quota token={token} />;
    case '#/reports': return <Reports token={token} />;
    case '#/signin': return <SignIn token={token} onToken={onToken} />;
    default: return <section><h1>Not found</h1><p>No page {hash}. <a href={kHome}>Overview</a></p></section>;
  }
}

function App() {
  const hash = useHash();
  const [token, setTokenState] = useState(getToken());
  const live = useLive();  // opens nothing: reads the errors of the lists the page keeps open
  const onToken = (t) => { setToken(t); setLiveToken(t); setTokenState(t); };
  const lost = Object.values(live.errors).find((e) => e && e.code === 'unavailable');
  const theme = useTheme();
  const other = theme === 'dark' ? 'light' : 'dark';
  return (
    <>
      <header>
        <a class="brand" href={kHome}>gpufleet</a>
        <nav>
          {kNav.map(([href, label]) => (
            <a key={href} href={href} class={routeOf(hash) === href ? 'active' : ''}>{label}</a>
          ))}
        </nav>
        <span class={`conn conn-${lost ? 'offline' : 'live'}`} title={lost ? lost.message : 'following the server live'}>{lost ? 'offline' : 'live'}</span>
        <a class={`account${hash === '#/signin' ? ' active' : ''}`} href="#/signin">{token ? `signed in (${tokenId(token)})` : 'sign in'}</a>
        {token && <button type="button" class="signout" onClick={() => onToken('')}>Sign out</button>}
        <button type="button" class="theme-toggle" title={`switch to the ${other} theme`} onClick={() => setTheme(other)}>{other === 'dark' ? '☾ dark' : '☀ light'}</button>
      </header>
      <main class={routeOf(hash) === kHome ? 'wide' : ''}>
        <Page hash={hash} token={token} onToken={onToken} />
      </main>
    </>
  );
}

setLiveToken(getToken());
render(<App />, document.getElementById('app'));
