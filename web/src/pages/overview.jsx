// The overview, for a laptop or a wall screen: the cluster's figures now (GPUs allocated, busy,
// idle while allocated, failed; the queue and its oldest wait per class; today's GPU-hours and
// energy), its series over the last hour, day or week (zoom by dragging across a chart), a
// panel per node with its GPUs as heat-map cells carrying their conditions, and per team its
// guarantee, held and borrowed GPUs over time.
//
// Live: GPUs and nodes from the watch streams; the series read again every step of its ring
// (5 s for the hour, a minute for the day and the week); today's figures (the monthly report,
// which needs a sign-in) every minute. Nothing reloads the page.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { useLive } from '../live.js';
import { Chart } from '../chart.jsx';
import { count, day, duration, gpuHours, num, time } from '../format.js';
import { countGpus, kBusyUtilPct, seriesColumns, todayOf, viewerZone } from '../overview_view.js';
import { ErrorNote, Loading } from './common.jsx';
import { ConditionLegend, GpuCell, HeatLegend } from './gpu_cell.jsx';

const kWindows = [['1h', 'last hour'], ['1d', 'last day'], ['1w', 'last week']];
const kTeamColours = { held: '#2f7ed8', guaranteed: '#5cb85c', borrowed: '#d9534f' };

// Reads `path` now and every `everyMs` while the tab shows (a hidden tab reads again when it
// shows); {body, error}, the last good body kept through an error.
function usePoll(path, everyMs) {
  const [state, setState] = useState({ body: null, error: null });
  useEffect(() => {
    if (!path) return undefined;
    const abort = new AbortController();
    let timer = null;
    const read = () => {
      clearTimeout(timer);
      if (!document.hidden) {
        apiGet(path, abort.signal)
          .then((body) => setState({ body, error: null }))
          .catch((error) => { if (!abort.signal.aborted) setState((s) => ({ body: s.body, error })); });
      }
      timer = setTimeout(read, everyMs);
    };
    const onVisible = () => { if (!document.hidden) read(); };
    setState({ body: null, error: null });
    read();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      abort.abort();
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [path, everyMs]);
  return state;
}

function Kpi({ name, value, detail, kind }) {
  return (
    <div class={`kpi${kind ? ' kpi-' + kind : ''}`} data-kpi={name}>
      <span class="kpi-name">{name}</span>
      <span class="kpi-value">{value}</span>
      {detail && <span class="kpi-detail">{detail}</span>}
    </div>
  );
}

// "75 % of 4", "50 % of 2 allocated"; nothing of none.
const share = (n, of, what = '') => (of > 0 ? `${Math.round((100 * n) / of)} % of ${of}${what}` : '');

function Kpis({ gpus, latest, today, token }) {
  const c = gpus;
  return (
    <div class="kpis">
      <Kpi name="GPUs" value={c.gpus} detail={`${count(c.gpus - c.allocated, 'GPU')} free`} />
      <Kpi name="allocated" value={c.allocated} detail={share(c.allocated, c.gpus)} />
      <Kpi name="busy" value={c.busy} detail={share(c.busy, c.allocated, ' allocated')} />
      <Kpi name="idle while allocated" value={c.idle} kind={c.idle > 0 ? 'warn' : ''} detail="held, under the busy threshold" />
      <Kpi name="failed" value={c.failed} kind={c.failed > 0 ? 'bad' : ''} detail={c.failed > 0 ? 'health failed or lost' : 'none'} />
      {latest
        ? latest.queue.map((q) => (
          <Kpi key={q.priority} name={`queue ${q.priority}`} value={q.pending}
            detail={q.pending > 0 ? `oldest waits ${duration(q.oldest_wait_s)}` : 'nothing waits'} />
        ))
        : <Kpi name="queue" value="–" detail="no point taken yet" />}
      <Kpi name="GPU-hours today" value={today ? gpuHours(today.gpuHours) : '–'}
        detail={token ? `allocated, ${today ? today.day : 'no sample today yet'} (UTC)` : 'sign in to see'} />
      <Kpi name="energy today" value={today && today.kwh != null ? `${num(today.kwh, 2)} kWh` : '–'}
        detail={token ? 'the GPUs’ draw' : 'sign in to see'} />
    </div>
  );
}

function Series({ body, zoom, onZoom }) {
  if (body.points.length === 0) {
    return <p class="muted no-series">No points yet: the server takes one every {duration(body.step_ms / 1000)} from its start (a restart starts afresh).</p>;
  }
  const cols = seriesColumns(body.points);
  const chart = { zoom, onZoom, height: 200 };
  return (
    <>
      <div class="charts">
        <Chart title="GPUs: allocated vs used" data={cols.gpus} {...chart}
          series={[
            { label: 'GPUs', scale: 'GPUs', colour: '#7f8c8d', dash: [4, 4] },
            { label: 'allocated', scale: 'GPUs' },
            { label: `busy (≥ ${body.busy_util_pct} %)`, scale: 'GPUs' },
            { label: 'used (Σ utilisation)', scale: 'GPUs' },
          ]}
          axes={{ GPUs: 'GPUs' }} />
        <Chart title="Queue length per class" data={cols.queue} {...chart}
          series={cols.classes.map((c) => ({ label: c, scale: 'jobs' }))} axes={{ jobs: 'jobs waiting' }} />
        <Chart title="Oldest wait per class" data={cols.wait} {...chart}
          series={cols.classes.map((c) => ({ label: c, scale: 'min', unit: 'min' }))} axes={{ min: 'minutes' }} />
        <Chart title="Power" data={cols.power} {...chart}
          series={[{ label: 'power', scale: 'W', unit: 'W' }]} axes={{ W: 'watts' }} />
      </div>
      <Teams cols={cols} latest={body.latest} chart={chart} />
    </>
  );
}

// Per team: a chart of held, guarantee and borrowed GPUs (teams that held some or have a
// guarantee in the window), and a table of the latest point for every team.
function Teams({ cols, latest, chart }) {
  if (cols.teams.length === 0) return null;
  const charted = cols.teams.filter((t, i) => cols.teamsData.slice(1 + 3 * i, 3 + 3 * i).some((col) => col.some((v) => v > 0)));
  return (
    <section class="teams-view">
      <h2>Teams: guarantee vs held vs borrowed</h2>
      <div class="charts">
        {charted.map((team) => {
          const i = cols.teams.indexOf(team);
          const data = [cols.teamsData[0], ...cols.teamsData.slice(1 + 3 * i, 4 + 3 * i)];
          return (
            <Chart key={team} title={`team ${team || '(none)'}`} data={data} {...chart}
              series={[
                { label: 'held', scale: 'GPUs', colour: kTeamColours.held },
                { label: 'guarantee', scale: 'GPUs', colour: kTeamColours.guaranteed, dash: [6, 4] },
                { label: 'borrowed', scale: 'GPUs', colour: kTeamColours.borrowed },
              ]}
              axes={{ GPUs: 'GPUs' }} />
          );
        })}
      </div>
      {latest && (
        <table class="teams-now">
          <thead><tr><th>team</th><th class="num">guarantee</th><th class="num">held</th><th class="num">borrowed</th></tr></thead>
          <tbody>
            {latest.teams.map((t) => (
              <tr key={t.team} data-team={t.team}>
                <td>{t.team || '(none)'}</td><td class="num">{num(t.guaranteed, 0)}</td>
                <td class="num">{num(t.held, 2)}</td><td class="num">{num(t.borrowed, 2)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// A node's panel: its state, its GPUs' counts and power, and its cells.
function NodePanel({ name, node, gpus, busyPct }) {
  const c = countGpus(gpus, busyPct);
  const watts = gpus.reduce((w, g) => w + (g.sample && !g.sample.lost && g.sample.power_mw != null ? g.sample.power_mw / 1000 : 0), 0);
  return (
    <div class="node-panel" data-node={name}>
      <h3>
        {name}
        {node && <span class={`badge state-${node.state}`}>{node.state}</span>}
      </h3>
      <p class="node-counts">
        {count(c.gpus, 'GPU')}: {c.allocated} allocated, {c.busy} busy, {c.idle} idle while allocated{c.failed > 0 ? `, ${c.failed} failed` : ''}; {num(watts, 0)} W
      </p>
      {node && node.state_reason && <p class="muted">{node.state_reason}</p>}
      <div class="grid">
        {gpus.map((gpu) => <GpuCell key={gpu.uuid} gpu={gpu} busyPct={busyPct} />)}
      </div>
    </div>
  );
}

export function Overview({ token }) {
  const live = useLive(['gpus', 'nodes']);
  const [win, setWin] = useState('1h');
  const [zoom, setZoom] = useState(null);
  const series = usePoll(`/api/v1/cluster/series?window=${win}`, win === '1h' ? 5000 : 60000);
  const report = usePoll(token ? `/api/v1/report?period=${day(Date.now()).slice(0, 7)}` : null, 60000);
  const busyPct = series.body ? series.body.busy_util_pct : kBusyUtilPct;
  const choose = (w) => { setWin(w); setZoom(null); };
  // When the figures first show, for the first-paint bench (bench/dashboard_first_paint.sh).
  useEffect(() => {
    if (live.gpus && performance.getEntriesByName('gf-overview-ready').length === 0) performance.mark('gf-overview-ready');
  }, [!!live.gpus]);

  if (live.errors.gpus && !live.gpus) return <ErrorNote error={live.errors.gpus} />;
  if (!live.gpus) return <Loading what="the cluster" />;
  const nodes = new Map();
  for (const node of live.nodes || []) nodes.set(node.name, { node, gpus: [] });
  for (const gpu of live.gpus) {
    if (!nodes.has(gpu.node)) nodes.set(gpu.node, { node: null, gpus: [] });
    nodes.get(gpu.node).gpus.push(gpu);
  }
  const latest = series.body ? series.body.latest : null;
  return (
    <section class="overview">
      <h1>Overview</h1>
      <p class="summary">
        {count(live.gpus.length, 'GPU')} on {count(nodes.size, 'node')}.
        {' '}Times are UTC (ISO 8601); your zone is {viewerZone()}.
        {latest && <> Latest point <span class="latest-time">{time(latest.time_ms)}</span>.</>}
      </p>
      <Kpis gpus={countGpus(live.gpus, busyPct)} latest={latest} today={report.body ? todayOf(report.body) : null} token={token} />
      <div class="toolbar">
        <span role="group" aria-label="window" class="windows">
          {kWindows.map(([w, label]) => (
            <button key={w} type="button" class={`window${win === w ? ' active' : ''}`} aria-pressed={win === w} onClick={() => choose(w)}>{label}</button>
          ))}
        </span>
        <button type="button" class="zoom-reset" disabled={!zoom} onClick={() => setZoom(null)}>Reset zoom</button>
        <span class="muted">Drag across a chart to zoom in; every chart follows.</span>
        {zoom && <span class="zoom-range">{time(zoom[0] * 1000)} to {time(zoom[1] * 1000)}</span>}
      </div>
      {series.error && <ErrorNote error={series.error} />}
      {series.body ? <Series body={series.body} zoom={zoom} onZoom={setZoom} /> : !series.error && <Loading what="the series" />}
      <h2>Nodes</h2>
      <div class="node-panels">
        {[...nodes.entries()].map(([name, { node, gpus }]) => (
          <NodePanel key={name} name={name} node={node} gpus={gpus} busyPct={busyPct} />
        ))}
      </div>
      <HeatLegend />
      <ConditionLegend />
    </section>
  );
}
