// What the browser tests share: Debian's chromium started as this machine needs it
// (no network of its own, no sandbox as root, a fresh profile), and axe-core run on a page.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
export const CHROMIUM = process.env.MEMTOOL_CHROMIUM || '/usr/bin/chromium';
const AXE = readFileSync(join(here, 'node_modules/axe-core/axe.min.js'), 'utf8');

// A headless chromium with its profile under dir; the caller closes it.
export function launchChromium(dir) {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: mkdtempSync(join(dir, 'chromium-')),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// axe-core on the page as it is now: no serious or critical violation, each named with its nodes.
export async function axeCheck(page, name) {
  if ((await page.evaluate(() => typeof window.axe)) === 'undefined') await page.evaluate(AXE);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), [], `axe on ${name}`);
}
