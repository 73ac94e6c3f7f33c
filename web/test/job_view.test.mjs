// The job page's logic (src/job_view.js): which buttons a job's state offers, the factors'
// numbers as `gpufleet explain` prints them, a run's length.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobActions, placementText, runSeconds, short } from '../src/job_view.js';

const names = (job) => jobActions(job).map((a) => a.name);

test('buttons per state: cancel while it may still run; hold or release while pending; requeue while running', () => {
  assert.deepEqual(names({ state: 'PENDING', held_by: null }), ['cancel', 'hold']);
  assert.deepEqual(names({ state: 'PENDING', held_by: 'root' }), ['cancel', 'release']);
  assert.deepEqual(names({ state: 'STARTING' }), ['cancel']);
  assert.deepEqual(names({ state: 'RUNNING', requeue: true }), ['cancel', 'requeue']);
  assert.deepEqual(names({ state: 'RUNNING', requeue: false }), ['cancel'], '--no-requeue: the server would refuse');
  for (const state of ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT']) assert.deepEqual(names({ state }), [], state);
});

test('each confirmation says what the action does', () => {
  const [cancel] = jobActions({ state: 'PENDING' });
  assert.match(cancel.what({ state: 'PENDING' }), /leaves the queue/);
  const requeue = jobActions({ state: 'RUNNING', requeue: true, checkpoint_signal: 'USR1' })[1];
  assert.match(requeue.what({ checkpoint_signal: 'USR1' }), /SIGUSR1/);
});

test('factors with one decimal at most, as the CLI prints them', () => {
  assert.equal(short(3600), '3600');
  assert.equal(short(2.94), '2.9');
  assert.equal(short(0), '0');
  assert.equal(short(null), '–');
});

test("a run's length: to its end, or to now while it runs; none if it never ran", () => {
  assert.equal(runSeconds({ start_time_ms: 1000, end_time_ms: 61000 }), 60);
  assert.equal(runSeconds({ start_time_ms: 1000, end_time_ms: null }, 11000), 10);
  assert.equal(runSeconds({ start_time_ms: null }), null);
});

test('placement: the node and its GPUs, or the node and "(no GPU)", never a colon with nothing after it', () => {
  assert.equal(placementText({ node: 'n1', gpu_uuids: ['GPU-a', 'GPU-b'] }), 'n1: GPU-a, GPU-b');
  assert.equal(placementText({ node: 'e2e-node', gpu_uuids: [] }), 'e2e-node (no GPU)');
  assert.equal(placementText({ node: '', gpu_uuids: [] }), '–');
});
