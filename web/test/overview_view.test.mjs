// The overview's logic (src/overview_view.js): a GPU's conditions, the cluster's counts, the
// series as chart columns, today's figures from a monthly report, the viewer's zone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conditionsOf, countGpus, kBusyUtilPct, seriesColumns, todayOf, viewerZone } from '../src/overview_view.js';

const gpu = (util, { held = true, health = 'ok', conditions = [], lost = false } = {}) => ({
  health,
  conditions,
  holders: held ? [{ job: 1, user: 'root', share_milli: 1000 }] : [],
  sample: util === undefined ? null : { util_gpu_pct: util, lost },
});

test('an allocated GPU under the busy threshold, without a reading or without its process is idle while allocated', () => {
  assert.equal(kBusyUtilPct, 5, 'the server\'s busy_util_pct (the report\'s kIdleUtilPct)');
  assert.deepEqual(conditionsOf(gpu(4)), ['idle']);
  assert.deepEqual(conditionsOf(gpu(5)), []);
  assert.deepEqual(conditionsOf(gpu(undefined)), ['idle']);
  assert.deepEqual(conditionsOf(gpu(90, { conditions: ['allocated_no_process'] })), ['idle']);
  assert.deepEqual(conditionsOf(gpu(0, { held: false })), [], 'a free GPU is not idle while allocated');
  assert.deepEqual(conditionsOf(gpu(10), 20), ['idle'], 'the threshold the server sent');
});

test('each server condition and health has its own mark, in the legend\'s order', () => {
  assert.deepEqual(conditionsOf(gpu(50, { held: false, conditions: ['unallocated_process'] })), ['unmanaged']);
  assert.deepEqual(conditionsOf(gpu(50, { conditions: ['gpu_memory_over_limit'] })), ['over-memory']);
  assert.deepEqual(conditionsOf(gpu(50, { health: 'degraded' })), ['degraded']);
  assert.deepEqual(conditionsOf(gpu(0, { health: 'failed' })), ['failed', 'idle']);
  assert.deepEqual(conditionsOf(gpu(50, { held: false, lost: true })), ['failed']);
});

test('the counts by hand: 5 GPUs, 3 allocated of which 1 busy, 1 failed', () => {
  const gpus = [gpu(80), gpu(2), gpu(undefined), gpu(50, { held: false }), gpu(0, { held: false, health: 'failed' })];
  assert.deepEqual(countGpus(gpus), { gpus: 5, allocated: 3, busy: 1, idle: 2, failed: 1 });
});

test('series columns: a class or team missing from a point counts 0 there, x in seconds, wait in minutes', () => {
  const points = [
    { time_ms: 1000, gpus: 4, allocated: 1, busy: 1, used: 0.5, power_w: 100, queue: [{ priority: 'normal', pending: 2, oldest_wait_s: 120 }], teams: [] },
    { time_ms: 6000, gpus: 4, allocated: 3, busy: 2, used: 1.5, power_w: 300, queue: [{ priority: 'high', pending: 1, oldest_wait_s: 60 }, { priority: 'normal', pending: 0, oldest_wait_s: 0 }], teams: [{ team: 'ml', guaranteed: 2, held: 3, borrowed: 1 }] },
  ];
  const c = seriesColumns(points);
  assert.deepEqual(c.classes, ['normal', 'high']);
  assert.deepEqual(c.teams, ['ml']);
  assert.deepEqual(c.gpus, [[1, 6], [4, 4], [1, 3], [1, 2], [0.5, 1.5]]);
  assert.deepEqual(c.queue, [[1, 6], [2, 0], [0, 1]]);
  assert.deepEqual(c.wait, [[1, 6], [2, 0], [0, 1]]);
  assert.deepEqual(c.power, [[1, 6], [100, 300]]);
  assert.deepEqual(c.teamsData, [[1, 6], [0, 3], [0, 2], [0, 1]]);
});

test("today's figures are the report's day of today (UTC), or none before its first sample", () => {
  const report = { days: [{ day: '2026-12-06', figures: { allocated_gpu_hours: 9, energy: { energy_kwh: 1 } } },
    { day: '2026-12-07', figures: { allocated_gpu_hours: 1.25, energy: { energy_kwh: 0.5 } } }] };
  assert.deepEqual(todayOf(report, Date.parse('2026-12-07T23:59:00Z')), { day: '2026-12-07', gpuHours: 1.25, kwh: 0.5 });
  assert.equal(todayOf(report, Date.parse('2026-12-08T00:00:00Z')), null);
});

test('the viewer\'s zone with its offset', () => {
  const date = { getTimezoneOffset: () => -780 };
  assert.equal(viewerZone(date, 'Pacific/Auckland'), 'Pacific/Auckland, UTC+13:00');
  assert.equal(viewerZone({ getTimezoneOffset: () => 210 }, 'America/St_Johns'), 'America/St_Johns, UTC-03:30');
});
