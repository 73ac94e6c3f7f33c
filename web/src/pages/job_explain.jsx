// Why a pending job waits and what decides its turn: GET /api/v1/jobs/ID/explain, the scheduler's
// own account (model/explanation.h), shown as `gpufleet explain` prints it
// (src/cli/explain_view.cpp): its place in the order, the priority factors in the order they
// are compared, the quota verdict, and the jobs ahead that take GPUs it could use.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { duration, time } from '../format.js';
import { short } from '../job_view.js';
import { ErrorNote, Loading } from './common.jsx';

function Factor({ name, label, children }) {
  return <tr data-factor={name}><th>{label}</th><td>{children}</td></tr>;
}

// "0 GPU-s / weight 1 = 0": a team's or user's fair-share factor.
function share(p, who) {
  return `${short(p[`${who}_usage_gpu_seconds`])} GPU-s / weight ${short(p[`${who}_weight`])} = ${short(p[`${who}_share`])}`;
}

function quotaVerdict(q) {
  const verdict = !q.may_start ? `held: ${q.reason}`
    : q.borrowed ? 'may start, as borrowed work (preemptible)' : "may start, within its team's guarantee";
  return verdict + (q.guarantee_right ? "; may preempt other teams' borrowed work" : '');
}

function Ahead({ ahead, omitted }) {
  if (ahead.length === 0) return null;
  return (
    <>
      <h3>Jobs ahead that take or set aside GPUs it could use</h3>
      <ul class="ahead">
        {ahead.map((a) => (
          <li key={a.position} data-job={a.id ?? ''}>
            #{a.position} {a.other_user ? "another user's job" : <a href={`#/jobs/${a.id}`}>job {a.id}</a>} ({a.priority}{a.team ? `, team ${a.team}` : ''}, {a.gpus} GPU{a.gpus === 1 ? '' : 's'}): {a.action === 'starts' ? 'starts' : a.action === 'reserved' ? `reserved GPUs from ${time(a.from_ms)}` : 'claimed GPUs'} on {a.nodes.join(', ')}{a.more_nodes > 0 ? ` and ${a.more_nodes} more nodes` : ''}
          </li>
        ))}
        {omitted > 0 && <li>… and {omitted} more</li>}
      </ul>
    </>
  );
}

// version: re-read when the job changed (a pass moved it).
export function JobExplain({ id, version }) {
  const [state, setState] = useState({ e: null, error: null });
  useEffect(() => {
    const abort = new AbortController();
    apiGet(`/api/v1/jobs/${encodeURIComponent(id)}/explain`, abort.signal)
      .then((e) => setState({ e, error: null }))
      .catch((error) => { if (!abort.signal.aborted) setState({ e: null, error }); });
    return () => abort.abort();
  }, [id, version]);
  const { e, error } = state;
  if (error) return error.code === 'failed_precondition' ? <p class="muted">{error.message}</p> : <ErrorNote error={error} />;
  if (!e) return <Loading what="the scheduler's explanation" />;
  const p = e.priority;
  const q = e.quota;
  return (
    <>
      <table class="explain">
        <tbody>
          <Factor name="outcome" label="next pass">{e.outcome === 'starts' ? `starts on ${e.placement?.node}` : e.outcome === 'preempts' ? `preempts to start on ${e.placement?.node}` : e.outcome === 'held' ? 'held by a rule' : 'waits'}</Factor>
          <Factor name="position" label="position">{e.position} of {e.waiting} waiting (scheduling order)</Factor>
          {e.reason_code && <Factor name="reason_code" label="reason code">{e.reason_code} (stage {e.reason_stage})</Factor>}
          {p && <Factor name="class" label="class">{p.priority} (rank {p.class_rank})</Factor>}
          {p && p.quotas_on && <Factor name="guarantee" label="guarantee">team {p.team || '–'} {p.team_below_guarantee ? 'is below its guarantee: goes first' : 'is not below its guarantee'}</Factor>}
          {p && <Factor name="team_share" label="team share">{p.team || '–'}: {share(p, 'team')} ({p.team_rank} of {p.teams_waiting} teams waiting)</Factor>}
          {p && <Factor name="user_share" label="user share">{p.user}: {share(p, 'user')} ({p.user_rank} of {p.users_waiting} users of the team waiting)</Factor>}
          {p && <Factor name="submitted" label="submitted">{time(p.submit_time_ms)} (waited {duration(p.waited_s)})</Factor>}
          {p && p.place_ms != null && <Factor name="place" label="place">{time(p.place_ms)} (submitted + predicted GPU-time; compared last)</Factor>}
          {q && <Factor name="quota" label="quota">{quotaVerdict(q)}</Factor>}
          {q && q.quotas_on && q.team_budget_gpu_hours != null && <Factor name="budget" label="budget">{short(q.team_period_gpu_hours)} of {short(q.team_budget_gpu_hours)} GPU-hours this period; over budget: {q.over_budget}{q.budget_approved ? ' (job approved)' : ''}</Factor>}
          <Factor name="time_limit" label="time limit">{e.time_limit_s == null ? 'none' : `${duration(e.time_limit_s)} (${e.time_limit_source})`}</Factor>
        </tbody>
      </table>
      <p class="muted">Priority factors in the order they are compared; lower goes first. The same as <code>gpufleet explain {id}</code>.</p>
      <Ahead ahead={e.ahead} omitted={e.ahead_omitted} />
    </>
  );
}
