// The dashboard's screenshots for docs/dashboard.md, taken by scripts/dashboard-screenshots.sh
// on its demo cluster: each page at 1400×900 (the viewport, not the whole scrolled page: what a
// reader sees first), light theme, UTC, signed in as an admin. Each page is shot once its figures
// are drawn (the same marks the browser tests wait for); a page that shows an error fails.
// Environment: GF_URL, GF_TOKEN (an admin's), GF_JOB (a running job with GPUs),
// GF_WEB_NODE_MODULES, GF_OUT (the folder for NAME.png).
import path from 'node:path';
import { launchChromium, signIn } from './chromium.mjs';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`set ${name} (scripts/dashboard-screenshots.sh does)`);
  return v;
};
const url = env('GF_URL');
const kTimeout = 30000;

// name, route, and what shows that its figures are there.
const pages = [
  ['overview', '#/overview', async (page) => {
    await page.waitForSelector('[data-kpi] .kpi-value');
    await page.waitForSelector('.uplot canvas');
  }],
  ['gpus', '#/gpus', (page) => page.waitForFunction(() => document.querySelectorAll('.cell:not(.unknown)').length >= 4)],
  ['queue', '#/queue', (page) => page.waitForSelector('table.jobs-pending tbody tr')],
  ['job', `#/jobs/${env('GF_JOB')}`, async (page) => {
    await page.waitForSelector('dl.fields');
    await page.waitForSelector('.chart .uplot canvas');
  }],
  ['quota', '#/quota', (page) => page.waitForSelector('text=Period')],
  ['reports', '#/reports', (page) => page.waitForSelector('text=covered until')],
];

const { context, close } = await launchChromium(env('GF_WEB_NODE_MODULES'), {
  viewport: { width: 1400, height: 900 },
  colorScheme: 'light',
  timezoneId: 'UTC',
});
context.setDefaultTimeout(kTimeout);
let failed = false;
try {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await signIn(page, url, env('GF_TOKEN'), kTimeout);
  for (const [name, route, ready] of pages) {
    await page.goto(`${url}/${route}`);
    await ready(page);
    // uPlot draws on the next animation frame after its data: two frames and it has.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const shown = await page.locator('.error').allTextContents();
    if (shown.length > 0 || errors.length > 0) throw new Error(`${name}: ${shown.concat(errors).join('; ')}`);
    await page.screenshot({ path: path.join(env('GF_OUT'), `${name}.png`) });
    console.log(`ok: ${name}.png`);
  }
} catch (e) {
  console.log(`FAIL: ${e.stack || e}`);
  failed = true;
} finally {
  await close();
}
process.exit(failed ? 1 : 0);
