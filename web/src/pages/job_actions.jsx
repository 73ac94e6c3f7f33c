// The job's buttons: cancel, hold, release, requeue, as its state allows (job_view.js). Each asks
// first (a sentence on what it does, then yes or no), then POSTs; the answer is shown as the
// server gave it (the job's new state, or its error: a 403, 404 or 409 with its message) and the
// page reads the job again (onDone).
import { useState } from 'preact/hooks';
import { apiPost } from '../api.js';
import { jobActions } from '../job_view.js';
import { ErrorNote } from './common.jsx';

export function JobActions({ job, onDone }) {
  const [asking, setAsking] = useState(null);  // the action awaiting its confirmation
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState(null);  // {action, job} or {action, error}
  const actions = jobActions(job);
  const run = async (action) => {
    setBusy(true);
    try {
      const after = await apiPost(`/api/v1/jobs/${encodeURIComponent(job.id)}/${action.name}`);
      setResult({ action, job: after });
    } catch (error) {
      setResult({ action, error });
    } finally {
      setBusy(false);
      setAsking(null);
      onDone();
    }
  };
  return (
    <div class="actions">
      {actions.length > 0 && (
        <div class="toolbar">
          {actions.map((a) => (
            <button key={a.name} type="button" class={`action action-${a.name}`} disabled={busy || asking != null}
              onClick={() => { setResult(null); setAsking(a); }}>{a.label}</button>
          ))}
        </div>
      )}
      {asking && (
        <div class="confirm note" role="alertdialog" aria-label={`${asking.label} job ${job.id}?`}>
          <p><b>{asking.label} job {job.id}?</b> {asking.what(job)}</p>
          <button type="button" class="confirm-yes" disabled={busy} onClick={() => run(asking)}>Yes, {asking.label.toLowerCase()} job {job.id}</button>{' '}
          <button type="button" class="confirm-no" disabled={busy} onClick={() => setAsking(null)}>No</button>
        </div>
      )}
      {result && (result.error
        ? <div class="action-result"><ErrorNote error={result.error} /></div>
        : <p class="action-result ok" role="status">{result.action.label}: done. Job {result.job.id} is {result.job.state}{result.job.reason ? ` (${result.job.reason})` : ''}.</p>)}
    </div>
  );
}
