// The monthly report (docs/reports.md): GET /api/v1/report?period=YYYY-MM[&team=T] rendered as
// tables and a daily chart. The one-file HTML form is made by the CLI (`gpufleet report
// --format html`); the server has no HTML route, so the page names that command.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { Chart } from '../chart.jsx';
import { money, num, pct, time } from '../format.js';
import { ErrorNote, Loading, NeedSignIn } from './common.jsx';

function thisMonth() {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}`;
}

function Table({ heads, rows, empty = 'None.' }) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table>
      <thead><tr>{heads.map((h) => <th key={h}>{h}</th>)}</tr></thead>
      <tbody>{rows.map((r, i) => <tr key={i}>{r.map((c, j) => <td key={j}>{c}</td>)}</tr>)}</tbody>
    </table>
  );
}

function Days({ days }) {
  if (days.length === 0) return null;
  // x: each day's UTC midnight (the report's days are UTC calendar days).
  const data = [days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000),
    days.map((d) => d.figures.allocated_pct), days.map((d) => d.figures.used_pct)];
  return (
    <Chart
      title="Per day: allocated and used % of GPU time"
      data={data}
      series={[{ label: 'allocated', scale: '%', unit: '%' }, { label: 'used', scale: '%', unit: '%' }]}
      axes={{ '%': '% of GPU time' }}
    />
  );
}

function ReportView({ r }) {
  const c = r.cluster.figures;
  return (
    <>
      <p class="summary">
        {r.period}{r.team ? `, team ${r.team}` : ''}: {r.cluster.nodes} nodes, {r.cluster.gpus} GPUs;
        covered until {time(r.covered_until_ms)}.
      </p>
      <dl class="fields">
        <dt>allocated</dt><dd>{pct(c.allocated_pct, 1)} of GPU time ({num(c.allocated_gpu_hours, 1)} GPU-hours)</dd>
        <dt>used</dt><dd>{pct(c.used_pct, 1)} ({num(c.used_gpu_hours, 1)} GPU-hours); utilisation while allocated {pct(c.util_pct, 1)}</dd>
        <dt>idle while allocated</dt><dd>{num(c.idle_gpu_hours, 1)} GPU-hours ({pct(c.idle_pct, 1)})</dd>
        <dt>energy</dt><dd>{num(c.energy.energy_kwh, 1)} kWh, {money(c.energy)}{c.energy.co2_kg != null ? `, ${num(c.energy.co2_kg, 1)} kg CO₂` : ''}</dd>
      </dl>
      <Days days={r.days} />
      <h2>Recommendations</h2>
      {r.recommendations.length === 0 ? <p class="muted">None.</p>
        : <ul class="recommendations">{r.recommendations.map((x, i) => <li key={i}><b>{x.subject}</b>: {x.message}</li>)}</ul>}
      <h2>Teams</h2>
      <Table heads={['team', 'jobs', 'allocated GPU-h', 'used GPU-h', 'used %', 'idle GPU-h', 'budget GPU-h', 'budget used', 'cost']}
        rows={r.teams.map((t) => [t.team, t.usage.jobs, num(t.usage.allocated_gpu_hours, 1), num(t.usage.used_gpu_hours, 1),
          pct(t.usage.used_pct, 1), num(t.usage.idle_gpu_hours, 1), t.budget_gpu_hours == null ? '–' : num(t.budget_gpu_hours, 0),
          pct(t.budget_used_pct, 1), money(t.usage.energy)])} />
      <h2>Users</h2>
      <Table heads={['user', 'team', 'jobs', 'allocated GPU-h', 'used GPU-h', 'used %', 'peak memory MiB', 'GPU memory MiB']}
        rows={r.users.map((u) => [u.user, u.team, u.usage.jobs, num(u.usage.allocated_gpu_hours, 1), num(u.usage.used_gpu_hours, 1),
          pct(u.usage.used_pct, 1), u.peak_memory_mib, u.gpu_memory_mib])} />
      <h2>GPUs</h2>
      <Table heads={['node', 'GPU', 'model', 'allocated', 'used', 'idle while allocated', 'verdict']}
        rows={r.gpus.map((g) => [g.node, g.index ?? '–', g.model, pct(g.figures.allocated_pct, 1), pct(g.figures.used_pct, 1),
          pct(g.figures.idle_pct, 1), [g.idle && 'idle', g.overloaded && 'overloaded', g.unhealthy && 'unhealthy'].filter(Boolean).join(', ') || 'ok'])} />
      <h2>Waste: allocated but idle</h2>
      <p>{num(r.waste.idle_gpu_hours, 1)} GPU-hours in all.</p>
      <Table heads={['job', 'name', 'user', 'team', 'allocated GPU-h', 'idle GPU-h', 'idle %']}
        rows={r.waste.jobs.map((w) => [<a href={`#/jobs/${w.job}`}>{w.job}</a>, w.name, w.user, w.team,
          num(w.allocated_gpu_hours, 1), num(w.idle_gpu_hours, 1), pct(w.idle_pct, 0)])} />
      <h2>Queueing delay by class</h2>
      <Table heads={['class', 'runs', 'mean s', 'p50 s', 'p95 s', 'max s']}
        rows={r.queue.map((q) => [q.priority, q.runs, num(q.mean_s, 0), num(q.p50_s, 0), num(q.p95_s, 0), num(q.max_s, 0)])} />
      <h2>Events</h2>
      <Table heads={Object.keys(r.events)} rows={[Object.values(r.events)]} />
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
        The same report as one HTML file with charts, for mail or an archive:
        {' '}<code>gpufleet report --period {asked.period}{asked.team ? ` --team ${asked.team}` : ''} --format html --output report.html</code>
      </p>
      {state.error && <ErrorNote error={state.error} />}
      {!state.error && !state.report && <Loading what="the report" />}
      {state.report && <ReportView r={state.report} />}
    </section>
  );
}
