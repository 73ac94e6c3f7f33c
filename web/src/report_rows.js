// Rows of the dashboard's monthly report tables from the report JSON (docs/reports.md). Plain
// functions, tested by node alone (web/test/report_rows.test.mjs).
import { gpuHours, pct } from './format.js';

// What was measured of minute figures (cluster, GPU) or a team's, user's or workload's usage:
// `value` (the utilisation while allocated, or the GPU-hours used, which derive from it), null
// ('–') without an allocated minute, where the API's used_pct is 0 for want of any.
export function measured(f, value) {
  return f.minutes_allocated > 0 ? value : null;
}

// The Kubernetes workloads: each workload's pods summed by namespace. Only a server that
// follows Kubernetes (`gpufleet server --kubernetes`) has any; an older server's report has no
// `workloads` at all.

// The table's columns, in the order workloadRows writes them (those of the Teams table, so a
// workload reads as a team does).
export const kWorkloadHeads = ['workload', 'namespace', 'jobs', 'allocated GPU-h',
  'utilisation while allocated', 'used GPU-h', 'idle while allocated GPU-h'];

// One row per workload: its name as the API server gives its owner ("Deployment/train"), or
// "(owner not known)" where the server could not read the API server; the utilisation and
// used GPU-hours '–' without an allocated minute (the API's 0 is then no measurement).
export function workloadRows(report) {
  return (report.workloads ?? []).map((w) => {
    const u = w.usage;
    return [w.workload || '(owner not known)', w.team, u.jobs, gpuHours(u.allocated_gpu_hours),
      pct(measured(u, u.used_pct), 1), gpuHours(measured(u, u.used_gpu_hours)),
      gpuHours(u.idle_gpu_hours)];
  });
}
