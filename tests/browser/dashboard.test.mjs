// The dashboard in headless Chromium, against the `gpufleet up` that dashboard_test.sh started.
// Steps, each printed as ok/FAIL; the first failure ends the run (exit 1):
//   0. signed out, the GPU map loads; the other pages ask for a token;
//   1. signed in as an admin (through the sign-in form), every page loads with no console
//      error and no page error, showing its data; a screenshot of each;
//   2. the figures each page shows are the API's (the JSON of the page's own request) and a hand
//      count's of the scripted cluster (4 GPUs on 1 node; the budget teams' jobs of
//      dashboard_test.sh, counted from their GPUs and run times): the GPU map's counts, each
//      team's GPU-hours and budget status, every report figure under its label; and every time
//      is the API's UTC ISO 8601 text, in a browser set to another time zone;
//   3. the queue: the pending jobs in the API's scheduling order with its positions (and
//      `explain`'s, and the hand count of the scripted queue), array tasks as ID_INDEX, the
//      estimated starts as the API's UTC text; each filter shows exactly its jobs, from a link
//      too; a job submitted with the CLI while the queue is open appears there without a reload;
//   4. a user sees their own job, not root's, and root's job page shows the refusal — the
//      user's token never got root's job details;
//   5. the job page: the log tail is the API's bytes and the hand count's (earlier output on
//      request, stderr apart), follow appends a line the job writes after the page loaded; the
//      buttons each state and user gets, each confirmed first, the server's refusal shown as
//      it is, cancel and hold/release as the API then has them; a job requeued from its page
//      shows its two runs with their windows and GPUs, the memory axis up to the card's memory;
//      a pending job's explain factors are the API's;
//   6. the HTML monthly report (gpufleet report --format html) opens with no console error.
// Playwright is npm's playwright-core (no browser download): it drives Debian's chromium.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { launchChromium, signIn as signInAt } from './chromium.mjs';
import { overviewSteps } from './overview_steps.mjs';
import os from 'node:os';
import path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`set ${name} (dashboard_test.sh does)`);
  return v;
};
const url = env('GF_URL');
const artifacts = env('GF_ARTIFACTS');

const kTimeout = 15000;
let failures = 0;
async function step(name, fn) {
  if (failures > 0) return;
  try {
    await fn();
    console.log(`ok: ${name}`);
  } catch (e) {
    failures += 1;
    console.log(`FAIL: ${name}\n  ${e.stack || e}`);
    // What each open tab showed when it failed, beside the other screenshots.
    for (const [i, page] of context.pages().entries()) {
      await page.screenshot({ path: path.join(artifacts, `failed-tab${i}.png`), fullPage: true }).catch(() => {});
      console.log(`  tab ${i}: ${page.url()}: ${(await page.textContent('body').catch(() => '')).slice(0, 300)}`);
    }
  }
}
function check(cond, message) {
  if (!cond) throw new Error(message);
}

// Every console error and uncaught page error of `page`, as text.
function collectErrors(page) {
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()} (${m.location().url})`); });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  return errors;
}

function signIn(page, token) {
  return signInAt(page, url, token, kTimeout);
}

// `method` `path` with `token` (the admin's by default): {status, text} of the answer.
async function apiCall(path, { method = 'GET', token = env('GF_ADMIN_TOKEN') } = {}) {
  const r = await fetch(`${url}${path}`, { method, headers: { Authorization: `Bearer ${token}` } });
  return { status: r.status, text: await r.text(), headers: r.headers };
}

// GET `path` with the admin's token: the test's own request.
async function api(path) {
  const r = await apiCall(path);
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
  return JSON.parse(r.text);
}

// `gpufleet ARGS` as root (on the Unix socket dashboard_test.sh exported): its output, parsed
// when ARGS ask for --json.
function cli(...args) {
  const done = spawnSync(env('GPUFLEET'), args, { encoding: 'utf8' });
  check(done.status === 0, `gpufleet ${args.join(' ')}: ${done.stderr}`);
  return args.includes('--json') ? JSON.parse(done.stdout) : done.stdout;
}

// A job's whole stream as the API holds it: the file's bytes, read on to its size.
async function apiLog(id, stream = 'stdout', from = 0) {
  let text = '';
  for (let offset = from; ;) {
    const r = await apiCall(`/api/v1/jobs/${id}/logs?stream=${stream}&offset=${offset}&limit=1048576`);
    check(r.status === 200, `logs of ${id}: ${r.status} ${r.text}`);
    text += r.text;
    const next = Number(r.headers.get('X-Gpufleet-Next-Offset'));
    if (next <= offset || next >= Number(r.headers.get('X-Gpufleet-Log-Size'))) return text;
    offset = next;
  }
}

// The job page's buttons, by label, once the page shows the job.
async function buttonsOn(page) {
  await page.waitForSelector('dl.fields');
  return page.$$eval('.actions .toolbar button', (bs) => bs.map((b) => b.textContent));
}

// Clicks `label` on the job page, then No or Yes in its confirmation.
async function press(page, label, yes) {
  await page.click(`.actions .toolbar button:text-is("${label}")`);
  await page.waitForSelector('.confirm');
  await page.click(yes ? '.confirm .confirm-yes' : '.confirm .confirm-no');
  await page.waitForSelector('.confirm', { state: 'detached' });
}

// The rows of the table `selector` on `page`, each an object of its cells' text by column
// header, with the row's data-team and data-job as `_team` and `_job`, and whether it is
// marked over (budget) as `_over`.
function tableRows(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (trs) => trs.map((tr) => {
    const heads = [...tr.closest('table').querySelectorAll('thead th')].map((th) => th.textContent.trim());
    const row = Object.fromEntries([...tr.children].map((td, i) => [heads[i], td.textContent.trim()]));
    return { ...row, _team: tr.dataset.team, _job: tr.dataset.job, _over: tr.classList.contains('over') };
  }));
}

// Whether two arrays hold the same items in the same order.
function sameList(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// `fn`'s result once it stops throwing (the live page and the API may be a stream event
// apart), or its last error after kTimeout.
async function eventually(fn) {
  const deadline = Date.now() + kTimeout;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

// The number a cell or figure shows ("12.5 %", "0.0011"); null for '–' (the API's null).
function shownNumber(text) {
  if (text.trim() === '–') return null;
  const n = parseFloat(text);
  check(Number.isFinite(n), `not a number: '${text}'`);
  return n;
}

// `shown`, a number printed with at most `digits` decimals (null: '–'), is the API's `want`.
function same(shown, want, digits, what) {
  if (want == null) {
    check(shown == null, `${what}: the page shows ${shown}, the API has null`);
    return;
  }
  check(shown != null && Math.abs(shown - want) <= 0.5 * 10 ** -digits + 1e-9,
    `${what}: the page shows ${shown}, the API has ${want}`);
}

// Opens `hash` on `page`, reads what it shows with `read` and hands it to `compare` with the
// JSON of the page's own GET of `apiPath`: the page must show one of the answers it got (the
// quota page reads again every 10 s, so the newest may not be drawn yet). Returns the answer
// it showed.
async function expectShown(page, hash, apiPath, read, compare) {
  const answers = [];
  // (A body that cannot be read is an answer that matches nothing, not a crash of the run.)
  const listen = (r) => {
    if (new URL(r.url()).pathname === apiPath) answers.push(r.json().catch((e) => ({ unreadable: e.message })));
  };
  page.on('response', listen);
  try {
    await page.goto(`${url}/${hash}`);
    const shown = await read();
    if (answers.length === 0) {
      // On a loaded machine Playwright may tell of a response after the page has drawn it: wait
      // a little for that event; a page that never asks still fails below.
      await page.waitForResponse((r) => new URL(r.url()).pathname === apiPath, { timeout: 5000 })
        .catch(() => {});
    }
    check(answers.length > 0, `the page showed ${hash} without asking ${apiPath}`);
    const bodies = (await Promise.all(answers)).reverse();
    const errors = [];
    for (const body of bodies) {
      try {
        compare(shown, body);
        return body;
      } catch (e) {
        errors.push(e.message);
      }
    }
    throw new Error(`${hash} shows none of the ${bodies.length} answer(s) of ${apiPath}: ${errors[0]}`);
  } finally {
    page.off('response', listen);
  }
}

// What a report measured (minute figures, a team's or user's usage): `value` (the utilisation
// while allocated, or the GPU-hours used), none without an allocated minute, where the API's
// used_pct is 0 for want of any.
function measured(f, value) {
  return f.minutes_allocated > 0 ? value : null;
}

// The GPU-hour budgets of the settings file dashboard_test.sh wrote: {team: budget}.
function budgetsOf(settings) {
  const budgets = {};
  let team = null;
  for (const line of settings.split('\n')) {
    team = line.match(/^\[team\.(\S+)\]$/)?.[1] ?? team;
    const budget = line.match(/^gpu_hour_budget = (\S+)$/)?.[1];
    if (budget != null) budgets[team] = Number(budget);
  }
  return budgets;
}

// The scripted jobs of the budget teams, counted by hand from their API records: GPUs x run
// time, and GPUs x the seconds they were told to sleep (a floor: the run lasts at least that).
async function budgetJobs() {
  const jobs = await Promise.all(env('GF_BUDGET_JOBS').split(' ').map((id) => api(`/api/v1/jobs/${id}`)));
  return jobs.map((job) => {
    check(job.state === 'COMPLETED' && job.command[0] === 'sleep', `job ${job.id}: ${job.state} ${job.command}`);
    const gpuHours = (job.gpus * (job.end_time_ms - job.start_time_ms)) / 3600e3;
    const floor = (job.gpus * Number(job.command[1])) / 3600;
    check(gpuHours >= floor, `job ${job.id} ran ${gpuHours} GPU-hours, less than it slept (${floor})`);
    return { job, team: job.team, gpuHours };
  });
}

const { context, close } = await launchChromium(env('GF_WEB_NODE_MODULES'), {
  viewport: { width: 1280, height: 900 },
  // Far from UTC (and across the date line from most of the world): a time shown in the
  // browser's zone instead of UTC cannot pass for the API's.
  timezoneId: 'Pacific/Auckland',
});
context.setDefaultTimeout(kTimeout);

try {
  const rootJob = env('GF_ROOT_JOB');
  const userJob = env('GF_USER_JOB');
  const admin = await context.newPage();
  const adminErrors = collectErrors(admin);

  await step('signed out, the GPU map loads (GPUs are public) and the job pages ask for a token', async () => {
    await admin.goto(`${url}/#/gpus`);
    await admin.waitForFunction(() => document.querySelectorAll('.cell').length === 4);
    await admin.goto(`${url}/#/queue`);
    await admin.waitForSelector('text=sign in with a token');
    await admin.goto(`${url}/#/signin`);
    await admin.screenshot({ path: path.join(artifacts, 'signin.png'), fullPage: true });
    check(adminErrors.length === 0, `console errors:\n  ${adminErrors.join('\n  ')}`);
  });

  await step('admin: every page loads with its data and no console error', async () => {
    await signIn(admin, env('GF_ADMIN_TOKEN'));
    const pages = [
      ['gpus', '#/gpus', async () => {
        // Every cell has a reading (a cell without one is .unknown).
        await admin.waitForFunction(() => document.querySelectorAll('.cell:not(.unknown)').length === 4);
        const titles = await admin.$$eval('.cell', (cells) => cells.map((c) => c.title));
        check(titles.some((t) => t.includes(`job ${rootJob}, owner root`)), `hover names the job and owner: ${titles}`);
      }],
      ['queue', '#/queue', async () => {
        await admin.waitForSelector(`table.jobs-running tr[data-job="${rootJob}"]`);
        const reason = await admin.textContent(`table.jobs-pending tr[data-job="${userJob}"] td.reason`);
        check(reason.trim().length > 0, 'a pending job shows its reason');
      }],
      ['job', `#/jobs/${rootJob}`, async () => {
        await admin.waitForSelector('dl.fields');
        check((await admin.textContent('h1')).includes('root-secret-training'), 'the job page names the job');
        await admin.waitForSelector('.chart .uplot canvas');
        await admin.waitForSelector('table.events tbody tr');
      }],
      ['quota', '#/quota', async () => { await admin.waitForSelector('text=Period'); }],
      ['reports', '#/reports', async () => { await admin.waitForSelector('text=covered until'); }],
    ];
    for (const [name, hash, ready] of pages) {
      await admin.goto(`${url}/${hash}`);
      await ready();
      check(await admin.locator('.error').count() === 0, `${name}: the page shows an error: ${await admin.locator('.error').allTextContents()}`);
      await admin.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
    }
    check(adminErrors.length === 0, `console errors:\n  ${adminErrors.join('\n  ')}`);
  });

  await step('GPU map: the summary counts the API\'s GPUs and nodes (4 on 1), in the singular for one', async () => {
    const [{ gpus }, { nodes }] = await Promise.all([api('/api/v1/gpus'), api('/api/v1/nodes')]);
    check(gpus.length === 4 && nodes.length === 1, `the API lists ${gpus.length} GPUs on ${nodes.length} nodes, the test started 4 on 1`);
    await admin.goto(`${url}/#/gpus`);
    await admin.waitForFunction(() => document.querySelectorAll('.cell').length === 4);
    const summary = await admin.textContent('p.summary');
    check(summary.startsWith('4 GPUs on 1 node,'), `summary: ${summary}`);
  });

  await overviewSteps({ step, check, api, expectShown, eventually, admin, url, artifacts, env });

  await step("Teams & quotas: each team's GPU-hours and budget status are the API's and a hand count's", async () => {
    const budgets = budgetsOf(readFileSync(env('GF_SETTINGS'), 'utf8'));
    const quota = await expectShown(admin, '#/quota', '/api/v1/quota',
      async () => {
        await admin.waitForSelector('table.teams tbody tr');
        return { summary: await admin.textContent('p.summary'), rows: await tableRows(admin, 'table.teams') };
      },
      ({ summary, rows }, body) => {
        check(summary.includes(`Period ${body.period_start.slice(0, 10)} to ${body.period_end.slice(0, 10)} `), `period: ${summary}`);
        check(rows.length === body.teams.length, `${rows.length} rows for ${body.teams.length} teams`);
        for (const t of body.teams) {
          const row = rows.find((r) => r._team === t.team);
          check(row, `no row for team '${t.team}'`);
          const what = `team ${t.team}`;
          same(shownNumber(row['GPU-hours used']), t.used_gpu_hours, 4, `${what} used`);
          same(shownNumber(row['budget GPU-h']), t.budget_gpu_hours, 4, `${what} budget`);
          same(shownNumber(row.left), t.left_gpu_hours, 4, `${what} left`);
          check(row._over === t.out_of_budget, `${what}: row marked over: ${row._over}, the API's out_of_budget: ${t.out_of_budget}`);
          if (t.budget_gpu_hours == null) {
            check(row.budget === 'no budget' && row['when over budget'] === '–', `${what}: '${row.budget}', '${row['when over budget']}'`);
            continue;
          }
          const status = row.budget.match(/^(over budget|within budget) \((\d+) % used\)$/);
          check(status, `${what}: budget status '${row.budget}'`);
          check((status[1] === 'over budget') === t.out_of_budget, `${what}: '${row.budget}', the API's out_of_budget: ${t.out_of_budget}`);
          same(Number(status[2]), (100 * t.used_gpu_hours) / t.budget_gpu_hours, 0, `${what} % of the budget used`);
          // over_budget is the policy for then, not whether the team is over.
          check(row['when over budget'].startsWith(t.over_budget.replace('_', ' ')), `${what}: when over '${row['when over budget']}', the API's policy ${t.over_budget}`);
        }
      });
    // The API against the settings and the hand count: one team well under its budget, one near
    // it, one over; the budget is spent when used >= budget (the scheduler's test).
    for (const t of quota.teams) check(t.budget_gpu_hours === (budgets[t.team] ?? null), `team ${t.team}: budget ${t.budget_gpu_hours}, the settings say ${budgets[t.team]}`);
    const bands = { under: [0, 0.5], near: [0.5, 1], over: [1, Infinity] };
    for (const { job, team, gpuHours } of await budgetJobs()) {
      const t = quota.teams.find((x) => x.team === team);
      check(Math.abs(t.used_gpu_hours - gpuHours) < 1e-6, `team ${team} used ${t.used_gpu_hours} GPU-hours, its job ${job.id} ran ${gpuHours}`);
      const used = gpuHours / budgets[team];
      check(used >= bands[team][0] && used < bands[team][1], `team ${team} used ${used} of its budget: the scenario wants [${bands[team]})`);
      check(t.out_of_budget === (used >= 1), `team ${team}: out_of_budget ${t.out_of_budget} with ${gpuHours} of ${budgets[team]} GPU-hours`);
      check(Math.abs(t.left_gpu_hours - Math.max(0, budgets[team] - gpuHours)) < 1e-6, `team ${team}: ${t.left_gpu_hours} GPU-hours left`);
    }
  });

  await step('Reports: every figure is the report JSON\'s, under the label of what it is', async () => {
    const report = await expectShown(admin, '#/reports', '/api/v1/report',
      async () => {
        await admin.waitForSelector('dl.cluster');
        const page = await admin.evaluate(() => ({
          summary: document.querySelector('p.summary').textContent,
          figures: Object.fromEntries([...document.querySelectorAll('dl.cluster dd[data-figure]')].map((dd) => [dd.dataset.figure,
            { label: dd.previousElementSibling.textContent.trim(), values: [...dd.querySelectorAll('b')].map((b) => b.textContent) }])),
          noDays: document.querySelector('p.days')?.textContent ?? null,
          chart: document.querySelector('.chart .u-title')?.textContent ?? null,
          legend: [...document.querySelectorAll('.chart .u-legend th')].map((th) => th.textContent.trim()),
        }));
        for (const table of ['teams', 'users', 'gpus']) page[table] = await tableRows(admin, `table.${table}`);
        page.workloadsTable = await admin.evaluate(() => document.querySelector('table.workloads') !== null);
        return page;
      },
      (page, r) => {
        const c = r.cluster.figures;
        // Not a Kubernetes site: no workloads in the JSON, and no table for them (its rows are
        // checked against hand-made JSON in web/test/report_rows.test.mjs).
        check(r.workloads.length === 0 && !page.workloadsTable, `workloads: ${JSON.stringify(r.workloads)}, table shown: ${page.workloadsTable}`);
        check(page.summary.includes(`: ${r.cluster.nodes} node${r.cluster.nodes === 1 ? '' : 's'}, ${r.cluster.gpus} GPUs;`), `summary: ${page.summary}`);
        check(page.summary.includes(`covered until ${r.covered_until}.`), `covered until (UTC, as the API writes it): ${page.summary}`);
        // Each figure by its base (docs/reports.md): allocated_pct and util_pct are shares of all
        // observed GPU-minutes, used_pct of the allocated ones; idle_pct counts unallocated
        // minutes too, so the idle-while-allocated share is of the allocated minutes.
        const idleOfAllocated = c.minutes_allocated > 0 ? (100 * c.minutes_idle_allocated) / c.minutes_allocated : null;
        const want = {
          allocated: ['allocated', [[c.allocated_pct, 1], [c.allocated_gpu_hours, 4]]],
          used: ['utilisation while allocated', [[measured(c, c.used_pct), 1], [c.used_gpu_hours, 4]]],
          util: ['used', [[c.util_pct, 1]]],
          'idle-allocated': ['idle while allocated', [[c.idle_gpu_hours, 4], [idleOfAllocated, 1]]],
          idle: ['idle', [[c.idle_pct, 1]]],
        };
        for (const [figure, [label, values]] of Object.entries(want)) {
          const got = page.figures[figure];
          check(got && got.label === label, `figure ${figure}: labelled '${got?.label}', want '${label}'`);
          check(got.values.length === values.length, `figure ${figure}: ${got.values}`);
          values.forEach(([v, digits], i) => same(shownNumber(got.values[i]), v, digits, `${label} (${i})`));
        }
        check(page.teams.length === r.teams.length && page.users.length === r.users.length && page.gpus.length === r.gpus.length,
          `rows: ${page.teams.length} teams, ${page.users.length} users, ${page.gpus.length} GPUs`);
        for (const t of r.teams) {
          const row = page.teams.find((x) => x.team === t.team);
          check(row && Number(row.jobs) === t.usage.jobs, `team ${t.team}: ${JSON.stringify(row)}`);
          same(shownNumber(row['allocated GPU-h']), t.usage.allocated_gpu_hours, 4, `team ${t.team} allocated`);
          same(shownNumber(row['utilisation while allocated']), measured(t.usage, t.usage.used_pct), 1, `team ${t.team} utilisation while allocated`);
          same(shownNumber(row['used GPU-h']), measured(t.usage, t.usage.used_gpu_hours), 4, `team ${t.team} used`);
          same(shownNumber(row['idle while allocated GPU-h']), t.usage.idle_gpu_hours, 4, `team ${t.team} idle`);
          same(shownNumber(row['budget GPU-h']), t.budget_gpu_hours, 4, `team ${t.team} budget`);
          same(shownNumber(row['budget used']), t.budget_used_pct, 1, `team ${t.team} budget used`);
        }
        for (const u of r.users) {
          const row = page.users.find((x) => x.user === u.user && x.team === u.team);
          check(row, `no row for user ${u.user} of team ${u.team}`);
          same(shownNumber(row['allocated GPU-h']), u.usage.allocated_gpu_hours, 4, `user ${u.user} allocated`);
          same(shownNumber(row['utilisation while allocated']), measured(u.usage, u.usage.used_pct), 1, `user ${u.user} utilisation while allocated`);
          same(shownNumber(row['used GPU-h']), measured(u.usage, u.usage.used_gpu_hours), 4, `user ${u.user} used`);
        }
        for (const g of r.gpus) {
          const row = page.gpus.find((x) => x.node === g.node && x.GPU === String(g.index));
          check(row, `no row for GPU ${g.node}/${g.index}`);
          const what = `GPU ${g.node}/${g.index}`;
          same(shownNumber(row['allocated % of time']), g.figures.allocated_pct, 1, `${what} allocated`);
          same(shownNumber(row['utilisation while allocated']), measured(g.figures, g.figures.used_pct), 1, `${what} utilisation while allocated`);
          same(shownNumber(row['used % of time']), g.figures.util_pct, 1, `${what} used`);
          same(shownNumber(row['idle % of time']), g.figures.idle_pct, 1, `${what} idle`);
        }
        // The chart is drawn only from days with samples, on a day axis; without any, a note.
        if (r.days.some((d) => d.figures.minutes_observed > 0)) {
          check(page.chart?.startsWith('Per day (UTC)') && page.legend.includes('day (UTC)'), `chart '${page.chart}', legend ${page.legend}`);
        } else {
          check(page.chart == null && page.noDays?.includes('No GPU samples'), `chart '${page.chart}' without a sampled day`);
        }
      });
    // The scenario keeps the figures the page once mixed up apart: with a GPU free, the share of
    // all GPU time used (util_pct) is below the utilisation while allocated (used_pct), and the
    // idle share of all GPU time (idle_pct) is not the idle share of the allocated time.
    const c = report.cluster.figures;
    check(c.minutes_allocated < c.minutes_observed && c.minutes_idle_allocated > 0 && c.minutes_idle_allocated < c.minutes_allocated,
      `minutes: ${c.minutes_observed} observed, ${c.minutes_allocated} allocated, ${c.minutes_idle_allocated} idle while allocated`);
    check(c.used_pct - c.util_pct >= 0.2, `used_pct ${c.used_pct} and util_pct ${c.util_pct} would look alike`);
    check(Math.abs(c.idle_pct - (100 * c.minutes_idle_allocated) / c.minutes_allocated) >= 0.2, `idle_pct ${c.idle_pct} would look like the idle share of the allocated time`);
    // The JSON against the hand count: 4 GPUs on 1 node; each budget team ran its one job.
    check(report.cluster.gpus === 4 && report.cluster.nodes === 1 && report.gpus.length === 4, 'the report counts 4 GPUs on 1 node');
    check(report.days.length === Number(report.covered_until.slice(8, 10)), `${report.days.length} days up to ${report.covered_until}`);
    // The report's figures run to covered_until (the start of the current minute,
    // docs/reports.md), so the hand count clips each run there: a job that ended in the current
    // minute counts up to its start, one that began in it not at all.
    const until = report.covered_until_ms;
    for (const { job, team } of await budgetJobs()) {
      const t = report.teams.find((x) => x.team === team);
      const clipped = (job.gpus * Math.max(0, Math.min(job.end_time_ms, until) - Math.max(job.start_time_ms, report.period_start_ms))) / 3600e3;
      if (job.start_time_ms >= until) {
        check(!t || t.usage.jobs === 0, `team ${team}: its job began after ${report.covered_until}: ${JSON.stringify(t)}`);
        continue;
      }
      check(t && t.usage.jobs === 1, `team ${team} in the report: ${JSON.stringify(t)}`);
      check(Math.abs(t.usage.allocated_gpu_hours - clipped) < 1e-6, `team ${team}: allocated ${t.usage.allocated_gpu_hours}, by hand ${clipped} (to ${report.covered_until})`);
    }
  });

  await step('times are the API\'s UTC ISO 8601 (as the CLI shows them) on the queue and job pages', async () => {
    const hand = await budgetJobs();
    await admin.goto(`${url}/#/queue`);
    await admin.waitForSelector(`table.jobs-finished tr[data-job="${hand[0].job.id}"]`);
    const finished = await tableRows(admin, 'table.jobs-finished');
    for (const { job: j } of hand) {
      const ended = finished.find((row) => row._job === String(j.id))?.ended;
      check(ended === j.end_time, `job ${j.id} ended '${ended}', the API says ${j.end_time}`);
    }
    const { job } = hand[0];
    await admin.goto(`${url}/#/jobs/${job.id}`);
    await admin.waitForSelector('table.events tbody tr');
    const fields = await admin.$$eval('dl.fields dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
    check(fields.submitted === job.submit_time && fields.started === job.start_time && fields.ended.startsWith(`${job.end_time},`),
      `job ${job.id}: submitted '${fields.submitted}', started '${fields.started}', ended '${fields.ended}'; the API: ${job.submit_time}, ${job.start_time}, ${job.end_time}`);
    const { events } = await api(`/api/v1/jobs/${job.id}/events`);
    const shown = await admin.$$eval('table.events tbody tr', (trs) => trs.map((tr) => tr.children[0].textContent));
    check(JSON.stringify(shown) === JSON.stringify(events.map((e) => e.time)), `event times ${shown}, the API's ${events.map((e) => e.time)}`);
  });

  await step('queue: the pending jobs in the scheduling order, their positions, ids and estimated starts are the API\'s', async () => {
    const [low, array, big] = env('GF_QUEUE_JOBS').split(' ').map(Number);
    const tasks = [array, array + 1, array + 2];
    // The hand count of dashboard_test.sh's queue: these 6 wait, root's two jobs run.
    const scripted = [low, ...tasks, big, Number(userJob)];
    const byId = new Map();
    const { pending, running } = await eventually(async () => {
      await admin.goto(`${url}/#/queue`);
      await admin.waitForSelector(`table.jobs-pending tr[data-job="${big}"]`);
      const shown = { pending: await tableRows(admin, 'table.jobs-pending'), running: await tableRows(admin, 'table.jobs-running') };
      const { jobs } = await api('/api/v1/jobs');
      byId.clear();
      for (const j of jobs) byId.set(j.id, j);
      const apiPending = jobs.filter((j) => j.state === 'PENDING').sort((a, b) => a.queue_position - b.queue_position);
      check(sameList(shown.pending.map((r) => Number(r._job)), apiPending.map((j) => j.id)),
        `pending rows ${shown.pending.map((r) => r._job)}, the API's order ${apiPending.map((j) => `${j.id}@${j.queue_position}`)}`);
      return shown;
    });
    check(sameList([...pending.map((r) => Number(r._job))].sort((a, b) => a - b), scripted.sort((a, b) => a - b)),
      `pending: ${pending.map((r) => r._job)}, scripted: ${scripted}`);
    check(await admin.textContent('h2:has-text("Pending") .count') === '6', 'the pending count is 6');
    check(sameList(pending.map((r) => r.position), ['1', '2', '3', '4', '5', '6']), `positions ${pending.map((r) => r.position)}`);
    // By hand: the low class comes after every normal one; an array's tasks in index order.
    check(Number(pending[5]._job) === low, `the low-class job ${low} is last: ${pending.map((r) => r._job)}`);
    const taskRows = pending.filter((r) => tasks.includes(Number(r._job)));
    check(sameList(taskRows.map((r) => r.id), tasks.map((_, i) => `${array}_${i}`)), `array tasks shown as ${taskRows.map((r) => r.id)}`);
    for (const [i, row] of pending.entries()) {
      const job = byId.get(Number(row._job));
      check(row.position === String(job.queue_position), `job ${job.id}: position ${row.position}, the API's ${job.queue_position}`);
      check(row.user === job.user && row.team === job.team && row.class === job.priority && row.GPUs === String(job.gpus),
        `job ${job.id}: ${JSON.stringify(row)}`);
      check(row.submitted === job.submit_time, `job ${job.id} submitted '${row.submitted}', the API says ${job.submit_time}`);
      const s = job.start_estimate;
      const at = job.estimated_start == null ? ''
        : s && s.basis === 'predictions' && s.earliest !== s.latest ? `${s.earliest} – ${s.latest}` : job.estimated_start;
      const basis = { time_limits: '(limits)', predictions: '(predicted)', preemption: '(preempting)' }[s?.basis];
      check(row['estimated start'].endsWith(at) && (!basis || row['estimated start'].includes(basis)),
        `job ${job.id}: estimated start '${row['estimated start']}', the API's ${at} ${s?.basis}`);
      // The scheduler's own word (GET /explain, what `gpufleet explain` prints): the same
      // place of 6, and each job it names ahead (those holding GPUs it could use) is the
      // page's row at that place.
      const e = await api(`/api/v1/jobs/${job.id}/explain`);
      check(e.position === i + 1 && e.waiting === 6, `job ${job.id}: explain says ${e.position} of ${e.waiting}, the page ${i + 1} of 6`);
      for (const a of e.ahead) {
        check(a.position <= i && pending[a.position - 1]._job === String(a.id),
          `job ${job.id}: explain has job ${a.id} ahead at ${a.position}, the page ${pending[a.position - 1]?._job}`);
      }
    }
    // The head waits for root's job, whose 1 h limit is the latest it can end.
    const head = byId.get(Number(pending[0]._job));
    const rootEnd = byId.get(Number(rootJob)).start_time_ms + 3600e3;
    check(head.estimated_start_ms != null && head.estimated_start_ms <= rootEnd, `the head ${head.id} starts at ${head.estimated_start}, root's job ends by ${new Date(rootEnd).toISOString()}`);
    if (head.start_estimate?.basis === 'time_limits') check(head.estimated_start_ms === rootEnd, `the head starts when root's job's limit ends: ${head.estimated_start}`);
    check(sameList(running.map((r) => Number(r._job)).sort((a, b) => a - b), [Number(env('GF_IDLE_JOB')), Number(rootJob)].sort((a, b) => a - b)),
      `running: ${running.map((r) => r._job)}`);
    for (const row of running) check(/^\d+ (s|min \d+ s|h \d+ min)$/.test(row['run time']), `run time '${row['run time']}'`);
    await admin.screenshot({ path: path.join(artifacts, 'queue-order.png'), fullPage: true });
  });

  await step('queue filters (user, team, class, state) show exactly their jobs, and a link keeps them', async () => {
    const [low, array, big] = env('GF_QUEUE_JOBS').split(' ').map(Number);
    const [idle, root, user] = [Number(env('GF_IDLE_JOB')), Number(rootJob), Number(userJob)];
    const normal = [array, array + 1, array + 2, big];
    // Each filter with the jobs it must show by hand: [pending, running].
    const cases = [
      ['user=gf-e2e-user', [user], []],
      ['team=dev', [user], []],
      ['class=low', [low], []],
      ['state=RUNNING', [], [idle, root]],
      ['user=root&class=normal', normal, [idle, root]],
      ['user=root&state=PENDING', [...normal, low], []],
    ];
    for (const [query, wantPending, wantRunning] of cases) {
      const filters = Object.fromEntries(new URLSearchParams(query));
      await eventually(async () => {
        await admin.goto(`${url}/#/queue?${query}`);
        await admin.waitForSelector('form.filters');
        await admin.waitForFunction(() => document.querySelector('h2 .count') !== null);
        const shown = async (table) => (await admin.$(table)) ? (await tableRows(admin, table)).map((r) => Number(r._job)) : [];
        const [pending, running] = [await shown('table.jobs-pending'), await shown('table.jobs-running')];
        const { jobs } = await api('/api/v1/jobs');
        const field = { user: 'user', team: 'team', class: 'priority', state: 'state' };
        const match = jobs.filter((j) => Object.entries(filters).every(([k, v]) => j[field[k]] === v));
        const apiPending = match.filter((j) => j.state === 'PENDING').sort((a, b) => a.queue_position - b.queue_position).map((j) => j.id);
        const apiRunning = match.filter((j) => j.state !== 'PENDING').map((j) => j.id);
        check(sameList(pending, apiPending), `${query}: pending ${pending}, the API's ${apiPending}`);
        check(sameList([...pending].sort((a, b) => a - b), [...wantPending].sort((a, b) => a - b)), `${query}: pending ${pending}, by hand ${wantPending}`);
        check(sameList([...running].sort((a, b) => a - b), [...apiRunning].sort((a, b) => a - b)), `${query}: running ${running}, the API's ${apiRunning}`);
        check(sameList([...running].sort((a, b) => a - b), [...wantRunning].sort((a, b) => a - b)), `${query}: running ${running}, by hand ${wantRunning}`);
        for (const [k, v] of Object.entries(filters)) {
          check(await admin.$eval(`form.filters select[name=${k}]`, (el) => el.value) === v, `${query}: the ${k} select shows the link's ${v}`);
        }
      });
    }
    // Choosing in a select puts the filter into the link.
    await admin.goto(`${url}/#/queue`);
    await admin.selectOption('form.filters select[name=class]', 'low');
    await admin.waitForURL(/#\/queue\?class=low$/);
    await admin.waitForFunction(() => document.querySelectorAll('table.jobs-pending tbody tr').length === 1);
    check(await admin.getAttribute('table.jobs-pending tbody tr', 'data-job') === String(low), 'class=low shows the low-class job');
    await admin.screenshot({ path: path.join(artifacts, 'queue-filtered.png'), fullPage: true });
    check(adminErrors.length === 0, `console errors:\n  ${adminErrors.join('\n  ')}`);
  });

  await step('a job submitted with the CLI appears on the open queue page without a reload', async () => {
    await admin.goto(`${url}/#/queue`);
    await admin.waitForSelector(`table.jobs-running tr[data-job="${rootJob}"]`);
    await admin.evaluate(() => { window.gfNotReloaded = true; });
    const { id } = cli('submit', '--json', '--gpus', '2', '--name', 'live-job', '--workdir', '/tmp', '--', 'sleep', '600');
    await admin.waitForSelector(`table.jobs-pending tr[data-job="${id}"]`);
    check(await admin.evaluate(() => window.gfNotReloaded === true), 'the page was reloaded');
    await admin.screenshot({ path: path.join(artifacts, 'queue-live.png'), fullPage: true });
    check(adminErrors.length === 0, `console errors:\n  ${adminErrors.join('\n  ')}`);
  });

  await step("a user cannot open root's job: the page shows the refusal, the token got no details", async () => {
    const user = await context.newPage();  // a new tab: its own sessionStorage, signed out
    const userErrors = collectErrors(user);
    const apiBodies = [];
    user.on('response', async (r) => {
      if (r.url().includes('/api/v1/jobs/')) apiBodies.push({ url: r.url(), status: r.status(), body: await r.text() });
    });
    await signIn(user, env('GF_USER_TOKEN'));
    await user.waitForSelector(`table.jobs-pending tr[data-job="${userJob}"]`);
    check(await user.locator(`tr[data-job="${rootJob}"]`).count() === 0, "root's job is listed to the user");
    // Its place counts every user's jobs ahead, as the admin's list (and `explain`) has it.
    await eventually(async () => {
      const row = (await tableRows(user, 'table.jobs-pending')).find((r) => r._job === userJob);
      const { jobs } = await api('/api/v1/jobs');
      const want = jobs.find((j) => String(j.id) === userJob).queue_position;
      check(row.position === String(want), `the user's job shows position ${row.position}, the API's ${want}`);
    });
    await user.goto(`${url}/#/jobs/${userJob}`);
    await user.waitForSelector('dl.fields');
    await user.goto(`${url}/#/jobs/${rootJob}`);
    await user.waitForSelector('.refused');
    const text = await user.textContent('.refused');
    check(text.includes('not yours'), `the refusal says so: ${text}`);
    await user.screenshot({ path: path.join(artifacts, 'job-not-yours.png'), fullPage: true });
    const page = await user.textContent('body');
    check(!page.includes(env('GF_SECRET')), "root's job name is on the user's page");
    const mine = apiBodies.filter((b) => b.url.includes(`/api/v1/jobs/${rootJob}`));
    check(mine.length > 0, "the page asked the API for root's job");
    for (const b of mine) {
      check(b.status === 404 && !b.body.includes(env('GF_SECRET')), `the API gave the user ${b.status}: ${b.body}`);
    }
    // The browser logs the API's 404s ("Failed to load resource"); nothing else may appear.
    const unexpected = userErrors.filter((e) => !(e.includes('404') && e.includes(`/api/v1/jobs/${rootJob}`)));
    check(unexpected.length === 0, `console errors:\n  ${unexpected.join('\n  ')}`);
    await user.close();
  });

  // A job without GPUs that prints known lines (more than the page's 64 KiB tail) and one to
  // stderr, then one more once the test says so (the trigger file), and runs on.
  const trigger = path.join(mkdtempSync(path.join(os.tmpdir(), 'gf-follow-')), 'go');
  const kLines = 3000;
  const known = Array.from({ length: kLines }, (_, i) => `known line ${String(i + 1).padStart(5, '0')} of the job page test\n`).join('');
  let logJob = null;

  await step("job page: the log tail is the API's bytes and the hand count's; earlier output loads; follow appends a later line", async () => {
    ({ id: logJob } = cli('submit', '--json', '--gpus', '0', '--name', 'log-job', '--workdir', '/tmp', '--', 'sh', '-c',
      `seq -f 'known line %05g of the job page test' 1 ${kLines}; echo 'to stderr' >&2; ` +
      `while [ ! -e ${trigger} ]; do sleep 0.2; done; echo 'written after load'; exec sleep 600`));
    await eventually(async () => check((await apiLog(logJob)) === known, `job ${logJob} has not printed its ${kLines} lines yet`));
    check(known.length > 64 * 1024, `the known output (${known.length} bytes) is longer than the page's tail`);
    await admin.goto(`${url}/#/jobs/${logJob}`);
    await admin.waitForSelector('pre.log-text');
    const shown = await admin.evaluate(() => {
      const pre = document.querySelector('pre.log-text');
      return { text: pre.textContent, from: Number(pre.dataset.from), note: document.querySelector('.log-earlier')?.textContent ?? null };
    });
    // The tail: the last 64 KiB, the API's bytes from there on, and the hand count's.
    check(shown.from === known.length - 64 * 1024, `the tail starts at ${shown.from}, want ${known.length - 64 * 1024}`);
    check(shown.text === await apiLog(logJob, 'stdout', shown.from), 'the tail is not the API\'s bytes from its offset');
    check(shown.text === known.slice(shown.from), 'the tail is not the last 64 KiB of the known lines');
    check(shown.note && shown.note.includes('earlier output not shown'), `no note of the earlier output: ${shown.note}`);
    await admin.click('button.load-earlier');
    await admin.waitForFunction(() => document.querySelector('pre.log-text').dataset.from === '0');
    check(await admin.textContent('pre.log-text') === known, 'with the earlier output, the page is not the whole known output');
    check(await admin.locator('.log-earlier').count() === 0, 'the earlier-output note stays with nothing earlier');
    // Follow: a line the job writes after the page loaded appears without a reload.
    await admin.evaluate(() => { window.gfNotReloaded = true; });
    writeFileSync(trigger, '');
    await admin.waitForFunction(() => document.querySelector('pre.log-text').textContent.endsWith('written after load\n'));
    check(await admin.textContent('pre.log-text') === await apiLog(logJob), 'after following, the page is not the API\'s whole stdout');
    check(await admin.evaluate(() => window.gfNotReloaded === true), 'the page was reloaded');
    await admin.click('.log button.tab:text-is("stderr")');
    await admin.waitForFunction(() => document.querySelector('pre.log-text')?.textContent === 'to stderr\n');
    await admin.screenshot({ path: path.join(artifacts, 'job-log.png'), fullPage: true });
  });

  await step('job page: a run of a few seconds labels each tick of its chart once; a job without GPUs shows its node and "(no GPU)"', async () => {
    let charted = 0;
    for (const { job } of await budgetJobs()) {
      await admin.goto(`${url}/#/jobs/${job.id}`);
      await admin.waitForSelector('.run .chart[data-xticks], .run .no-samples');
      const ticks = await admin.$$eval('.run .chart', (cs) => cs.map((c) => JSON.parse(c.dataset.xticks || '[]')));
      for (const labels of ticks) {
        charted += 1;
        check(labels.length > 0 && new Set(labels).size === labels.length,
          `job ${job.id} ran ${(job.end_time_ms - job.start_time_ms) / 1000} s: its ticks read ${labels.join(', ')}`);
      }
    }
    check(charted > 0, 'none of the budget teams\' short jobs has a chart');
    const log = await api(`/api/v1/jobs/${logJob}`);
    check(log.gpu_uuids.length === 0 && log.node, `the log job holds ${log.gpu_uuids} on '${log.node}'`);
    await admin.goto(`${url}/#/jobs/${logJob}`);
    const placement = await admin.textContent('dl.fields dt:text-is("placement") + dd');
    check(placement === `${log.node} (no GPU)`, `placement of a job without GPUs: '${placement}'`);
  });

  await step('job page buttons: per state and per user, each confirmed; the server\'s refusal shown as it is; hold, release and cancel as the API then has them', async () => {
    const [low] = env('GF_QUEUE_JOBS').split(' ');
    const jobState = async (id) => (await api(`/api/v1/jobs/${id}`));
    await admin.goto(`${url}/#/jobs/${logJob}`);
    check(sameList(await buttonsOn(admin), ['Cancel', 'Requeue']), `a running job's buttons: ${await buttonsOn(admin)}`);
    await admin.goto(`${url}/#/jobs/${low}`);
    check(sameList(await buttonsOn(admin), ['Cancel', 'Hold']), `a pending job's buttons: ${await buttonsOn(admin)}`);
    // No: nothing happens. Yes: the API holds it, and the page offers Release.
    await press(admin, 'Hold', false);
    check((await jobState(low)).held_by == null, 'the job was held without a yes');
    await press(admin, 'Hold', true);
    await admin.waitForSelector('.action-result.ok');
    check((await jobState(low)).held_by === 'root', `held_by after Hold: ${(await jobState(low)).held_by}`);
    await admin.waitForFunction(() => [...document.querySelectorAll('.actions .toolbar button')].map((b) => b.textContent).join() === 'Cancel,Release');
    await press(admin, 'Release', true);
    await eventually(async () => check((await jobState(low)).held_by == null, 'still held after Release'));
    await admin.waitForFunction(() => [...document.querySelectorAll('.actions .toolbar button')].map((b) => b.textContent).join() === 'Cancel,Hold');
    // The user: their own pending job's buttons; none on root's (they cannot see it at all);
    // an administrator's hold they may not lift: the server's 403 message, on the page as is.
    const user = await context.newPage();
    await signIn(user, env('GF_USER_TOKEN'));
    await user.goto(`${url}/#/jobs/${userJob}`);
    check(sameList(await buttonsOn(user), ['Cancel', 'Hold']), `the user's pending job: ${await buttonsOn(user)}`);
    await user.goto(`${url}/#/jobs/${rootJob}`);
    await user.waitForSelector('.refused');
    check(await user.locator('.actions button, .log, .run').count() === 0, "the user gets buttons, output or runs of root's job");
    cli('hold', userJob);
    await user.goto(`${url}/#/jobs/${userJob}`);
    await user.waitForFunction(() => [...document.querySelectorAll('.actions .toolbar button')].map((b) => b.textContent).join() === 'Cancel,Release');
    await press(user, 'Release', true);
    await user.waitForSelector('.action-result .error');
    const refusal = await apiCall(`/api/v1/jobs/${userJob}/release`, { method: 'POST', token: env('GF_USER_TOKEN') });
    const { error } = JSON.parse(refusal.text);
    check(refusal.status === 403 && error.code === 'permission_denied', `the API's answer to the user's release: ${refusal.status} ${refusal.text}`);
    const shownError = (await user.textContent('.action-result .error')).trim();
    check(shownError === `${error.code} ${error.message}`, `the page shows '${shownError}', the API said '${error.code} ${error.message}'`);
    check((await jobState(userJob)).held_by === 'root', 'the user lifted an administrator\'s hold');
    await user.screenshot({ path: path.join(artifacts, 'job-refused-release.png'), fullPage: true });
    cli('release', userJob);
    await user.close();
    // Cancel, confirmed: the API has the job CANCELLED, and the page offers nothing more.
    await admin.goto(`${url}/#/jobs/${logJob}`);
    await buttonsOn(admin);
    await press(admin, 'Cancel', false);
    check((await jobState(logJob)).state === 'RUNNING', 'cancelled without a yes');
    await press(admin, 'Cancel', true);
    await eventually(async () => check((await jobState(logJob)).state === 'CANCELLED', `job ${logJob} is ${(await jobState(logJob)).state}`));
    await admin.waitForFunction(() => document.querySelector('dl.fields .badge')?.textContent === 'CANCELLED');
    check((await buttonsOn(admin)).length === 0, `a cancelled job's buttons: ${await buttonsOn(admin)}`);
    check(adminErrors.length === 0, `console errors:\n  ${adminErrors.join('\n  ')}`);
  });

  await step("a job requeued from its page shows its two runs, each with its window and GPUs; the memory axis is the card's", async () => {
    // A high-class job on the one free GPU: requeued, it is first in the order again and runs
    // again at once (a normal one would wait behind the queue's jobs for GPUs).
    const { id: job } = cli('submit', '--json', '--gpus', '1', '--priority', 'high', '--name', 'requeue-job', '--workdir', '/tmp', '--', 'sleep', '600');
    const before = await eventually(async () => {
      const j = await api(`/api/v1/jobs/${job}`);
      check(j.state === 'RUNNING' && j.gpu_uuids.length === 1, `job ${job}: ${j.state} on ${j.gpu_uuids}`);
      return j;
    });
    await admin.goto(`${url}/#/jobs/${job}`);
    await admin.waitForSelector('.run .chart[data-scales]');  // samples of its first run
    check(sameList(await buttonsOn(admin), ['Cancel', 'Requeue']), `a running job: ${await buttonsOn(admin)}`);
    await press(admin, 'Requeue', true);
    await admin.waitForSelector('.action-result.ok');
    const after = await eventually(async () => {
      const j = await api(`/api/v1/jobs/${job}`);
      check(j.state === 'RUNNING' && j.start_time_ms > before.start_time_ms, `job ${job} is ${j.state} since ${j.start_time}: ${j.reason}`);
      return j;
    });
    const { gpus } = await api('/api/v1/gpus');
    const { runs } = await api(`/api/v1/jobs/${job}/runs`);
    check(runs.length === 2, `the API lists ${runs.length} runs`);
    // By hand: run 1 is the run before the requeue, timed by its events (the controller's
    // record of it: within a second of the agent's start time the job had then), run 2 the job
    // as it is now.
    const { events } = await api(`/api/v1/jobs/${job}/events`);
    const change = (text) => events.find((e) => e.kind === 'state' && e.message.startsWith(text));
    const [ran, stopped] = [change('STARTING -> RUNNING'), change('RUNNING -> PREEMPTED')];
    check(ran && stopped, `events: ${events.map((e) => e.message)}`);
    check(runs[0].start_time === ran.time && runs[0].end_time === stopped.time && runs[0].end_state === 'PREEMPTED' &&
      Math.abs(runs[0].start_time_ms - before.start_time_ms) < 1000,
    `run 1: ${JSON.stringify(runs[0])}; its events: ${ran.time}, ${stopped.time}; the job before: started ${before.start_time}`);
    check(sameList(runs[0].gpus.map((g) => g.uuid), before.gpu_uuids), `run 1's GPUs ${runs[0].gpus.map((g) => g.uuid)}, the job held ${before.gpu_uuids}`);
    check(runs[1].start_time === after.start_time && runs[1].end_time == null && sameList(runs[1].gpus.map((g) => g.uuid), after.gpu_uuids),
      `run 2: ${JSON.stringify(runs[1])}; the job now: ${after.start_time} on ${after.gpu_uuids}`);
    await admin.goto(`${url}/#/jobs/${job}`);
    // Both runs started (the page may first show run 2 still STARTING: it reads the job again
    // when the live list says it runs).
    await admin.waitForFunction(() => document.querySelectorAll('.run').length === 2 && document.querySelectorAll('.run .run-start').length === 2 &&
      document.querySelectorAll('.run .chart[data-scales]').length >= 1);
    const shown = await admin.$$eval('.run', (sections) => sections.map((s) => ({
      title: s.querySelector('h3').textContent,
      start: s.querySelector('.run-start')?.textContent,
      end: s.querySelector('.run-end')?.textContent,
      window: s.querySelector('.run-window').textContent,
    })));
    runs.forEach((run, i) => {
      check(shown[i].title === `Run ${i + 1} of 2`, `section ${i}: ${shown[i].title}`);
      check(shown[i].start === run.start_time && shown[i].end === (run.end_time ?? 'now'), `run ${i + 1} shows ${shown[i].start} to ${shown[i].end}, the API ${run.start_time} to ${run.end_time}`);
      check(shown[i].window.includes(`GPU${run.gpus.length === 1 ? '' : 's'} ${run.gpus.map((g) => g.index).join(', ')};`), `run ${i + 1}: '${shown[i].window}', GPUs ${run.gpus.map((g) => g.index)}`);
    });
    check(shown[0].window.includes('ended PREEMPTED'), `run 1: ${shown[0].window}`);
    // Every chart's axes: utilisation 0-100 %, memory 0 to the card's memory in the API.
    // Read in one step once a chart is drawn: a live update of the job re-reads its series, and
    // its charts show "Loading" meanwhile (under load, between a wait and a later read).
    const charts = await (await admin.waitForFunction(() => {
      const els = [...document.querySelectorAll('.run .chart[data-scales]')];
      return els.length >= 1 && els.map((el) => ({
        title: el.querySelector('.u-title').textContent, scales: JSON.parse(el.dataset.scales),
        legend: el.querySelector('.u-legend').textContent, ticks: JSON.parse(el.dataset.xticks || '[]') }));
    })).jsonValue();
    check(charts.length >= 1, `${charts.length} charts`);
    for (const c of charts) {
      const gpu = gpus.find((g) => c.title.includes(g.uuid));
      check(gpu, `chart '${c.title}' names no GPU of the API`);
      check(sameList(c.scales['%'], [0, 100]), `${c.title}: utilisation axis ${c.scales['%']}`);
      check(c.scales.GiB[0] === 0 && Math.abs(c.scales.GiB[1] - gpu.memory_mib / 1024) < 1e-9,
        `${c.title}: memory axis ${c.scales.GiB}, the card has ${gpu.memory_mib} MiB`);
      check(!c.legend.includes('--'), `${c.title}: legend '${c.legend}'`);
      // A run of a second (one sample, even) still has labelled ticks, each once.
      check(c.ticks.length > 0 && new Set(c.ticks).size === c.ticks.length, `${c.title}: time ticks ${c.ticks}`);
    }
    await admin.screenshot({ path: path.join(artifacts, 'job-runs.png'), fullPage: true });
  });

  await step("a pending job's page shows why it waits: the explain factors are the API's", async () => {
    const job = await api(`/api/v1/jobs/${userJob}`);
    check(job.state === 'PENDING', `the user's job is ${job.state}`);
    await expectShown(admin, `#/jobs/${userJob}`, `/api/v1/jobs/${userJob}/explain`,
      async () => {
        await admin.waitForSelector('table.explain');
        return {
          factors: Object.fromEntries(await admin.$$eval('table.explain tr[data-factor]', (trs) => trs.map((tr) => [tr.dataset.factor, tr.querySelector('td').textContent]))),
          ahead: await admin.$$eval('ul.ahead li[data-job]', (lis) => lis.map((li) => li.dataset.job)),
        };
      },
      ({ factors, ahead }, e) => {
        const p = e.priority;
        const one = (v) => String(Math.round(v * 10) / 10);
        const want = {
          position: `${e.position} of ${e.waiting} waiting (scheduling order)`,
          class: `${p.priority} (rank ${p.class_rank})`,
          team_share: `${p.team}: ${one(p.team_usage_gpu_seconds)} GPU-s / weight ${one(p.team_weight)} = ${one(p.team_share)} (${p.team_rank} of ${p.teams_waiting} teams waiting)`,
          user_share: `${p.user}: ${one(p.user_usage_gpu_seconds)} GPU-s / weight ${one(p.user_weight)} = ${one(p.user_share)} (${p.user_rank} of ${p.users_waiting} users of the team waiting)`,
        };
        for (const [name, text] of Object.entries(want)) check(factors[name] === text, `${name}: the page shows '${factors[name]}', the API's is '${text}'`);
        check(factors.submitted.startsWith(`${p.submit_time} (waited `), `submitted: '${factors.submitted}', the API's ${p.submit_time}`);
        check(e.reason_code == null || factors.reason_code === `${e.reason_code} (stage ${e.reason_stage})`, `reason code: '${factors.reason_code}'`);
        check(sameList(ahead, e.ahead.map((a) => String(a.id ?? ''))), `jobs ahead ${ahead}, the API's ${e.ahead.map((a) => a.id)}`);
      });
    const fields = await admin.$$eval('dl.fields dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
    if (job.prediction) check(fields['predicted run time']?.includes(job.prediction.explanation), `predicted run time: '${fields['predicted run time']}'`);
    await admin.screenshot({ path: path.join(artifacts, 'job-pending.png'), fullPage: true });
    check(adminErrors.length === 0, `console errors:\n  ${adminErrors.join('\n  ')}`);
  });

  await step('the HTML monthly report opens with no console error', async () => {
    const report = await context.newPage();
    const errors = collectErrors(report);
    await report.goto(`file://${env('GF_REPORT_HTML')}`);
    await report.waitForSelector('svg');
    await report.screenshot({ path: path.join(artifacts, 'report-html.png'), fullPage: true });
    check(errors.length === 0, `console errors:\n  ${errors.join('\n  ')}`);
    await report.close();
  });

  await step('signing out forgets the token', async () => {
    await admin.click('header .signout');
    await admin.goto(`${url}/#/queue`);
    await admin.waitForSelector('text=sign in with a token');
    check(await admin.evaluate(() => sessionStorage.length) === 0, 'sessionStorage still holds something');
  });
} finally {
  await close();
}
process.exit(failures > 0 ? 1 : 0);
