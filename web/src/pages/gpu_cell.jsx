// One GPU as a heat-map cell, shared by the GPU map and the overview's node panels: coloured by
// a reading, with its conditions drawn on it (a pattern or an outline and a mark written in
// the cell: a colour alone cannot say "idle while allocated"), and the legends of both.
// Hovering shows its owner, job and readings (a title tooltip); a cell held by one job links
// to that job's page.
import { dash, mib, pct } from '../format.js';
import { conditionsOf, kBusyUtilPct, kConditions } from '../overview_view.js';

export const kMetrics = {
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
export function holdersOf(gpu) {
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

const conditionText = (key) => kConditions.find((c) => c.key === key).text;

function tooltip(gpu, conditions) {
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
  for (const c of conditions) lines.push(conditionText(c));
  if (gpu.conditions.length > 0) lines.push(`server conditions: ${gpu.conditions.join(', ')}`);
  return lines.join('\n');
}

// busyPct: the idle threshold (the series' busy_util_pct where the page has it).
export function GpuCell({ gpu, metric = 'util', busyPct = kBusyUtilPct }) {
  const s = gpu.sample;
  const holders = holdersOf(gpu);
  const m = kMetrics[metric];
  const v = s && !s.lost ? m.value(s) : null;
  const conditions = conditionsOf(gpu, busyPct);
  // The colour only: a condition's pattern is a background image over it.
  const style = { backgroundColor: v == null ? '' : heat(v / m.max()) };
  const body = (
    <>
      <span class="cell-index">{gpu.index}</span>
      <span class="cell-value">{v == null ? dash : `${Math.round(v)} ${m.unit}`}</span>
      <span class="cell-owner">{owner(holders)}</span>
      {conditions.length > 0 && (
        <span class="cell-marks">{conditions.map((c) => <span key={c} class={`mark mark-${c}`}>{kConditions.find((k) => k.key === c).mark}</span>)}</span>
      )}
    </>
  );
  const cls = `cell health-${gpu.health}${v == null ? ' unknown' : ''}${conditions.map((c) => ` cond-${c}`).join('')}`;
  const common = { class: cls, style, title: tooltip(gpu, conditions), 'data-uuid': gpu.uuid, 'data-conditions': conditions.join(' ') };
  // One holder: the cell links to its job; a shared GPU's jobs are in the tooltip.
  return holders.length === 1
    ? <a {...common} href={`#/jobs/${holders[0].job}`}>{body}</a>
    : <div {...common}>{body}</div>;
}

export function HeatLegend() {
  return (
    <p class="legend">
      <span class="swatch" style={{ background: heat(0) }} /> low
      <span class="swatch" style={{ background: heat(0.5) }} /> mid
      <span class="swatch" style={{ background: heat(1) }} /> high
      <span class="swatch unknown" /> no reading
    </p>
  );
}

// Each condition with the look it gives a cell.
export function ConditionLegend() {
  return (
    <ul class="legend conditions-legend" aria-label="conditions">
      {kConditions.map((c) => (
        <li key={c.key}><span class={`swatch cell-sample cond-${c.key}`}><span class={`mark mark-${c.key}`}>{c.mark}</span></span> {c.text}</li>
      ))}
    </ul>
  );
}
