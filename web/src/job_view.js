// The job page's logic that needs no DOM (node tests: test/job_view.test.mjs): which actions a
// job's state offers, and what each does, as the CLI's commands do it.

// Each action: its POST /api/v1/jobs/ID/<name>, its button, whether the job's state allows it
// and the confirmation's sentence. The server remains the judge (who may, a state changed
// meanwhile): the page shows its answer as it is.
export const kActions = [
  {
    name: 'cancel',
    label: 'Cancel',
    allowed: (job) => ['PENDING', 'STARTING', 'RUNNING'].includes(job.state),
    what: (job) => (job.state === 'PENDING'
      ? 'It leaves the queue and ends CANCELLED.'
      : 'Its processes get SIGTERM, then SIGKILL after the grace period; it ends CANCELLED.'),
  },
  {
    name: 'hold',
    label: 'Hold',
    allowed: (job) => job.state === 'PENDING' && !job.held_by,
    what: () => 'It stays in the queue but does not start until released.',
  },
  {
    name: 'release',
    label: 'Release',
    allowed: (job) => job.state === 'PENDING' && !!job.held_by,
    what: (job) => `It may start again (held by ${job.held_by}).`,
  },
  {
    name: 'requeue',
    label: 'Requeue',
    // --no-requeue jobs must not run twice: the server refuses, so the page does not offer it.
    allowed: (job) => job.state === 'RUNNING' && job.requeue !== false,
    what: (job) => `It gets its checkpoint signal (SIG${job.checkpoint_signal || 'TERM'}), then SIGKILL after the grace period, and goes back to the queue at its place to run again.`,
  },
];

export function jobActions(job) {
  return kActions.filter((a) => a.allowed(job));
}

// A number with one decimal at most, as `gpufleet explain` prints factors: 3600, 2.9.
export function short(v) {
  if (v == null || !Number.isFinite(Number(v))) return '–';
  return String(Math.round(Number(v) * 10) / 10);
}

// The seconds a run lasted (to `now` while it runs); null if it never ran.
export function runSeconds(run, now = Date.now()) {
  if (run.start_time_ms == null) return null;
  return ((run.end_time_ms ?? now) - run.start_time_ms) / 1000;
}

// Where a job runs, for its page: "node-a: GPU-1, GPU-2"; a job without GPUs "node-a (no GPU)"
// (not "node-a:" with nothing after it); a job not placed '–'.
export function placementText(job) {
  if (!job.node) return '–';
  const gpus = job.gpu_uuids || [];
  return gpus.length === 0 ? `${job.node} (no GPU)` : `${job.node}: ${gpus.join(', ')}`;
}
