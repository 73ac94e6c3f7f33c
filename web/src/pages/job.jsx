// One job: its details, its buttons (cancel, hold, release, requeue), why it waits (a pending
// job), its output, each run's GPU charts and its events. The server decides who may read it:
// a user gets their own jobs, an operator or admin any job, anyone else a 404 ("job N not
// found"): the page shows that refusal and never had the details to leak.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { useLive } from '../live.js';
import { Chart } from '../chart.jsx';
import { duration, mib, money, num, pct, startBasis, startEstimate, time } from '../format.js';
import { placementText, runSeconds } from '../job_view.js';
import { ErrorNote, Loading, NeedSignIn, StateBadge } from './common.jsx';
import { JobActions } from './job_actions.jsx';
import { JobExplain } from './job_explain.jsx';
import { JobLog } from './job_log.jsx';

// The chart history of one GPU over the job's run: the server's rings (GET .../series; fine
// resolution, 1 s, for the last hour; coarse, 1 min, for a week), then what the gpus stream
// brought since this page opened.
function useGpuSeries(uuid, fromMs, toMs) {
  const [past, setPast] = useState(null);
  useEffect(() => {
    const abort = new AbortController();
    const resolution = Date.now() - fromMs > 3600 * 1000 ? 'coarse' : 'fine';
    const q = `from_ms=${fromMs}${toMs ? '&to_ms=' + toMs : ''}&resolution=${resolution}`;
    const base = `/api/v1/gpus/${encodeURIComponent(uuid)}/series?${q}`;
    Promise.all(['util_gpu_pct', 'memory_used_mib'].map((m) => apiGet(`${base}&metric=${m}`, abort.signal)))
      .then(([util, memory]) => setPast({ util: util.points, memory: memory.points }))
      .catch(() => { if (!abort.signal.aborted) setPast({ util: [], memory: [] }); });
    return () => abort.abort();
  }, [uuid, fromMs, toMs]);
  return past;
}

// The card's memory (its total, GET /api/v1/gpus), the top of the memory axis: a job's own peak
// would make any use look full.
function cardMib(gpu) {
  return gpu.memory_mib || gpu.sample?.memory_total_mib || null;
}

// gpu: the GPU's entry in the gpus list (null: not read yet; {} where the list lacks it).
function GpuChart({ uuid, gpu, fromMs, toMs }) {
  const live = useLive();  // the samples of the gpus list JobPage keeps open
  const past = useGpuSeries(uuid, fromMs, toMs);
  const recent = live.history.get(uuid) || [];
  const data = useMemo(() => {
    if (!past) return null;
    const points = new Map();  // time_ms → [util, memory GiB]
    for (const [t, v] of past.util) points.set(t, [v, null]);
    for (const [t, v] of past.memory) points.set(t, [(points.get(t) || [null])[0], v / 1024]);
    const last = Math.max(fromMs, ...points.keys());
    for (const s of recent) {
      if (s.time_ms > last && (!toMs || s.time_ms <= toMs)) {
        points.set(s.time_ms, [s.util_gpu_pct, s.memory_used_mib == null ? null : s.memory_used_mib / 1024]);
      }
    }
    const times = [...points.keys()].sort((a, b) => a - b);
    return [times.map((t) => t / 1000), times.map((t) => points.get(t)[0]), times.map((t) => points.get(t)[1])];
  }, [past, recent.length, recent.length && recent[recent.length - 1].time_ms]);
  if (!data || !gpu) return <Loading what="the GPU's history" />;
  const title = `GPU ${gpu.index ?? ''} ${uuid}${gpu.model ? ` (${gpu.model})` : ''}`;
  if (data[0].length === 0) {
    return (
      <p class="muted no-samples" data-uuid={uuid}>
        {title}: {toMs ? 'no samples in this run: it was shorter than the sampling interval, or is older than the history the server keeps (a week, and none from before its last restart).' : 'no samples yet: they appear as the GPU is read.'}
      </p>
    );
  }
  const memory = cardMib(gpu);
  return (
    <Chart
      title={title}
      data={data}
      series={[{ label: 'utilisation', scale: '%', unit: '%' }, { label: 'memory used', scale: 'GiB', unit: 'GiB' }]}
      axes={{ '%': 'utilisation %', GiB: { label: `memory GiB (of ${mib(memory)})`, max: memory == null ? undefined : memory / 1024 } }}
    />
  );
}

function Field({ name, children }) {
  return <><dt>{name}</dt><dd>{children}</dd></>;
}

// "12 min 0 s (high 20 min 0 s): median of 14 runs of train.py; off by 18 % so far".
function predicted(p) {
  const off = p.error ? `; off by ${Math.round(p.error.median_relative * 100)} % (median over the last ${p.error.runs === 1 ? 'run' : `${p.error.runs} runs`} predicted)` : '';
  return `${duration(p.expected_s)} (high ${duration(p.high_s)}): ${p.explanation}${off}`;
}

function Details({ job }) {
  const usage = job.usage;
  return (
    <dl class="fields">
      <Field name="state"><StateBadge state={job.state} /> {job.reason}{job.held_by ? ` (held by ${job.held_by})` : ''}</Field>
      <Field name="name">{job.name}</Field>
      <Field name="owner">{job.user} (uid {job.uid}), team {job.team || '–'}</Field>
      <Field name="command"><code>{job.command.join(' ')}</code></Field>
      <Field name="workdir"><code>{job.workdir}</code></Field>
      <Field name="request">{job.gpus} GPU{job.gpus === 1 ? '' : 's'}{job.gpu_type ? ` of type ${job.gpu_type}` : ''}, priority {job.priority}{job.preemptible ? ', preemptible' : ''}{job.time_limit_s ? `, time limit ${duration(job.time_limit_s)}` : ''}{job.requeue === false ? ', not requeued (--no-requeue)' : ''}</Field>
      {job.gang_job != null && <Field name="gang">rank {job.gang_rank} of the multi-node job <a href={`#/jobs/${job.gang_job}`}>{job.gang_job}</a>{job.nodes > 1 ? `, over ${job.nodes} nodes` : ''}</Field>}
      <Field name="submitted">{time(job.submit_time_ms)}</Field>
      {job.state === 'PENDING' && <Field name="estimated start">{startEstimate(job)}{job.start_estimate ? `, ${startBasis(job)}` : ''}</Field>}
      {job.prediction && <Field name="predicted run time">{predicted(job.prediction)}</Field>}
      <Field name="started">{time(job.start_time_ms)}</Field>
      <Field name="ended">{time(job.end_time_ms)}{job.exit_code != null ? `, exit code ${job.exit_code}` : ''}</Field>
      <Field name="placement">{placementText(job)}</Field>
      {usage && <Field name="usage">mean utilisation {pct(usage.mean_util_pct)}, peak {pct(usage.peak_util_pct)}, peak memory {mib(usage.peak_memory_mib)}, energy {num(usage.energy_kwh, 3)} kWh</Field>}
      {job.energy && <Field name="charge">{num(job.energy.energy_kwh, 3)} kWh, {money(job.energy)}{job.energy.co2_kg != null ? `, ${num(job.energy.co2_kg, 2)} kg CO₂` : ''}</Field>}
    </dl>
  );
}

// One run: when and where it ran, how it ended, and a chart per GPU over its window.
function Run({ run, count, gpuOf }) {
  const seconds = runSeconds(run);
  const ended = run.end_state ? `ended ${run.end_state}${run.end_cause ? `: ${run.end_cause}` : ''}` : 'running';
  return (
    <section class="run" data-run={run.run}>
      <h3>Run {run.run} of {count}</h3>
      <p class="run-window">
        {run.node ? `on ${run.node}, GPU${run.gpus.length === 1 ? '' : 's'} ${run.gpus.map((g) => g.index).join(', ') || 'none'}; ` : ''}
        {run.start_time_ms == null
          ? `placed ${time(run.placed_time_ms)}, never ran`
          : <>from <span class="run-start">{time(run.start_time_ms)}</span> to <span class="run-end">{run.end_time_ms == null ? 'now' : time(run.end_time_ms)}</span> ({duration(seconds)})</>}
        ; {ended}
      </p>
      {run.start_time_ms != null && (run.gpus.length === 0
        ? <p class="muted">This run held no GPU.</p>
        : run.gpus.map((g) => (g.uuid == null
          ? <p key={g.index} class="muted">GPU {g.index}: its node no longer lists it, so it has no history here.</p>
          : <GpuChart key={g.uuid} uuid={g.uuid} gpu={gpuOf(g.uuid)} fromMs={run.start_time_ms} toMs={run.end_time_ms} />)))}
    </section>
  );
}

function Events({ events }) {
  if (events.length === 0) return <p class="muted">No events.</p>;
  return (
    <table class="events">
      <thead><tr><th>time</th><th>kind</th><th>by</th><th>what</th></tr></thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.seq}><td>{time(e.time_ms)}</td><td>{e.kind}</td><td>{e.actor}</td><td>{e.message}</td></tr>
        ))}
      </tbody>
    </table>
  );
}

const kRunning = new Set(['STARTING', 'RUNNING']);

export function JobPage({ id, token }) {
  const live = useLive(['jobs', 'gpus']);
  const [state, setState] = useState({ job: null, events: null, runs: null, error: null });
  const [acted, setActed] = useState(0);  // bumped by a button: read the job again
  // Read again whenever the live list shows this job changed (a state, a reason, a start).
  const liveEntry = (live.jobs || []).find((j) => String(j.id) === id);
  const version = liveEntry ? `${liveEntry.state}|${liveEntry.reason}|${liveEntry.start_time_ms}|${liveEntry.held_by}` : 'gone';
  useEffect(() => {
    if (!token) return undefined;
    const abort = new AbortController();
    const base = `/api/v1/jobs/${encodeURIComponent(id)}`;
    Promise.all([apiGet(base, abort.signal), apiGet(`${base}/events`, abort.signal), apiGet(`${base}/runs`, abort.signal)])
      .then(([job, events, runs]) => setState({ job, events: events.events, runs: runs.runs, error: null }))
      .catch((error) => { if (!abort.signal.aborted) setState({ job: null, events: null, runs: null, error }); });
    return () => abort.abort();
  }, [id, token, version, acted]);

  if (!token) return <section><h1>Job {id}</h1><NeedSignIn /></section>;
  const { job, events, runs, error } = state;
  if (error) {
    const refused = error.code === 'not_found' || error.code === 'permission_denied';
    return (
      <section>
        <h1>Job {id}</h1>
        {refused
          ? <p class="error refused" role="alert">Job {id} is not yours, or does not exist: the server shows a job's details only to its owner and to operators and admins. (<code>{error.code}</code>: {error.message})</p>
          : <ErrorNote error={error} />}
      </section>
    );
  }
  if (!job) return <section><h1>Job {id}</h1><Loading what="the job" /></section>;
  // null until the gpus list came; {} for a GPU it lacks (the chart then scales to its data).
  const gpuOf = (uuid) => (live.gpus ? live.gpus.find((g) => g.uuid === uuid) || {} : null);
  return (
    <section>
      <h1>Job {job.id}: {job.name}</h1>
      <JobActions job={job} onDone={() => setActed((n) => n + 1)} />
      <Details job={job} />
      {job.state === 'PENDING' && (
        <>
          <h2>Why it waits</h2>
          {job.held_by
            ? <p class="muted held">Held by {job.held_by}: it keeps its place but is not considered until released.</p>
            : <JobExplain id={id} version={`${job.reason}|${job.estimated_start_ms}`} />}
        </>
      )}
      <h2>Output</h2>
      {runs.length === 0
        ? <p class="muted">Not started yet: its output appears when it runs.</p>
        : <JobLog key={job.start_time_ms} id={id} running={kRunning.has(job.state)} />}
      <h2>Runs{runs.length > 1 ? <span class="count"> ({runs.length})</span> : null}</h2>
      <p class="muted">Times are UTC (ISO 8601); each chart spans its run. Utilisation runs 0–100 %, memory up to the card's total.</p>
      {runs.length === 0
        ? <p class="muted">{job.gpus === 0 ? 'This job holds no GPU.' : 'Not started yet: charts appear when it runs.'}</p>
        : runs.map((run) => <Run key={run.run} run={run} count={runs.length} gpuOf={gpuOf} />)}
      <h2>Events</h2>
      <Events events={events} />
    </section>
  );
}
