// The queue page's rows (src/pages/queue.jsx), apart from preact so that node tests them: the
// scheduling order, the array-task label, the filters and their place in the URL.
import { time } from './format.js';

// The filters, in the order the page shows them, each with the job field it matches exactly.
export const kFilters = [
  ['user', 'user'],
  ['team', 'team'],
  ['class', 'priority'],
  ['state', 'state'],
];

// A job's label as `gpufleet queue` prints an array task ("40_3": the array's id and the task's
// index, ArrayTaskLabel in src/cli/views.cpp); its id otherwise.
export function jobLabel(job) {
  return job.array_job != null && job.array_index != null ? `${job.array_job}_${job.array_index}` : String(job.id);
}

// The GPUs a job asks for as the CLI shows them (JobGpusText): its share of one GPU, else the count.
export function gpusText(job) {
  return job.gpu_share != null ? String(job.gpu_share) : String(job.gpus);
}

// Pending jobs in the scheduler's order: by the API's queue_position (the 1-based place the last
// pass gave the job; `gpufleet explain` shows the same), then those without one (held back by a
// dependency or an array's limit, or too new for a pass) by submit time and id.
export function schedulingOrder(pending) {
  const key = (j) => (j.queue_position == null ? Infinity : j.queue_position);
  return [...pending].sort((a, b) => key(a) - key(b) || a.submit_time_ms - b.submit_time_ms || a.id - b.id);
}

// Running (and starting, stopping) jobs: the longest running first.
export function runningOrder(running) {
  const key = (j) => (j.start_time_ms == null ? Infinity : j.start_time_ms);
  return [...running].sort((a, b) => key(a) - key(b) || a.id - b.id);
}

// The filters of a hash route's query ("#/queue?user=alice&class=high"): {user, team, class,
// state}, each a value or ''.
export function filtersFromHash(hash) {
  const at = hash.indexOf('?');
  const params = new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
  return Object.fromEntries(kFilters.map(([name]) => [name, params.get(name) || '']));
}

// The hash route `base` ("#/queue") with the filters set in `filters` as its query.
export function hashWithFilters(base, filters) {
  const params = new URLSearchParams();
  for (const [name] of kFilters) if (filters[name]) params.set(name, filters[name]);
  const query = params.toString();
  return query ? `${base}?${query}` : base;
}

// The jobs every set filter matches.
export function applyFilters(jobs, filters) {
  return jobs.filter((job) => kFilters.every(([name, field]) => !filters[name] || job[field] === filters[name]));
}

// The values each filter can take among `jobs`, sorted: {user: [...], ...}.
export function filterChoices(jobs) {
  return Object.fromEntries(kFilters.map(([name, field]) => [name, [...new Set(jobs.map((j) => j[field]))].sort()]));
}

// When a pending job should start, in UTC ISO 8601: its range from predicted run times
// ("2026-12-02T20:16:51.000Z – 2026-12-02T20:41:51.000Z"), else the one time; '' without one.
export function startAt(job) {
  if (job.estimated_start_ms == null) return '';
  const s = job.start_estimate;
  if (s && s.basis === 'predictions' && s.earliest_ms != null && s.earliest_ms !== s.latest_ms) {
    return `${time(s.earliest_ms)} – ${time(s.latest_ms)}`;
  }
  return time(job.estimated_start_ms);
}
