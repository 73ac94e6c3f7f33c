// Formatting of API values for display. Every function takes null for "unknown" and shows '–'.
export const dash = '–';

export function pct(v, digits = 0) {
  return v == null ? dash : `${Number(v).toFixed(digits)} %`;
}

export function num(v, digits = 1) {
  return v == null ? dash : Number(v).toFixed(digits);
}

export function mib(v) {
  if (v == null) return dash;
  return v >= 1024 ? `${(v / 1024).toFixed(1)} GiB` : `${v} MiB`;
}

// GPU-hours as the CLI prints them (FormatGpuHours, src/cli/quota_view.cpp): up to 4 decimals,
// trailing zeros dropped, so a 0.01 GPU-hour budget shows as 0.01 and 100 as 100.
export function gpuHours(v) {
  if (v == null || !Number.isFinite(v)) return dash;
  const text = Number(v).toFixed(4).replace(/\.?0+$/, '');
  return text === '-0' ? '0' : text;
}

// "1 node", "4 GPUs".
export function count(n, noun) {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

// Times in UTC ISO 8601 with milliseconds, as the API's time fields and so the CLI show them
// ("2026-12-02T20:16:51.123Z"): one format on every page, whatever the browser's time zone.
export function time(ms) {
  return ms == null ? dash : new Date(ms).toISOString();
}

// The steps a time axis may put between its ticks, in seconds: whole seconds and up, as its
// labels show whole seconds (chart.jsx), so that no two ticks are labelled alike.
export const kTimeIncrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
  21600, 43200, 86400, 172800, 604800, 1209600, 2592000];

// The UTC calendar day of `ms`: "2026-12-02".
export function day(ms) {
  return ms == null ? dash : new Date(ms).toISOString().slice(0, 10);
}

export function duration(seconds) {
  if (seconds == null) return dash;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const h = Math.floor(s / 3600);
  return h < 48 ? `${h} h ${Math.floor((s % 3600) / 60)} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

// "in 5 min" / "5 min ago" relative to now.
export function relative(ms) {
  if (ms == null) return dash;
  const d = (ms - Date.now()) / 1000;
  return d >= 0 ? `in ${duration(d)}` : `${duration(-d)} ago`;
}

// A pending job's estimated start with what it rests on, as `gpufleet queue` prints it
// (EstimatedStartText, src/cli/views.cpp): "in 25 min 0 s (limits)", "in 10 min 0 s to 25 min
// 0 s (predicted)", "within 25 min 0 s (predicted)", "now (preempting)"; from
// estimated_start_ms alone for a server older than ranges. `now` is injectable for tests.
export function startEstimate(job, now = Date.now()) {
  const latest = job.estimated_start_ms;
  if (latest == null) return dash;
  const ahead = (ms) => Math.max(0, (ms - now) / 1000);
  const inTime = (ms) => (ahead(ms) < 1 ? 'now' : `in ${duration(ahead(ms))}`);
  const s = job.start_estimate;
  if (!s) return inTime(latest);
  if (s.basis === 'time_limits') return `${inTime(latest)} (limits)`;
  if (s.basis === 'preemption') return `${inTime(latest)} (preempting)`;
  if (ahead(latest) < 1 || duration(ahead(s.earliest_ms)) === duration(ahead(latest))) {
    return `${inTime(latest)} (predicted)`;
  }
  if (ahead(s.earliest_ms) < 1) return `within ${duration(ahead(latest))} (predicted)`;
  return `in ${duration(ahead(s.earliest_ms))} to ${duration(ahead(latest))} (predicted)`;
}

// What an estimated start rests on, for a tooltip or a detail line.
export function startBasis(job) {
  const s = job.start_estimate;
  if (!s) return '';
  if (s.basis === 'time_limits') return 'from time limits: the latest the limits allow';
  if (s.basis === 'preemption') return 'once its victims stop';
  return `from predicted run times: ${time(s.earliest_ms)} (median estimates) to ${time(s.latest_ms)} (high estimates)`;
}

export function money(energy) {
  if (!energy || energy.cost == null) return dash;
  return `${energy.cost.toFixed(2)} ${energy.currency || ''}`.trim();
}

export const kFinished = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']);
