// The dashboard's formatting (src/format.js) and the report's per-day chart data
// (src/report_series.js).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { count, day, gpuHours, kTimeIncrs, startBasis, startEstimate, time } from '../src/format.js';
import { anyDaySampled, dailySeries } from '../src/report_series.js';

test('GPU-hours keep up to 4 decimals, as the CLI prints them, so small budgets are not 0', () => {
  // The CLI's FormatGpuHours (src/cli/quota_view.cpp) on the same values.
  const cases = [[0.01, '0.01'], [0.001, '0.001'], [0.00112, '0.0011'], [100, '100'], [2.5, '2.5'],
    [12.34567, '12.3457'], [0, '0'], [0.00004, '0'], [-0.00001, '0'], [null, '–']];
  for (const [hours, shown] of cases) assert.equal(gpuHours(hours), shown, `${hours}`);
});

test('times are UTC ISO 8601 with milliseconds, as the API and the CLI write them', () => {
  // The API's FormatRfc3339 test values (src/core/duration_test.cpp).
  assert.equal(time(1700000000123), '2023-11-14T22:13:20.123Z');
  assert.equal(time(0), '1970-01-01T00:00:00.000Z');
  assert.equal(time(null), '–');
  assert.equal(day(1700000000123), '2023-11-14');
});

test('estimated starts say what they rest on, and predicted ones give a range', () => {
  const now = 1700000000000;
  const at = (s) => now + s * 1000;
  const job = (basis, earliest, latest) => ({
    estimated_start_ms: at(latest),
    start_estimate: basis && { basis, earliest_ms: at(earliest), latest_ms: at(latest) },
  });
  assert.equal(startEstimate(job('time_limits', 1500, 1500), now), 'in 25 min 0 s (limits)');
  assert.equal(startEstimate(job('predictions', 600, 1500), now), 'in 10 min 0 s to 25 min 0 s (predicted)');
  assert.equal(startEstimate(job('predictions', 0, 1500), now), 'within 25 min 0 s (predicted)');
  assert.equal(startEstimate(job('predictions', 1500, 1500), now), 'in 25 min 0 s (predicted)');
  assert.equal(startEstimate(job('preemption', 0, 0), now), 'now (preempting)');
  assert.equal(startEstimate(job(null, 0, 90), now), 'in 1 min 30 s');  // an older server
  assert.equal(startEstimate({ estimated_start_ms: null }, now), '–');
  assert.match(startBasis(job('predictions', 600, 1500)), /^from predicted run times: .*\(median estimates\) to .*\(high estimates\)$/);
  assert.equal(startBasis(job('time_limits', 1500, 1500)), 'from time limits: the latest the limits allow');
});

test('counts take the plural only when not one', () => {
  assert.equal(count(1, 'node'), '1 node');
  assert.equal(count(4, 'GPU'), '4 GPUs');
  assert.equal(count(0, 'node'), '0 nodes');
});

const day0 = (d, observed, allocated, util) => ({
  day: d, figures: { minutes_observed: observed, allocated_pct: allocated, util_pct: util, used_pct: 99 },
});

test('the per-day chart puts each day at its UTC midnight and leaves days without samples out', () => {
  const days = [day0('2026-12-01', 0, 0, 0), day0('2026-12-02', 60, 50, 20), day0('2026-12-03', 0, 0, 0)];
  const [xs, allocated, used] = dailySeries(days);
  // 2026-12-01 is day 20788 since 1970-01-01 (56 years with 14 leap days, then 334 days).
  assert.deepEqual(xs, [20788 * 86400, 20789 * 86400, 20790 * 86400]);
  assert.deepEqual(allocated, [null, 50, null]);
  // "used" is util_pct, a share of all GPU time as allocated is, not used_pct (of the allocated).
  assert.deepEqual(used, [null, 20, null]);
  assert.equal(anyDaySampled(days), true);
  assert.equal(anyDaySampled([days[0], days[2]]), false);
});

test('a time axis steps by whole seconds at least: its labels show seconds, so no two ticks read alike', () => {
  assert.equal(kTimeIncrs[0], 1);
  assert.ok(kTimeIncrs.every((s, i) => Number.isInteger(s) && (i === 0 || s > kTimeIncrs[i - 1])));
  // Ticks 1 s apart over a 2 s run: three labels, all different (to the second).
  const labels = [0, 1, 2].map((s) => time(Date.parse('2026-12-07T10:00:00Z') + s * 1000).slice(11, 19));
  assert.equal(new Set(labels).size, 3);
});
