// The queue page's rows (src/queue_view.js): the scheduling order, array-task labels, the
// filters and their URL form, and estimated starts as UTC ISO 8601.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyFilters, filterChoices, filtersFromHash, gpusText, hashWithFilters, jobLabel, runningOrder, schedulingOrder,
  startAt,
} from '../src/queue_view.js';

const job = (id, fields = {}) => ({ id, submit_time_ms: 1000 * id, user: 'alice', team: 't', priority: 'normal', state: 'PENDING', ...fields });

test('pending jobs follow the API queue_position, not their ids; jobs without one come last by submit time', () => {
  const jobs = [job(1, { queue_position: 3 }), job(2), job(3, { queue_position: 1 }), job(4, { queue_position: 2 }),
    job(5, { submit_time_ms: 500 })];
  assert.deepEqual(schedulingOrder(jobs).map((j) => j.id), [3, 4, 1, 5, 2]);
  assert.deepEqual(jobs.map((j) => j.id), [1, 2, 3, 4, 5], 'the input is not sorted in place');
});

test('running jobs: the longest running first', () => {
  const jobs = [job(1, { start_time_ms: 30 }), job(2, { start_time_ms: 10 }), job(3)];
  assert.deepEqual(runningOrder(jobs).map((j) => j.id), [2, 1, 3]);
});

test('array tasks are ID_INDEX as `gpufleet queue` prints them; a share of a GPU is shown as the share', () => {
  assert.equal(jobLabel(job(14, { array_job: 12, array_index: 2 })), '12_2');
  assert.equal(jobLabel(job(12, { array_job: 12, array_index: 0 })), '12_0');
  assert.equal(jobLabel(job(9, { array_job: null, array_index: null })), '9');
  assert.equal(gpusText({ gpus: 1, gpu_share: 0.25 }), '0.25');
  assert.equal(gpusText({ gpus: 2, gpu_share: null }), '2');
});

test('filters come from the route query and go back to it; each matches its field exactly', () => {
  const filters = filtersFromHash('#/queue?user=alice&class=high&bogus=1');
  assert.deepEqual(filters, { user: 'alice', team: '', class: 'high', state: '' });
  assert.deepEqual(filtersFromHash('#/queue'), { user: '', team: '', class: '', state: '' });
  assert.equal(hashWithFilters('#/queue', filters), '#/queue?user=alice&class=high');
  assert.equal(hashWithFilters('#/queue', { user: '', team: 'a b&c' }), '#/queue?team=a+b%26c');
  assert.deepEqual(filtersFromHash(hashWithFilters('#/queue', { team: 'a b&c' })).team, 'a b&c');
  assert.equal(hashWithFilters('#/queue', {}), '#/queue');
  const jobs = [job(1), job(2, { user: 'bob', priority: 'high' }), job(3, { priority: 'high', state: 'RUNNING' }),
    job(4, { user: 'alicia' })];
  assert.deepEqual(applyFilters(jobs, filters).map((j) => j.id), [3]);
  assert.deepEqual(applyFilters(jobs, { user: 'alice' }).map((j) => j.id), [1, 3], 'exact, not a prefix');
  assert.deepEqual(applyFilters(jobs, { class: 'high', state: 'PENDING' }).map((j) => j.id), [2]);
  assert.deepEqual(applyFilters(jobs, {}).length, 4);
  assert.deepEqual(filterChoices(jobs), {
    user: ['alice', 'alicia', 'bob'], team: ['t'], class: ['high', 'normal'], state: ['PENDING', 'RUNNING'],
  });
});

test('an estimated start is UTC ISO 8601: a range from predictions, else the one time', () => {
  const t = (s) => 1700000000000 + s * 1000;
  assert.equal(startAt({ estimated_start_ms: null }), '');
  assert.equal(startAt({ estimated_start_ms: t(60) }), '2023-11-14T22:14:20.000Z');
  assert.equal(startAt({ estimated_start_ms: t(60), start_estimate: { basis: 'time_limits', earliest_ms: t(60), latest_ms: t(60) } }),
    '2023-11-14T22:14:20.000Z');
  assert.equal(startAt({ estimated_start_ms: t(60), start_estimate: { basis: 'predictions', earliest_ms: t(0), latest_ms: t(60) } }),
    '2023-11-14T22:13:20.000Z – 2023-11-14T22:14:20.000Z');
  assert.equal(startAt({ estimated_start_ms: t(60), start_estimate: { basis: 'predictions', earliest_ms: t(60), latest_ms: t(60) } }),
    '2023-11-14T22:14:20.000Z');
});
