// The dashboard in headless Chromium, against the `gpufleet up` that dashboard_test.sh started.
// Steps, each printed as ok/FAIL; the first failure ends the run (exit 1):
//   0. signed out, the GPU map loads; the other pages ask for a token;
//   1. signed in as an admin (through the sign-in form), every page loads with no console
//      error and no page error, showing its data; a screenshot of each;
//   2. a job submitted with the CLI while the queue is open appears there without a reload;
//   3. a user sees their own job, not root's, and root's job page shows the refusal — the
//      user's token never got root's job details;
//   4. the HTML monthly report (gpufleet report --format html) opens with no console error.
// Playwright is npm's playwright-core (no browser download): it drives Debian's chromium.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`set ${name} (dashboard_test.sh does)`);
  return v;
};
const url = env('GF_URL');
const artifacts = env('GF_ARTIFACTS');
const { chromium } = createRequire(path.join(env('GF_WEB_NODE_MODULES'), 'noop.js'))('playwright-core');

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

async function signIn(page, token) {
  await page.goto(`${url}/#/signin`);
  await page.fill('#token', token);
  await page.click('form button[type=submit]');
  await page.waitForURL(/#\/queue$/, { timeout: kTimeout });
  await page.waitForSelector('header .account:has-text("signed in")', { timeout: kTimeout });
}

// A fresh profile each run; the flags keep Chromium from reaching anything but the test server.
const profile = mkdtempSync(path.join(os.tmpdir(), 'gf-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,  // Playwright passes --headless
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
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
        const title = await admin.locator('.cell').first().getAttribute('title');
        check(title.includes(`job ${rootJob}, owner root`), `hover names the job and owner: ${title}`);
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

  await step('a job submitted with the CLI appears on the open queue page without a reload', async () => {
    await admin.goto(`${url}/#/queue`);
    await admin.waitForSelector(`table.jobs-running tr[data-job="${rootJob}"]`);
    await admin.evaluate(() => { window.gfNotReloaded = true; });
    const submitted = spawnSync(env('GPUFLEET'), ['submit', '--json', '--gpus', '1', '--name', 'live-job',
      '--workdir', '/tmp', '--', 'sleep', '600'], { encoding: 'utf8' });
    check(submitted.status === 0, `gpufleet submit: ${submitted.stderr}`);
    const id = JSON.parse(submitted.stdout).id;
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
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failures > 0 ? 1 : 0);
