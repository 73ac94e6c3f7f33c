// The overview's steps of dashboard.test.mjs (which passes its helpers in `t`): each KPI is the
// API's figure and the hand count's of the scripted cluster, the idle-allocated GPU's cell
// carries the condition (here and on the GPU map), the charts draw the series' points, a drag
// zooms every chart, the window buttons read their window, updates come without a reload, the
// theme toggle flips and is kept; screenshots at a laptop's 1366×768, at 1400×900 and at a 4K
// wall's 3840×2160.
import path from 'node:path';

// The figure a KPI tile shows, as text.
function kpi(page, name) {
  return page.textContent(`[data-kpi="${name}"] .kpi-value`);
}

// The cluster's counts from GET /api/v1/gpus, as the server counts them (ClusterPoint): busy
// is allocated at busy_util_pct or more.
function countOf(gpus, busyPct) {
  const held = gpus.filter((g) => g.holders.length > 0);
  const util = (g) => (g.sample && !g.sample.lost ? g.sample.util_gpu_pct : null);
  const busy = held.filter((g) => util(g) != null && util(g) >= busyPct).length;
  const failed = gpus.filter((g) => g.health === 'failed' || g.sample?.lost).length;
  return { gpus: gpus.length, allocated: held.length, busy, idle: held.length - busy, failed };
}

// "3 min 2 s" as format.js duration() writes it (the page's text for the oldest wait).
function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const h = Math.floor(s / 3600);
  return h < 48 ? `${h} h ${Math.floor((s % 3600) / 60)} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

export async function overviewSteps(t) {
  const { step, check, api, expectShown, eventually, admin, url, artifacts, env } = t;
  const idleJob = await api(`/api/v1/jobs/${env('GF_IDLE_JOB')}`);
  const rootJob = await api(`/api/v1/jobs/${env('GF_ROOT_JOB')}`);

  await step("overview: GPU KPIs are the API's and the hand count's (4 GPUs, 3 allocated, 2 busy, 1 idle while allocated, 0 failed); the idle GPU's cell carries the condition", async () => {
    const series = await api('/api/v1/cluster/series?window=1h');
    check(series.busy_util_pct === 5, `busy_util_pct ${series.busy_util_pct}: the page's own threshold (overview_view.js) is 5`);
    const hand = { gpus: 4, allocated: 3, busy: 2, idle: 1, failed: 0 };
    await admin.goto(`${url}/#/overview`);
    await eventually(async () => {
      const { gpus } = await api('/api/v1/gpus');
      const want = countOf(gpus, series.busy_util_pct);
      check(JSON.stringify(want) === JSON.stringify(hand), `the API's GPUs count ${JSON.stringify(want)}, the hand count ${JSON.stringify(hand)}`);
      const shown = {
        gpus: Number(await kpi(admin, 'GPUs')),
        allocated: Number(await kpi(admin, 'allocated')),
        busy: Number(await kpi(admin, 'busy')),
        idle: Number(await kpi(admin, 'idle while allocated')),
        failed: Number(await kpi(admin, 'failed')),
      };
      check(JSON.stringify(shown) === JSON.stringify(want), `the page shows ${JSON.stringify(shown)}, the API ${JSON.stringify(want)}`);
      // The server's own latest point counts the same.
      const { latest } = await api('/api/v1/cluster/series?window=1h');
      const fromSeries = { gpus: latest.gpus, allocated: latest.allocated, busy: latest.busy, idle: latest.idle_allocated, failed: latest.failed };
      check(JSON.stringify(fromSeries) === JSON.stringify(hand), `the series' latest point counts ${JSON.stringify(fromSeries)}`);
    });
    const idleUuid = idleJob.gpu_uuids[0];
    for (const hash of ['#/overview', '#/gpus']) {
      await admin.goto(`${url}/${hash}`);
      const cell = admin.locator(`.cell[data-uuid="${idleUuid}"]`);
      await eventually(async () => {
        check((await cell.getAttribute('class')).includes('cond-idle'), `${hash}: the idle job's GPU cell has no idle condition: ${await cell.getAttribute('class')}`);
        check((await cell.locator('.mark-idle').textContent()).includes('idle'), `${hash}: no idle mark written in the cell`);
      });
      for (const uuid of rootJob.gpu_uuids) {
        const cls = await admin.locator(`.cell[data-uuid="${uuid}"]`).getAttribute('class');
        check(!cls.includes('cond-idle'), `${hash}: root's busy GPU ${uuid} is drawn idle: ${cls}`);
      }
      check(await admin.locator('.conditions-legend li').count() === 5, `${hash}: the legend lists the five conditions`);
    }
    await admin.goto(`${url}/#/overview`);
    const panel = await admin.textContent('.node-panel .node-counts');
    check(panel.startsWith('4 GPUs: 3 allocated, 2 busy, 1 idle while allocated'), `node panel: ${panel}`);
  });

  await step("overview: the queue per class is the series' and the hand count's (6 waiting, 1 of them low); the charts draw every point of the answer", async () => {
    // From another page: the overview mounts afresh and asks for the series (a hash already
    // shown would ask nothing new until its next read).
    await admin.goto(`${url}/#/gpus`);
    const body = await expectShown(admin, '#/overview', '/api/v1/cluster/series',
      async () => {
        await admin.waitForSelector('.chart[data-points]');
        await admin.waitForSelector('[data-kpi^="queue "]');
        return admin.evaluate(() => ({
          queue: [...document.querySelectorAll('[data-kpi^="queue "]')].map((k) => ({
            priority: k.dataset.kpi.slice('queue '.length),
            pending: Number(k.querySelector('.kpi-value').textContent),
            detail: k.querySelector('.kpi-detail').textContent,
          })),
          points: [...document.querySelectorAll('.chart[data-points]')].map((c) => Number(c.dataset.points)),
        }));
      },
      (shown, answer) => {
        const latest = answer.latest.queue;
        check(shown.queue.length === latest.length, `${shown.queue.length} queue tiles, the API has ${latest.length} classes`);
        shown.queue.forEach((q, i) => {
          check(q.priority === latest[i].priority && q.pending === latest[i].pending,
            `class ${q.priority}: the page shows ${q.pending}, the API ${latest[i].priority} ${latest[i].pending}`);
          const want = latest[i].pending > 0 ? `oldest waits ${duration(latest[i].oldest_wait_s)}` : 'nothing waits';
          check(q.detail === want, `class ${q.priority}: '${q.detail}', want '${want}'`);
        });
        check(shown.points.length >= 4 && shown.points.every((n) => n === answer.points.length),
          `the charts draw ${shown.points} points, the answer has ${answer.points.length}`);
      });
    const pending = body.latest.queue.reduce((n, q) => n + q.pending, 0);
    const low = body.latest.queue.find((q) => q.priority === 'low');
    check(pending === 6 && low && low.pending === 1, `the series' queue: ${JSON.stringify(body.latest.queue)}; the hand count: 6 waiting, 1 low`);
    check(body.points.length > 0 && body.points.length <= body.max_points, `${body.points.length} points`);
    await admin.setViewportSize({ width: 1400, height: 900 });
    await admin.screenshot({ path: path.join(artifacts, 'overview.png'), fullPage: true });
  });

  await step("overview: today's GPU-hours and energy are the report's day of today", async () => {
    const today = new Date().toISOString().slice(0, 10);
    await admin.goto(`${url}/#/gpus`);
    await expectShown(admin, '#/overview', '/api/v1/report',
      async () => {
        await admin.waitForFunction(() => document.querySelector('[data-kpi="GPU-hours today"] .kpi-value').textContent !== '–');
        return { hours: await kpi(admin, 'GPU-hours today'), kwh: await kpi(admin, 'energy today') };
      },
      (shown, report) => {
        const day = report.days.find((d) => d.day === today);
        check(day, `the report has no day ${today}`);
        const hours = Number(day.figures.allocated_gpu_hours.toFixed(4)).toString();
        check(shown.hours === hours, `GPU-hours today: the page shows ${shown.hours}, the API ${hours}`);
        check(shown.kwh === `${day.figures.energy.energy_kwh.toFixed(2)} kWh`, `energy today: ${shown.kwh}, the API ${day.figures.energy.energy_kwh}`);
        check(day.figures.allocated_gpu_hours > 0, 'the scripted jobs held GPUs today');
      });
  });

  await step('overview: a drag zooms every chart, Reset zoom undoes it; the window buttons read their window; updates come without a reload', async () => {
    await admin.goto(`${url}/#/overview`);
    await admin.waitForSelector('.chart[data-points] .u-over');
    await admin.evaluate(() => { window.gfNotReloaded = true; });
    const over = await admin.locator('.chart .u-over').first().boundingBox();
    await admin.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
    await admin.mouse.down();
    await admin.mouse.move(over.x + over.width * 0.7, over.y + over.height / 2, { steps: 5 });
    await admin.mouse.up();
    await admin.waitForSelector('.zoom-range');
    check(!(await admin.isDisabled('button.zoom-reset')), 'Reset zoom is not offered after a drag');
    await admin.click('button.zoom-reset');
    await admin.waitForSelector('.zoom-range', { state: 'detached' });
    const day = admin.waitForResponse((r) => r.url().includes('/api/v1/cluster/series?window=1d'));
    await admin.click('button.window:text-is("last day")');
    const answer = await (await day).json();
    check(answer.window === '1d' && answer.step_ms === 60000, `window 1d: ${answer.window}, step ${answer.step_ms}`);
    await admin.waitForFunction((n) => [...document.querySelectorAll('.chart[data-points]')].every((c) => Number(c.dataset.points) === n), answer.points.length);
    await admin.click('button.window:text-is("last hour")');
    // The latest point moves on (a point every 5 s) while the page stays.
    const first = await admin.textContent('.latest-time');
    await admin.waitForFunction((t) => document.querySelector('.latest-time')?.textContent !== t, first, { timeout: 20000 });
    check(await admin.evaluate(() => window.gfNotReloaded === true), 'the page was reloaded');
  });

  await step('overview: the theme toggle flips dark and light, and the choice is kept', async () => {
    await admin.goto(`${url}/#/overview`);
    await admin.waitForSelector('.chart[data-points]');
    const before = await admin.evaluate(() => ({ theme: document.documentElement.dataset.theme, bg: getComputedStyle(document.documentElement).backgroundColor }));
    check(before.theme === 'light', `headless Chromium prefers light, the page starts ${before.theme}`);
    await admin.click('button.theme-toggle');
    const after = await admin.evaluate(() => ({ theme: document.documentElement.dataset.theme, bg: getComputedStyle(document.documentElement).backgroundColor }));
    check(after.theme === 'dark' && after.bg !== before.bg, `after the toggle: ${JSON.stringify(after)}, before ${JSON.stringify(before)}`);
    await admin.reload();
    await admin.waitForSelector('.chart[data-points]');
    check(await admin.evaluate(() => document.documentElement.dataset.theme) === 'dark', 'the theme was not kept over a reload');
    await admin.screenshot({ path: path.join(artifacts, 'overview-dark.png'), fullPage: true });
    await admin.click('button.theme-toggle');
    check(await admin.evaluate(() => document.documentElement.dataset.theme) === 'light', 'the toggle does not go back to light');
    // A laptop and a 4K wall: nothing wider than the screen.
    for (const [name, size] of [['laptop', { width: 1366, height: 768 }], ['wall', { width: 3840, height: 2160 }]]) {
      await admin.setViewportSize(size);
      // The charts follow the window's resize event: nothing stays wider than the screen.
      await admin.waitForFunction((w) => document.documentElement.scrollWidth <= w, size.width)
        .catch(async () => check(false, `${name}: the page is ${await admin.evaluate(() => document.documentElement.scrollWidth)} px wide on a ${size.width} px screen`));
      await admin.screenshot({ path: path.join(artifacts, `overview-${name}.png`), fullPage: name === 'laptop' });
    }
    await admin.setViewportSize({ width: 1280, height: 900 });
  });
}
