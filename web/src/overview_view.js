// The overview's logic that needs no DOM (node tests: test/overview_view.test.mjs): what a GPU
// cell shows as its conditions, the cluster's counts from the gpus list, the series as chart
// columns, today's figures from the monthly report, and the viewer's time zone.

// An allocated GPU under this utilisation is idle while allocated. The server sends its own
// (busy_util_pct of GET /api/v1/cluster/series, the monthly report's threshold); the GPU map,
// which reads no series, uses this same value (the browser test holds the two equal).
export const kBusyUtilPct = 5;

// Each condition a cell can carry, in the order they are drawn and listed in the legend: a
// class for the cell (a pattern or an outline, not only a colour), a mark written in the cell
// and the sentence of the legend and tooltip.
export const kConditions = [
  { key: 'failed', mark: '✕ failed', text: 'failed: health failed, or the GPU is lost' },
  { key: 'degraded', mark: '! degraded', text: 'degraded: heat, XID or ECC errors' },
  { key: 'idle', mark: '‖ idle', text: 'idle while allocated: held by a job, under the busy threshold or without its process' },
  { key: 'unmanaged', mark: '⚠ unmanaged', text: 'unmanaged process: a process no job of this GPU owns' },
  { key: 'over-memory', mark: '▲ memory', text: 'over its memory limit: a job uses more GPU memory than it asked for' },
];

function isHeld(gpu) {
  return (gpu.holders && gpu.holders.length > 0) || gpu.job != null;
}

// The reading of a GPU's utilisation, or null (no sample, lost, or not given).
export function utilOf(gpu) {
  const s = gpu.sample;
  return s && !s.lost && s.util_gpu_pct != null ? s.util_gpu_pct : null;
}

// The condition keys of one GPU of GET /api/v1/gpus (kConditions' order).
export function conditionsOf(gpu, busyPct = kBusyUtilPct) {
  const active = new Set(gpu.conditions || []);
  const util = utilOf(gpu);
  const out = [];
  if (gpu.health === 'failed' || gpu.sample?.lost) out.push('failed');
  if (gpu.health === 'degraded') out.push('degraded');
  if (isHeld(gpu) && (util == null || util < busyPct || active.has('allocated_no_process'))) out.push('idle');
  if (active.has('unallocated_process')) out.push('unmanaged');
  if (active.has('gpu_memory_over_limit')) out.push('over-memory');
  return out;
}

// The cluster's counts now from a gpus list: {gpus, allocated, busy, idle, failed} (busy:
// allocated at busyPct or more; idle: allocated and not busy, as the server counts them).
export function countGpus(gpus, busyPct = kBusyUtilPct) {
  const c = { gpus: gpus.length, allocated: 0, busy: 0, idle: 0, failed: 0 };
  for (const gpu of gpus) {
    const conditions = conditionsOf(gpu, busyPct);
    if (conditions.includes('failed')) c.failed += 1;
    if (!isHeld(gpu)) continue;
    c.allocated += 1;
    const util = utilOf(gpu);
    if (util != null && util >= busyPct) c.busy += 1;
  }
  c.idle = c.allocated - c.busy;
  return c;
}

// Names of the classes (or teams) found in any point, in order of first appearance.
function namesIn(points, list, key) {
  const names = [];
  for (const p of points) for (const e of p[list]) if (!names.includes(e[key])) names.push(e[key]);
  return names;
}

function column(points, list, key, name, field) {
  return points.map((p) => {
    const e = p[list].find((x) => x[key] === name);
    return e ? e[field] : 0;
  });
}

// GET /api/v1/cluster/series' points as uPlot columns (x in Unix seconds): gpus (total,
// allocated, busy, used), queue and wait per class, power, and per team held, guarantee and
// borrowed. classes and teams name the columns of each.
export function seriesColumns(points) {
  const xs = points.map((p) => p.time_ms / 1000);
  const classes = namesIn(points, 'queue', 'priority');
  const teams = namesIn(points, 'teams', 'team');
  return {
    classes,
    teams,
    gpus: [xs, points.map((p) => p.gpus), points.map((p) => p.allocated), points.map((p) => p.busy), points.map((p) => p.used)],
    queue: [xs, ...classes.map((c) => column(points, 'queue', 'priority', c, 'pending'))],
    wait: [xs, ...classes.map((c) => column(points, 'queue', 'priority', c, 'oldest_wait_s').map((s) => s / 60))],
    power: [xs, points.map((p) => p.power_w)],
    teamsData: [xs, ...teams.flatMap((t) => [
      column(points, 'teams', 'team', t, 'held'),
      column(points, 'teams', 'team', t, 'guaranteed'),
      column(points, 'teams', 'team', t, 'borrowed'),
    ])],
  };
}

// Today's (UTC) figures in a monthly report (GET /api/v1/report): {gpuHours, kwh}, or null
// when the report has no such day yet.
export function todayOf(report, now = Date.now()) {
  const today = new Date(now).toISOString().slice(0, 10);
  const day = (report.days || []).find((d) => d.day === today);
  if (!day) return null;
  return { day: today, gpuHours: day.figures.allocated_gpu_hours, kwh: day.figures.energy?.energy_kwh ?? null };
}

// "Pacific/Auckland, UTC+13:00": the viewer's zone, shown beside the UTC times.
export function viewerZone(date = new Date(), zone = Intl.DateTimeFormat().resolvedOptions().timeZone) {
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  const hhmm = `${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${zone}, UTC${sign}${hhmm}`;
}
