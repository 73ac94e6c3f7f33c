// Debian's Chromium driven by npm's playwright-core (from the build's npm ci: no browser
// download), as the browser tests (dashboard.test.mjs) and the dashboard's screenshots
// (screenshots.mjs) use it: one way to start it and to sign in.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

// A persistent context on a fresh profile of its own; the flags keep Chromium from reaching
// anything but the server under test. `options` go to Playwright (viewport, timezoneId...).
// Chromium is $CHROMIUM, else /usr/bin/chromium. Returns {context, close}.
export async function launchChromium(nodeModules, options) {
  const { chromium } = createRequire(path.join(nodeModules, 'noop.js'))('playwright-core');
  const profile = mkdtempSync(path.join(os.tmpdir(), 'gf-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,  // Playwright passes --headless
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    ...options,
  });
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}

// Signs `page` in at the dashboard `url` through its form with `token`, as a person would,
// and waits until the header says so.
export async function signIn(page, url, token, timeout) {
  await page.goto(`${url}/#/signin`);
  await page.fill('#token', token);
  await page.click('form button[type=submit]');
  await page.waitForURL(/#\/queue$/, { timeout });
  await page.waitForSelector('header .account:has-text("signed in")', { timeout });
}
