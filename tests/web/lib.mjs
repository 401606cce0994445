// What the browser tests share: the browser they run in, started as this
// machine needs it (no network of its own, no sandbox as root, a fresh
// profile), and axe-core run on a page.
//
// MEMTOOL_WEB_BROWSER picks the browser: "chromium" (the default, Debian's,
// driven over CDP) or "firefox" (Debian's firefox-esr, driven over WebDriver
// BiDi). A browser that is missing fails the test: it is never skipped.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
const AXE = readFileSync(join(here, 'node_modules/axe-core/axe.min.js'), 'utf8');

export const BROWSER = process.env.MEMTOOL_WEB_BROWSER || 'chromium';
const PATHS = {
  chromium: process.env.MEMTOOL_CHROMIUM || '/usr/bin/chromium',
  firefox: process.env.MEMTOOL_FIREFOX || '/usr/bin/firefox-esr',
};
const PACKAGES = { chromium: 'chromium', firefox: 'firefox-esr' };
export const BROWSER_PATH = PATHS[BROWSER];
// Screenshots of each browser under names of their own: both tests may run
// at once into one folder. Chromium's keep the names they always had.
export const SHOT_PREFIX = BROWSER === 'chromium' ? '' : BROWSER + '-';

// The browser is known and installed, or the test fails here, saying which.
export function assertBrowser() {
  assert.ok(BROWSER_PATH, `MEMTOOL_WEB_BROWSER=${BROWSER}: chromium or firefox`);
  assert.ok(existsSync(BROWSER_PATH), `${BROWSER_PATH} is missing: scripts/install-deps.sh installs ${PACKAGES[BROWSER]}`);
}

// A headless browser with its profile under dir; the caller closes it.
export function launchBrowser(dir) {
  assertBrowser();
  if (BROWSER === 'firefox') {
    return puppeteer.launch({
      browser: 'firefox',
      executablePath: BROWSER_PATH,
      headless: true,
      userDataDir: mkdtempSync(join(dir, 'firefox-')),
      // No update checks, telemetry or captive-portal probes: nothing but the
      // page's own requests leaves the browser.
      extraPrefsFirefox: {
        'app.update.enabled': false,
        'network.captive-portal-service.enabled': false,
        'network.connectivity-service.enabled': false,
        'toolkit.telemetry.enabled': false,
        'datareporting.policy.dataSubmissionEnabled': false,
      },
    });
  }
  return puppeteer.launch({
    executablePath: BROWSER_PATH,
    headless: true,
    userDataDir: mkdtempSync(join(dir, 'chromium-')),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// Before any of the page's code: every CSP violation the page meets is kept
// in window.__cspViolations. The event is the browsers' own report of a
// blocked load or script, and both browsers fire it (Firefox does not send its
// CSP messages to the console that puppeteer sees over BiDi).
export async function watchCsp(page) {
  await page.evaluateOnNewDocument(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
}

// axe-core on the page as it is now: no serious or critical violation, each named with its nodes.
export async function axeCheck(page, name) {
  if ((await page.evaluate(() => typeof window.axe)) === 'undefined') await page.evaluate(AXE);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), [], `axe on ${name}`);
}

// memtool (MEMTOOL) with args: a server that prints one line on stdout (its
// address) before anything else, and is stopped with SIGTERM by what it
// pushes on cleanups. {child, line: a promise of that line (with its
// newline), stop, log(): its stderr so far, out(): its stdout so far}.
export function startMemtool(args, cleanups, env = {}) {
  const child = spawn(process.env.MEMTOOL, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  let out = '';
  child.stderr.on('data', (d) => (log += d));
  const line = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no address in 10 s: ' + log)), 10000);
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) { clearTimeout(timer); resolve(out); }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${log}`)));
  });
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.on('exit', resolve);
    child.kill('SIGTERM');
  });
  cleanups.push(stop);
  return { child, line, stop, log: () => log, out: () => out };
}
