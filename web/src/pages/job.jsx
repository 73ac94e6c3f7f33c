// One job: its details, its GPUs' charts and its events. The server decides who may read it:
// a user gets their own jobs, an operator or admin any job, anyone else a 404 ("job N not
// found"): the page shows that refusal and never had the details to leak.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { useLive } from '../live.js';
import { Chart } from '../chart.jsx';
import { duration, kFinished, mib, money, num, pct, startBasis, startEstimate, time } from '../format.js';
import { ErrorNote, Loading, NeedSignIn, StateBadge } from './common.jsx';

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

// memoryMib: the card's memory, the top of the memory axis (a job's own peak would make any use
// look full).
function GpuChart({ uuid, index, memoryMib, fromMs, toMs }) {
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
  if (!data) return <Loading what={`GPU ${index} history`} />;
  const title = `GPU ${index ?? ''} ${uuid}`;
  if (data[0].length === 0) {
    return (
      <p class="muted no-samples">
        {title}: {toMs ? 'no samples in its run (shorter than the sampling interval, or older than the history the server keeps).' : 'no samples yet: they appear as the GPU is read.'}
      </p>
    );
  }
  return (
    <Chart
      title={title}
      data={data}
      series={[{ label: 'utilisation', scale: '%', unit: '%' }, { label: 'memory used', scale: 'GiB', unit: 'GiB' }]}
      axes={{ '%': 'utilisation %', GiB: { label: 'memory GiB', max: memoryMib == null ? undefined : memoryMib / 1024 } }}
    />
  );
}

function Field({ name, children }) {
  return <><dt>{name}</dt><dd>{children}</dd></>;
}

function Details({ job }) {
  const usage = job.usage;
  return (
    <dl class="fields">
      <Field name="state"><StateBadge state={job.state} /> {job.reason}</Field>
      <Field name="name">{job.name}</Field>
      <Field name="owner">{job.user} (uid {job.uid}), team {job.team || '–'}</Field>
      <Field name="command"><code>{job.command.join(' ')}</code></Field>
      <Field name="workdir"><code>{job.workdir}</code></Field>
      <Field name="request">{job.gpus} GPU{job.gpus === 1 ? '' : 's'}{job.gpu_type ? ` of type ${job.gpu_type}` : ''}, priority {job.priority}{job.preemptible ? ', preemptible' : ''}{job.time_limit_s ? `, time limit ${duration(job.time_limit_s)}` : ''}</Field>
      {job.gang_job != null && <Field name="gang">rank {job.gang_rank} of the multi-node job <a href={`#/jobs/${job.gang_job}`}>{job.gang_job}</a>{job.nodes > 1 ? `, over ${job.nodes} nodes` : ''}</Field>}
      <Field name="submitted">{time(job.submit_time_ms)}</Field>
      {job.state === 'PENDING' && <Field name="estimated start">{startEstimate(job)}{job.start_estimate ? `, ${startBasis(job)}` : ''}</Field>}
      <Field name="started">{time(job.start_time_ms)}</Field>
      <Field name="ended">{time(job.end_time_ms)}{job.exit_code != null ? `, exit code ${job.exit_code}` : ''}</Field>
      <Field name="placement">{job.node ? `${job.node}: ${job.gpu_uuids.join(', ')}` : '–'}</Field>
      {usage && <Field name="usage">mean utilisation {pct(usage.mean_util_pct)}, peak {pct(usage.peak_util_pct)}, peak memory {mib(usage.peak_memory_mib)}, energy {num(usage.energy_kwh, 3)} kWh</Field>}
      {job.energy && <Field name="charge">{num(job.energy.energy_kwh, 3)} kWh, {money(job.energy)}{job.energy.co2_kg != null ? `, ${num(job.energy.co2_kg, 2)} kg CO₂` : ''}</Field>}
    </dl>
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

export function JobPage({ id, token }) {
  const live = useLive(['jobs', 'gpus']);
  const [state, setState] = useState({ job: null, events: null, error: null });
  // Read again whenever the live list shows this job changed (a state, a reason, a start).
  const liveEntry = (live.jobs || []).find((j) => String(j.id) === id);
  const version = liveEntry ? `${liveEntry.state}|${liveEntry.reason}|${liveEntry.start_time_ms}` : 'gone';
  useEffect(() => {
    if (!token) return undefined;
    const abort = new AbortController();
    Promise.all([apiGet(`/api/v1/jobs/${encodeURIComponent(id)}`, abort.signal),
                 apiGet(`/api/v1/jobs/${encodeURIComponent(id)}/events`, abort.signal)])
      .then(([job, events]) => setState({ job, events: events.events, error: null }))
      .catch((error) => { if (!abort.signal.aborted) setState({ job: null, events: null, error }); });
    return () => abort.abort();
  }, [id, token, version]);

  if (!token) return <section><h1>Job {id}</h1><NeedSignIn /></section>;
  const { job, events, error } = state;
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
  const from = job.start_time_ms;
  const to = kFinished.has(job.state) ? job.end_time_ms : null;
  const gpuOf = (uuid) => (live.gpus || []).find((g) => g.uuid === uuid) || {};
  return (
    <section>
      <h1>Job {job.id}: {job.name}</h1>
      <Details job={job} />
      <h2>GPUs</h2>
      {from == null || job.gpu_uuids.length === 0
        ? <p class="muted">{job.gpus === 0 ? 'This job holds no GPU.' : 'Not started yet: charts appear when it runs.'}</p>
        : job.gpu_uuids.map((uuid) => <GpuChart key={uuid} uuid={uuid} index={gpuOf(uuid).index} memoryMib={gpuOf(uuid).memory_mib} fromMs={from} toMs={to} />)}
      <h2>Events</h2>
      <Events events={events} />
    </section>
  );
}
