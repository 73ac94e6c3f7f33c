// Queue and jobs: the pending jobs in the scheduler's order (their place in it, why each waits,
// when it should start), then the running ones, live from the jobs stream; below, the caller's
// recently finished jobs (a plain GET, read again whenever the live list changes, since a job
// leaves it when it ends). Filters by user, team, class and state narrow all three tables and
// live in the route's query (#/queue?user=alice&state=PENDING), so a link keeps them. The API
// shows a user their own jobs and an operator or admin everyone's; a position counts every
// user's jobs ahead, as `gpufleet explain` does.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { useLive } from '../live.js';
import { duration, kFinished, startBasis, startEstimate, time } from '../format.js';
import {
  applyFilters, filterChoices, filtersFromHash, gpusText, hashWithFilters, jobLabel, kFilters, runningOrder,
  schedulingOrder, startAt,
} from '../queue_view.js';
import { ErrorNote, Loading, NeedSignIn, StateBadge } from './common.jsx';

const kHeads = {
  pending: ['position', 'id', 'name', 'user', 'team', 'class', 'state', 'GPUs', 'submitted', 'reason', 'estimated start'],
  running: ['id', 'name', 'user', 'team', 'class', 'state', 'GPUs', 'submitted', 'node', 'run time'],
  finished: ['id', 'name', 'user', 'team', 'class', 'state', 'GPUs', 'submitted', 'ended', 'exit code'],
};

function EstimatedStart({ job }) {
  const at = startAt(job);
  return (
    <td class="estimate" title={startBasis(job)}>
      {startEstimate(job)}
      {at && <small class="at">{at}</small>}
    </td>
  );
}

function JobRow({ job, columns, now }) {
  const label = jobLabel(job);
  return (
    <tr data-job={job.id}>
      {columns === 'pending' && <td class="num position">{job.queue_position ?? '–'}</td>}
      <td><a href={`#/jobs/${job.id}`} title={label === String(job.id) ? undefined : `job ${job.id}`}>{label}</a></td>
      <td>{job.name}</td>
      <td>{job.user}</td>
      <td>{job.team}</td>
      <td>{job.priority}</td>
      <td><StateBadge state={job.state} /></td>
      <td class="num">{gpusText(job)}</td>
      <td class="time">{time(job.submit_time_ms)}</td>
      {columns === 'pending' && <td class="reason">{job.reason}</td>}
      {columns === 'pending' && <EstimatedStart job={job} />}
      {columns === 'running' && <td>{job.node ?? '–'}</td>}
      {columns === 'running' && <td>{job.start_time_ms == null ? '–' : duration(Math.max(0, now - job.start_time_ms) / 1000)}</td>}
      {columns === 'finished' && <td class="time">{time(job.end_time_ms)}</td>}
      {columns === 'finished' && <td class="num">{job.exit_code ?? '–'}</td>}
    </tr>
  );
}

function JobTable({ jobs, columns, empty, now }) {
  if (jobs.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table class={`jobs jobs-${columns}`}>
      <thead>
        <tr>{kHeads[columns].map((h) => <th key={h}>{h}</th>)}</tr>
      </thead>
      <tbody>{jobs.map((job) => <JobRow key={job.id} job={job} columns={columns} now={now} />)}</tbody>
    </table>
  );
}

// The filter bar: one select per filter, its choices the values the listed jobs have (and the
// one the link asked for, even if no job has it now).
function Filters({ filters, choices }) {
  const set = (name, value) => {
    location.hash = hashWithFilters('#/queue', { ...filters, [name]: value });
  };
  return (
    <form class="filters" onSubmit={(e) => e.preventDefault()}>
      {kFilters.map(([name]) => {
        const values = choices[name].includes(filters[name]) || !filters[name] ? choices[name] : [...choices[name], filters[name]];
        return (
          <label key={name}>
            {name}{' '}
            <select name={name} value={filters[name]} onChange={(e) => set(name, e.currentTarget.value)}>
              <option value="">all</option>
              {values.map((v) => <option key={v} value={v}>{v}</option>)}
            </select>
          </label>
        );
      })}
      {kFilters.some(([name]) => filters[name]) && <a href="#/queue" class="clear">clear filters</a>}
    </form>
  );
}

function useFinished(activeIds) {
  const [jobs, setJobs] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const abort = new AbortController();
    apiGet('/api/v1/jobs?all=1&limit=200', abort.signal)
      .then((body) => { setJobs(body.jobs.filter((j) => kFinished.has(j.state))); setError(null); })
      .catch((e) => { if (!abort.signal.aborted) setError(e); });
    return () => abort.abort();
  }, [activeIds]);
  return { jobs, error };
}

// Run times move on without an event: the page is drawn again every few seconds.
function useNow(everyMs) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

function QueueTables({ jobs, hash }) {
  const finished = useFinished(jobs.map((j) => `${j.id}:${j.state}`).join(','));
  useNow(5000);
  const now = Date.now();
  const filters = filtersFromHash(hash);
  const choices = filterChoices([...jobs, ...(finished.jobs || [])]);
  const shown = applyFilters(jobs, filters);
  const pending = schedulingOrder(shown.filter((j) => j.state === 'PENDING'));
  const running = runningOrder(shown.filter((j) => j.state !== 'PENDING'));
  return (
    <>
      <Filters filters={filters} choices={choices} />
      <h2>Pending <span class="count">{pending.length}</span></h2>
      <JobTable jobs={pending} columns="pending" empty="Nothing waits." now={now} />
      <h2>Running <span class="count">{running.length}</span></h2>
      <JobTable jobs={running} columns="running" empty="Nothing runs." now={now} />
      <h2>Recently finished</h2>
      {finished.error && <ErrorNote error={finished.error} />}
      {!finished.error && !finished.jobs && <Loading what="finished jobs" />}
      {finished.jobs && (
        <JobTable jobs={applyFilters(finished.jobs, filters).slice(0, 50)} columns="finished" empty="No finished jobs." now={now} />
      )}
    </>
  );
}

export function Queue({ token, hash }) {
  const live = useLive(['jobs']);
  if (!token) return <section><h1>Queue</h1><NeedSignIn /></section>;
  if (live.errors.jobs && !live.jobs) return <section><h1>Queue</h1><ErrorNote error={live.errors.jobs} /></section>;
  if (!live.jobs) return <section><h1>Queue</h1><Loading what="jobs" /></section>;
  return (
    <section>
      <h1>Queue</h1>
      {live.errors.jobs && <ErrorNote error={live.errors.jobs} />}
      <QueueTables jobs={live.jobs} hash={hash} />
    </section>
  );
}
