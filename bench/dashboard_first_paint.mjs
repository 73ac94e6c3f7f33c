// The browser half of dashboard_first_paint.sh: opens the overview GF_RUNS times, each in a
// fresh context, signed in (the token in sessionStorage, as the sign-in form leaves it), and
// prints Chromium's timings as a markdown table.
import { createRequire } from 'node:module';
import path from 'node:path';

const url = process.env.GF_URL;
const runs = Number(process.env.GF_RUNS || 5);
const gpus = Number(process.env.GF_GPUS || 1000);
const queued = Number(process.env.GF_QUEUED || 10000);
const { chromium } = createRequire(path.join(process.env.GF_WEB_NODE_MODULES, 'noop.js'))('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const rows = [];
try {
  for (let i = 0; i < runs; ++i) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.addInitScript((token) => sessionStorage.setItem('gpufleet.token', token), process.env.GF_TOKEN);
    const page = await context.newPage();
    await page.goto(`${url}/#/overview`);
    await page.waitForFunction(() => performance.getEntriesByName('gf-overview-ready').length > 0, null, { timeout: 60000 });
    await page.waitForFunction((n) => document.querySelectorAll('.node-panel .cell').length === n, gpus, { timeout: 60000 });
    rows.push(await page.evaluate(() => {
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      const ready = performance.getEntriesByName('gf-overview-ready')[0];
      const js = performance.getEntriesByType('resource').find((r) => r.name.endsWith('/app.js'));
      return {
        fcp: paint ? paint.startTime : null,
        ready: ready.startTime,
        kpi: document.querySelector('[data-kpi="GPUs"] .kpi-value').textContent,
        js: js ? js.decodedBodySize : null,
      };
    }));
    await context.close();
  }
} finally {
  await browser.close();
}
const ms = (v) => (v == null ? '–' : `${Math.round(v)} ms`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`overview of ${gpus} GPUs and ${queued} queued jobs (${process.env.GF_GPUFLEET}), ${runs} cold loads\n`);
console.log('| run | first contentful paint | figures shown (KPIs and every cell) | GPUs KPI | app.js |');
console.log('|---|---|---|---|---|');
rows.forEach((r, i) => console.log(`| ${i + 1} | ${ms(r.fcp)} | ${ms(r.ready)} | ${r.kpi} | ${r.js == null ? '–' : `${(r.js / 1024).toFixed(0)} KiB`} |`));
console.log(`| median | ${ms(median(rows.map((r) => r.fcp)))} | ${ms(median(rows.map((r) => r.ready)))} | | |`);
