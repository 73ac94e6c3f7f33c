// GPU heat map: one cell per GPU, grouped by node, coloured by the chosen reading (utilisation,
// memory used, temperature) from the live gpus stream. Hovering a cell shows its owner and job
// (a title tooltip); a cell held by a job links to that job's page.
import { useState } from 'preact/hooks';
import { useLive } from '../live.js';
import { count, dash, mib, pct } from '../format.js';
import { ErrorNote, Loading } from './common.jsx';

const kMetrics = {
  util: { label: 'Utilisation', value: (s) => s.util_gpu_pct, max: () => 100, unit: '%' },
  memory: {
    label: 'Memory used',
    value: (s) => (s.memory_used_mib == null || !s.memory_total_mib ? null
      : (100 * s.memory_used_mib) / s.memory_total_mib),
    max: () => 100, unit: '%',
  },
  temperature: { label: 'Temperature', value: (s) => s.temperature_c, max: () => 90, unit: '°C' },
};

// 0 → cool blue, 1 → hot red, through green and yellow (hue 220 → 0).
function heat(fraction) {
  const f = Math.max(0, Math.min(1, fraction));
  return `hsl(${Math.round(220 - 220 * f)}, 70%, ${Math.round(42 + 8 * f)}%)`;
}

// The jobs holding a GPU: its holders (several when shared, issue #7), else its one job (a
// server older than sharing).
function holdersOf(gpu) {
  if (gpu.holders) return gpu.holders;
  return gpu.job != null ? [{ job: gpu.job, user: gpu.user, team: gpu.team, share_milli: 1000 }] : [];
}

const gpus = (milli) => String(Math.round(milli) / 1000);

// "alice · 12" for a whole GPU, "alice · 12 (0.25)" for a share, "3 jobs (0.75)" when shared.
function owner(holders) {
  if (holders.length === 0) return 'free';
  const milli = holders.reduce((sum, h) => sum + (h.share_milli ?? 1000), 0);
  if (holders.length > 1) return `${holders.length} jobs (${gpus(milli)})`;
  const h = holders[0];
  return `${h.user} · ${h.job}${milli < 1000 ? ` (${gpus(milli)})` : ''}`;
}

function tooltip(gpu) {
  const s = gpu.sample || {};
  const lines = [
    `${gpu.node} / GPU ${gpu.index}: ${gpu.model}`,
    `utilisation ${pct(s.util_gpu_pct)}, memory ${mib(s.memory_used_mib)} of ${mib(s.memory_total_mib ?? gpu.memory_mib)}`,
    `temperature ${s.temperature_c == null ? dash : s.temperature_c + ' °C'}`,
  ];
  const holders = holdersOf(gpu);
  if (holders.length === 0) lines.push('free');
  for (const h of holders) {
    const share = (h.share_milli ?? 1000) < 1000 ? `, share ${gpus(h.share_milli)}` : '';
    lines.push(`job ${h.job}, owner ${h.user}${h.team ? ' (team ' + h.team + ')' : ''}${share}`);
  }
  if (gpu.health !== 'ok') lines.push(`health ${gpu.health}: ${gpu.health_cause}`);
  if (gpu.conditions.length > 0) lines.push(`conditions: ${gpu.conditions.join(', ')}`);
  return lines.join('\n');
}

function Cell({ gpu, metric }) {
  const s = gpu.sample;
  const holders = holdersOf(gpu);
  const m = kMetrics[metric];
  const v = s && !s.lost ? m.value(s) : null;
  const style = { background: v == null ? '' : heat(v / m.max()) };
  const body = (
    <>
      <span class="cell-index">{gpu.index}</span>
      <span class="cell-value">{v == null ? dash : `${Math.round(v)} ${m.unit}`}</span>
      <span class="cell-owner">{owner(holders)}</span>
    </>
  );
  const cls = `cell health-${gpu.health}${v == null ? ' unknown' : ''}`;
  // One holder: the cell links to its job; a shared GPU's jobs are in the tooltip.
  return holders.length === 1
    ? <a class={cls} style={style} title={tooltip(gpu)} href={`#/jobs/${holders[0].job}`} data-uuid={gpu.uuid}>{body}</a>
    : <div class={cls} style={style} title={tooltip(gpu)} data-uuid={gpu.uuid}>{body}</div>;
}

export function HeatMap() {
  const live = useLive(['gpus', 'nodes']);
  const [metric, setMetric] = useState('util');
  if (live.errors.gpus && !live.gpus) return <ErrorNote error={live.errors.gpus} />;
  if (!live.gpus) return <Loading what="GPUs" />;
  const nodes = new Map();
  for (const node of live.nodes || []) nodes.set(node.name, { node, gpus: [] });
  for (const gpu of live.gpus) {
    if (!nodes.has(gpu.node)) nodes.set(gpu.node, { node: null, gpus: [] });
    nodes.get(gpu.node).gpus.push(gpu);
  }
  const held = live.gpus.filter((g) => holdersOf(g).length > 0).length;
  return (
    <section>
      <h1>GPUs</h1>
      <p class="summary">
        {count(live.gpus.length, 'GPU')} on {count(nodes.size, 'node')}, {held} held by jobs.
        {' '}Live: updated each time a reading changes.
      </p>
      <div class="toolbar" role="radiogroup" aria-label="colour by">
        {Object.entries(kMetrics).map(([key, m]) => (
          <label key={key}>
            <input type="radio" name="metric" checked={metric === key} onChange={() => setMetric(key)} />
            {m.label}
          </label>
        ))}
      </div>
      {[...nodes.values()].map(({ node, gpus }) => (
        <div class="node" key={node ? node.name : gpus[0].node}>
          <h2>
            {node ? node.name : gpus[0].node}
            {node && <span class={`badge state-${node.state}`}>{node.state}</span>}
            {node && node.state_reason && <span class="muted"> {node.state_reason}</span>}
          </h2>
          <div class="grid">
            {gpus.map((gpu) => <Cell key={gpu.uuid} gpu={gpu} metric={metric} />)}
          </div>
        </div>
      ))}
      <p class="legend">
        <span class="swatch" style={{ background: heat(0) }} /> low
        <span class="swatch" style={{ background: heat(0.5) }} /> mid
        <span class="swatch" style={{ background: heat(1) }} /> high
        <span class="swatch unknown" /> no reading
      </p>
    </section>
  );
}
