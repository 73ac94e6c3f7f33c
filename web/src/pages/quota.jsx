// Teams and quotas: GET /api/v1/quota (the teams' guarantees, limits and GPU-hour budgets, and
// each user's GPU-hours this period, as the caller may see them), read again every 10 s.
import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api.js';
import { day, gpuHours, money, num } from '../format.js';
import { ErrorNote, Loading, NeedSignIn } from './common.jsx';

// A team's budget: a bar of the share used and whether it is spent. `out_of_budget` is the API's
// word on that (used >= budget, the scheduler's own test); `over_budget` is only the policy
// that then applies, shown in its own column.
function BudgetStatus({ team }) {
  const { used_gpu_hours: used, budget_gpu_hours: budget } = team;
  if (budget == null) return 'no budget';
  const share = budget > 0 ? `${num(100 * used / budget, 0)} % used` : 'a zero budget';
  return (
    <>
      {budget > 0 && <progress class={team.out_of_budget ? 'over' : ''} max="1" value={Math.min(1, used / budget)} />}
      {' '}{team.out_of_budget ? 'over budget' : 'within budget'} ({share})
    </>
  );
}

const kWhenOver = { borrow_only: 'borrow only: its jobs run preemptible', hold: 'hold: its jobs wait' };

export function Quota({ token }) {
  const [state, setState] = useState({ quota: null, error: null });
  useEffect(() => {
    if (!token) return undefined;
    const abort = new AbortController();
    const read = () => apiGet('/api/v1/quota', abort.signal)
      .then((quota) => setState({ quota, error: null }))
      .catch((error) => { if (!abort.signal.aborted) setState((s) => ({ ...s, error })); });
    read();
    const timer = setInterval(read, 10000);
    return () => { clearInterval(timer); abort.abort(); };
  }, [token]);
  if (!token) return <section><h1>Teams and quotas</h1><NeedSignIn /></section>;
  const { quota, error } = state;
  if (error && !quota) return <section><h1>Teams and quotas</h1><ErrorNote error={error} /></section>;
  if (!quota) return <section><h1>Teams and quotas</h1><Loading what="quotas" /></section>;
  return (
    <section>
      <h1>Teams and quotas</h1>
      <p class="summary">
        Period {day(quota.period_start_ms)} to {day(quota.period_end_ms)} (a calendar month, UTC).
        {quota.quotas_on ? ' Quotas are enforced.' : ' No team has a quota: every job competes on priority alone.'}
      </p>
      {error && <ErrorNote error={error} />}
      <h2>Teams</h2>
      {quota.teams.length === 0 ? <p class="muted">No teams.</p> : (
        <table class="teams">
          <thead>
            <tr><th>team</th><th>guaranteed GPUs</th><th>max GPUs</th><th>held</th><th>borrowed</th><th>GPU-hours used</th><th>budget GPU-h</th><th>left</th><th>budget</th><th>when over budget</th><th>energy</th><th>cost</th></tr>
          </thead>
          <tbody>
            {quota.teams.map((t) => (
              <tr key={t.team} class={t.out_of_budget ? 'over' : ''} data-team={t.team}>
                <td>{t.team}{t.listed ? '' : ' (not configured)'}</td>
                <td class="num">{t.guaranteed_gpus}</td>
                <td class="num">{t.max_gpus ?? '–'}</td>
                <td class="num">{t.gpus_held}</td>
                <td class="num">{t.gpus_borrowed}</td>
                <td class="num used">{gpuHours(t.used_gpu_hours)}</td>
                <td class="num budget">{gpuHours(t.budget_gpu_hours)}</td>
                <td class="num left">{gpuHours(t.left_gpu_hours)}</td>
                <td class="status"><BudgetStatus team={t} /></td>
                <td class="policy">{t.budget_gpu_hours == null ? '–' : kWhenOver[t.over_budget] ?? t.over_budget}</td>
                <td class="num">{num(t.energy.energy_kwh, 2)} kWh</td>
                <td class="num">{money(t.energy)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Users</h2>
      {quota.users.length === 0 ? <p class="muted">No usage this period.</p> : (
        <table class="users">
          <thead><tr><th>user</th><th>team</th><th>GPU-hours used</th><th>energy</th><th>cost</th></tr></thead>
          <tbody>
            {quota.users.map((u) => (
              <tr key={`${u.team}/${u.user}`}>
                <td>{u.user}</td><td>{u.team}</td><td class="num">{gpuHours(u.used_gpu_hours)}</td>
                <td class="num">{num(u.energy.energy_kwh, 2)} kWh</td><td class="num">{money(u.energy)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
