// The monthly report (docs/reports.md): GET /api/v1/report?period=YYYY-MM[&team=T] rendered as
// tables and a daily chart. The one-file HTML form is made by the CLI (`gpufleet report
// --format html`); the server has no HTML route, so the page names that command.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { Chart } from '../chart.jsx';
import { count, gpuHours, money, num, pct, time } from '../format.js';
import { measured, kWorkloadHeads, workloadRows } from '../report_rows.js';
import { anyDaySampled, dailySeries } from '../report_series.js';
import { ErrorNote, Loading, NeedSignIn } from './common.jsx';

// The current month in UTC: the report's periods are UTC calendar months.
function thisMonth() {
  return new Date().toISOString().slice(0, 7);
}

// kind: the table's class (what it lists: teams, gpus...), by which the browser test finds it.
function Table({ kind, heads, rows, empty = 'None.' }) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table class={kind}>
      <thead><tr>{heads.map((h) => <th key={h}>{h}</th>)}</tr></thead>
      <tbody>{rows.map((r, i) => <tr key={i}>{r.map((c, j) => <td key={j}>{c}</td>)}</tr>)}</tbody>
    </table>
  );
}

// The share of `part` in `whole` minutes, as a percentage; null when there is no whole.
function share(part, whole) {
  return whole > 0 ? (100 * part) / whole : null;
}

// Per day, on a day axis: the share of GPU time allocated and the share used; a day without
// samples is a gap (report_series.js).
function Days({ days }) {
  if (days.length === 0) return null;
  if (!anyDaySampled(days)) return <p class="muted days">No GPU samples this period yet: no per-day chart.</p>;
  const data = dailySeries(days);
  return (
    <Chart
      title="Per day (UTC): % of GPU time allocated and used"
      data={data}
      x="day"
      series={[{ label: 'allocated', scale: '%', unit: '%' }, { label: 'used', scale: '%', unit: '%' }]}
      axes={{ '%': '% of GPU time' }}
    />
  );
}

// Each figure under a label that says what it is a share of (docs/reports.md): allocated and
// used (util_pct) are shares of all observed GPU time, utilisation while allocated (used_pct)
// only of the allocated minutes.
function ReportView({ r }) {
  const c = r.cluster.figures;
  return (
    <>
      <p class="summary">
        {r.period}{r.team ? `, team ${r.team}` : ''}: {count(r.cluster.nodes, 'node')}, {count(r.cluster.gpus, 'GPU')};
        covered until {time(r.covered_until_ms)}.
      </p>
      <dl class="fields cluster">
        <dt>allocated</dt>
        <dd data-figure="allocated"><b>{pct(c.allocated_pct, 1)}</b> of GPU time, <b>{gpuHours(c.allocated_gpu_hours)}</b> GPU-hours</dd>
        <dt>utilisation while allocated</dt>
        <dd data-figure="used"><b>{pct(measured(c, c.used_pct), 1)}</b>: <b>{gpuHours(c.used_gpu_hours)}</b> of the allocated GPU-hours used</dd>
        <dt>used</dt>
        <dd data-figure="util"><b>{pct(c.util_pct, 1)}</b> of GPU time (the mean utilisation over every observed minute)</dd>
        <dt>idle while allocated</dt>
        <dd data-figure="idle-allocated"><b>{gpuHours(c.idle_gpu_hours)}</b> GPU-hours, <b>{pct(share(c.minutes_idle_allocated, c.minutes_allocated), 1)}</b> of the allocated time</dd>
        <dt>idle</dt>
        <dd data-figure="idle"><b>{pct(c.idle_pct, 1)}</b> of GPU time (not allocated, or allocated and idle: under 5 % utilisation)</dd>
        <dt>energy</dt><dd>{num(c.energy.energy_kwh, 1)} kWh, {money(c.energy)}{c.energy.co2_kg != null ? `, ${num(c.energy.co2_kg, 1)} kg CO₂` : ''}</dd>
      </dl>
      <Days days={r.days} />
      <h2>Recommendations</h2>
      {r.recommendations.length === 0 ? <p class="muted">None.</p>
        : <ul class="recommendations">{r.recommendations.map((x, i) => <li key={i}><b>{x.subject}</b>: {x.message}</li>)}</ul>}
      <h2>Teams</h2>
      <Table kind="teams" heads={['team', 'jobs', 'allocated GPU-h', 'utilisation while allocated', 'used GPU-h', 'idle while allocated GPU-h', 'budget GPU-h', 'budget used', 'cost']}
        rows={r.teams.map((t) => [t.team, t.usage.jobs, gpuHours(t.usage.allocated_gpu_hours), pct(measured(t.usage, t.usage.used_pct), 1),
          gpuHours(measured(t.usage, t.usage.used_gpu_hours)), gpuHours(t.usage.idle_gpu_hours), gpuHours(t.budget_gpu_hours),
          pct(t.budget_used_pct, 1), money(t.usage.energy)])} />
      <h2>Users</h2>
      <Table kind="users" heads={['user', 'team', 'jobs', 'allocated GPU-h', 'utilisation while allocated', 'used GPU-h', 'peak memory MiB', 'GPU memory MiB']}
        rows={r.users.map((u) => [u.user, u.team, u.usage.jobs, gpuHours(u.usage.allocated_gpu_hours), pct(measured(u.usage, u.usage.used_pct), 1),
          gpuHours(measured(u.usage, u.usage.used_gpu_hours)), u.peak_memory_mib, u.gpu_memory_mib])} />
      {workloadRows(r).length > 0 && <>
        <h2>Kubernetes workloads</h2>
        <p class="muted">Each workload's pods summed, by namespace (docs/kubernetes.md).</p>
        <Table kind="workloads" heads={kWorkloadHeads} rows={workloadRows(r)} />
      </>}
      <h2>GPUs</h2>
      <Table kind="gpus" heads={['node', 'GPU', 'model', 'allocated % of time', 'utilisation while allocated', 'used % of time', 'idle % of time', 'verdict']}
        rows={r.gpus.map((g) => [g.node, g.index ?? '–', g.model, pct(g.figures.allocated_pct, 1), pct(measured(g.figures, g.figures.used_pct), 1),
          pct(g.figures.util_pct, 1), pct(g.figures.idle_pct, 1),
          [g.idle && 'idle', g.overloaded && 'overloaded', g.unhealthy && 'unhealthy'].filter(Boolean).join(', ') || 'ok'])} />
      <p class="muted">
        Allocated: GPU-minutes a job held. Utilisation while allocated: the GPUs' mean utilisation
        in those minutes. Used % of time: the mean over every observed minute, held or not. Idle:
        minutes not allocated, or allocated under 5 % utilisation (docs/reports.md).
      </p>
      <h2>Waste: allocated but idle</h2>
      <p>{gpuHours(r.waste.idle_gpu_hours)} GPU-hours in all.</p>
      <Table kind="waste" heads={['job', 'name', 'user', 'team', 'allocated GPU-h', 'idle GPU-h', 'idle % of allocated']}
        rows={r.waste.jobs.map((w) => [<a href={`#/jobs/${w.job}`}>{w.job}</a>, w.name, w.user, w.team,
          gpuHours(w.allocated_gpu_hours), gpuHours(w.idle_gpu_hours), pct(w.idle_pct, 0)])} />
      <h2>Queueing delay by class</h2>
      <Table kind="queue" heads={['class', 'runs', 'mean s', 'p50 s', 'p95 s', 'max s']}
        rows={r.queue.map((q) => [q.priority, q.runs, num(q.mean_s, 0), num(q.p50_s, 0), num(q.p95_s, 0), num(q.max_s, 0)])} />
      <h2>Events</h2>
      <Table kind="events" heads={Object.keys(r.events)} rows={[Object.values(r.events)]} />
    </>
  );
}

export function Reports({ token }) {
  const [period, setPeriod] = useState(thisMonth());
  const [team, setTeam] = useState('');
  const [asked, setAsked] = useState({ period: thisMonth(), team: '' });
  const [state, setState] = useState({ report: null, error: null });
  useEffect(() => {
    if (!token) return undefined;
    const abort = new AbortController();
    setState({ report: null, error: null });
    const q = `period=${encodeURIComponent(asked.period)}${asked.team ? '&team=' + encodeURIComponent(asked.team) : ''}`;
    apiGet(`/api/v1/report?${q}`, abort.signal)
      .then((report) => setState({ report, error: null }))
      .catch((error) => { if (!abort.signal.aborted) setState({ report: null, error }); });
    return () => abort.abort();
  }, [token, asked]);
  if (!token) return <section><h1>Reports</h1><NeedSignIn /></section>;
  const submit = (e) => { e.preventDefault(); setAsked({ period, team: team.trim() }); };
  return (
    <section>
      <h1>Monthly report</h1>
      <form class="toolbar" onSubmit={submit}>
        <label>period <input name="period" value={period} pattern="\d{4}-\d{2}" placeholder="YYYY-MM" onInput={(e) => setPeriod(e.currentTarget.value)} /></label>
        <label>team <input name="team" value={team} placeholder="all teams" onInput={(e) => setTeam(e.currentTarget.value)} /></label>
        <button type="submit">Show</button>
      </form>
      <p class="muted">
        The same report as one HTML file with charts, for mail or an archive, or as a PDF for print:
        {' '}<code>gpufleet report --period {asked.period}{asked.team ? ` --team ${asked.team}` : ''} --format html --output report.html</code>
        {' '}(<code>--format pdf --output report.pdf</code>)
      </p>
      {state.error && <ErrorNote error={state.error} />}
      {!state.error && !state.report && <Loading what="the report" />}
      {state.report && <ReportView r={state.report} />}
    </section>
  );
}
