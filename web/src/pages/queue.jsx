// Queue and jobs: the pending jobs (why each waits, when it should start) and the running ones,
// live from the jobs stream; below, the caller's recently finished jobs (a plain GET, read
// again whenever the live list changes, since a job leaves it when it ends). The API shows a
// user their own jobs and an operator or admin everyone's.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { useLive } from '../live.js';
import { duration, kFinished, startBasis, startEstimate, time } from '../format.js';
import { ErrorNote, Loading, NeedSignIn, StateBadge } from './common.jsx';

function JobRow({ job, columns }) {
  return (
    <tr data-job={job.id}>
      <td><a href={`#/jobs/${job.id}`}>{job.id}</a></td>
      <td>{job.name}</td>
      <td>{job.user}</td>
      <td>{job.team}</td>
      <td><StateBadge state={job.state} /></td>
      <td>{job.priority}</td>
      <td class="num">{job.gpus}</td>
      {columns === 'pending' && <td class="reason">{job.reason}</td>}
      {columns === 'pending' && <td title={`${time(job.estimated_start_ms)} ${startBasis(job)}`.trim()}>{startEstimate(job)}</td>}
      {columns === 'running' && <td>{job.node}</td>}
      {columns === 'running' && <td>{job.start_time_ms == null ? '–' : duration((Date.now() - job.start_time_ms) / 1000)}</td>}
      {columns === 'finished' && <td>{time(job.end_time_ms)}</td>}
      {columns === 'finished' && <td class="num">{job.exit_code ?? '–'}</td>}
    </tr>
  );
}

const kHeads = {
  pending: ['reason', 'estimated start'],
  running: ['node', 'running for'],
  finished: ['ended', 'exit code'],
};

function JobTable({ jobs, columns, empty }) {
  if (jobs.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table class={`jobs jobs-${columns}`}>
      <thead>
        <tr>
          {['id', 'name', 'user', 'team', 'state', 'priority', 'GPUs', ...kHeads[columns]].map((h) => <th key={h}>{h}</th>)}
        </tr>
      </thead>
      <tbody>{jobs.map((job) => <JobRow key={job.id} job={job} columns={columns} />)}</tbody>
    </table>
  );
}

function Finished({ activeIds }) {
  const [jobs, setJobs] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const abort = new AbortController();
    apiGet('/api/v1/jobs?all=1&limit=200', abort.signal)
      .then((body) => { setJobs(body.jobs.filter((j) => kFinished.has(j.state))); setError(null); })
      .catch((e) => { if (!abort.signal.aborted) setError(e); });
    return () => abort.abort();
  }, [activeIds]);
  if (error) return <ErrorNote error={error} />;
  if (!jobs) return <Loading what="finished jobs" />;
  return <JobTable jobs={jobs.slice(0, 50)} columns="finished" empty="No finished jobs." />;
}

export function Queue({ token }) {
  const live = useLive(['jobs']);
  if (!token) return <section><h1>Queue</h1><NeedSignIn /></section>;
  if (live.errors.jobs && !live.jobs) return <section><h1>Queue</h1><ErrorNote error={live.errors.jobs} /></section>;
  if (!live.jobs) return <section><h1>Queue</h1><Loading what="jobs" /></section>;
  const pending = live.jobs.filter((j) => j.state === 'PENDING').sort((a, b) => a.id - b.id);
  const running = live.jobs.filter((j) => j.state !== 'PENDING').sort((a, b) => a.id - b.id);
  return (
    <section>
      <h1>Queue</h1>
      {live.errors.jobs && <ErrorNote error={live.errors.jobs} />}
      <h2>Pending <span class="count">{pending.length}</span></h2>
      <JobTable jobs={pending} columns="pending" empty="Nothing waits." />
      <h2>Running <span class="count">{running.length}</span></h2>
      <JobTable jobs={running} columns="running" empty="Nothing runs." />
      <h2>Recently finished</h2>
      <Finished activeIds={live.jobs.map((j) => `${j.id}:${j.state}`).join(',')} />
    </section>
  );
}
