// The monthly report's table rows (src/report_rows.js) from report JSON as the API writes it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kWorkloadHeads, measured, workloadRows } from '../src/report_rows.js';

const usage = (jobs, minutes, usedPct) => ({
  jobs,
  minutes_allocated: minutes,
  allocated_gpu_hours: minutes / 60,
  used_pct: usedPct,
  used_gpu_hours: (minutes / 60) * (usedPct / 100),
  idle_gpu_hours: minutes > 0 ? 0.5 : 0,
  energy: { energy_kwh: 0 },
});

// Two pods of one Deployment (3 GPU-hours, 40 % while allocated: 1.2 used), a pod whose owner
// the server could not read, and one that held no GPU minute yet.
const report = {
  workloads: [
    { team: 'research', workload: 'Deployment/train', usage: usage(2, 180, 40) },
    { team: 'serving', workload: '', usage: usage(1, 30, 10) },
    { team: 'dev', workload: 'Pod/notebook', usage: usage(1, 0, 0) },
  ],
};

test('a row per workload, in the report\'s order, under the table\'s heads', () => {
  const rows = workloadRows(report);
  assert.equal(rows.length, 3);
  assert.ok(rows.every((r) => r.length === kWorkloadHeads.length));
  assert.deepEqual(rows[0], ['Deployment/train', 'research', 2, '3', '40.0 %', '1.2', '0.5']);
  assert.deepEqual(rows[1], ['(owner not known)', 'serving', 1, '0.5', '10.0 %', '0.05', '0.5']);
});

test('without an allocated minute nothing was measured: a dash, not the API\'s 0', () => {
  assert.deepEqual(workloadRows(report)[2], ['Pod/notebook', 'dev', 1, '0', '–', '–', '0']);
  assert.equal(measured({ minutes_allocated: 0 }, 0), null);
  assert.equal(measured({ minutes_allocated: 1 }, 0), 0);
});

test('a site without Kubernetes, or an older server, has no workloads table', () => {
  assert.deepEqual(workloadRows({ workloads: [] }), []);
  assert.deepEqual(workloadRows({}), []);
});
