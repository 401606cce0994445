// memtool server's page at /ui/: a person logs in with an API key, which the
// session keeps checking (a revoked key ends it); the key's tenant and
// access hold; requests without the page's cookie are the API's as before.
// Debian's chromium or firefox-esr, puppeteer-core and axe-core, as browser.test.mjs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHOT_PREFIX, assertBrowser, launchBrowser, axeCheck, startMemtool } from './lib.mjs';

const MEMTOOL = process.env.MEMTOOL;
const SHOTS = process.env.MEMTOOL_WEB_SHOTS || join(tmpdir(), 'memtool-web-shots');
// Made here too: this test may run before (or without) the one that makes it.
mkdirSync(SHOTS, { recursive: true });

const dir = mkdtempSync(join(tmpdir(), 'memtool-ui-'));
const keys = join(dir, 'keys');
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  if (!process.env.MEMTOOL_TEST_KEEP) rmSync(dir, { recursive: true, force: true });
});

const keyAdd = (tenant, ...flags) =>
  execFileSync(MEMTOOL, ['server', 'keys', 'add', tenant, '--keys', keys, ...flags], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const keyList = () => JSON.parse(execFileSync(MEMTOOL, ['server', 'keys', 'list', '--json', '--keys', keys], { encoding: 'utf8' }));

test("memtool server's page at /ui/", { timeout: 120000 }, async () => {
  assertBrowser();
  const alice = keyAdd('alice');
  const aliceRo = keyAdd('alice', '--read-only');
  const bob = keyAdd('bob');
  const ids = keyList();
  const aliceId = ids.find((k) => k.tenant === 'alice' && !k.read_only).id;

  const srv = startMemtool(['--root', join(dir, 'store'), 'server', '--listen', '127.0.0.1:0', '--keys', keys], cleanups);
  const base = (await srv.line).trim();

  // The API as before, with a key: a store of alice's, and one of bob's.
  const h = (k) => ({ authorization: 'Bearer ' + k, 'content-type': 'application/json' });
  const post = async (k, p, body) => (await fetch(base + p, { method: 'POST', headers: h(k), body: JSON.stringify(body) })).json();
  const store = await post(alice, '/v1/memory_stores', { name: 'Alice notes' });
  const mem = await post(alice, `/v1/memory_stores/${store.id}/memories`, { path: '/plan.md', content: '# Plan\n- one\n' });
  const bobs = await post(bob, '/v1/memory_stores', { name: 'Bob secret store' });
  assert.equal((await fetch(base + '/v1/memory_stores')).status, 401, 'no key, no cookie: the API refuses as before');
  assert.equal((await fetch(base + '/')).status, 401, 'the page is at /ui/ only: / is the API\'s, which needs a key');

  const ui = await fetch(base + '/ui/');
  assert.equal(ui.status, 200);
  assert.ok(!/unsafe-/.test(ui.headers.get('content-security-policy')));
  const noSession = await fetch(base + '/ui/session');
  assert.equal(noSession.status, 401);
  assert.deepEqual(await noSession.json(), { login: 'key' });

  const browser = await launchBrowser(dir);
  cleanups.push(() => browser.close());
  const page = await browser.newPage();
  page.setDefaultTimeout(10000);
  const axe = (name) => axeCheck(page, name);
  const waitStatus = (p, re) => p.waitForFunction((s) => new RegExp(s).test(document.getElementById('status').textContent), {}, re.source);

  // A wrong key, then alice's.
  await page.goto(base + '/ui/');
  await page.waitForSelector('#login-key');
  await axe('login');
  await page.type('#login-key', 'mtk_' + 'x'.repeat(43));
  await page.click('#view form button[type=submit]');
  await waitStatus(page, /invalid API key/);
  await page.type('#login-key', alice);
  await page.click('#view form button[type=submit]');
  await page.waitForSelector('body[data-ready="1"]');
  const stores = await page.$$eval('#store option', (os) => os.map((o) => o.textContent));
  assert.deepEqual(stores, [`Alice notes (${store.id})`], "alice's stores only, and no plain store");
  await page.waitForSelector('button[aria-label="plan.md"]');
  await axe('tree');
  await page.screenshot({ path: join(SHOTS, SHOT_PREFIX + 'ui-tree.png') });

  // An edit from the page: recorded as web: and the key's id.
  await page.click('button[aria-label="plan.md"]');
  await page.waitForSelector('#edit');
  await page.click('#edit');
  await page.waitForSelector('#editor');
  await page.$eval('#editor', (e) => { e.value = '# Plan\n- one\n- two\n'; });
  await page.click('#save');
  await waitStatus(page, /Saved/);
  const vs = await (await fetch(`${base}/v1/memory_stores/${store.id}/memory_versions?memory_id=${mem.id}`, { headers: h(alice) })).json();
  assert.deepEqual(vs.data[0].created_by, { type: 'user_actor', user_id: 'web:' + aliceId });

  // The cookie opens alice's tenant only; a change needs the CSRF token.
  const session = (await page.cookies()).find((c) => c.name === 'mt_session_' + new URL(base).port);
  assert.ok(session && session.httpOnly && session.sameSite === 'Strict');
  const cookie = `${session.name}=${session.value}`;
  assert.equal((await fetch(`${base}/v1/memory_stores/${bobs.id}`, { headers: { cookie } })).status, 404);
  const noCsrf = await fetch(`${base}/v1/memory_stores/${store.id}/memories`, {
    method: 'POST', headers: { cookie, origin: base, 'content-type': 'application/json' }, body: JSON.stringify({ path: '/x.md', content: 'x' }),
  });
  assert.equal(noCsrf.status, 403);
  assert.match((await noCsrf.json()).error.message, /CSRF/);
  // The SDK's way still works beside the page.
  assert.equal((await fetch(`${base}/v1/memory_stores/${store.id}/memories`, { headers: h(alice) })).status, 200);

  // A read-only key's session reads, and cannot write.
  const ctx = await browser.createBrowserContext();
  const ro = await ctx.newPage();
  ro.setDefaultTimeout(10000);
  await ro.goto(base + '/ui/');
  await ro.waitForSelector('#login-key');
  await ro.type('#login-key', aliceRo);
  await ro.click('#view form button[type=submit]');
  await ro.waitForSelector('button[aria-label="plan.md"]');
  await ro.click('#new-memory');
  await ro.waitForSelector('#new-path');
  await ro.$eval('#new-path', (e) => { e.value = '/ro.md'; });
  await ro.click('#view form button[type=submit]');
  await waitStatus(ro, /read-only/);
  await ctx.close();

  // Revoking the key ends its sessions (the keys file is reread within a second).
  execFileSync(MEMTOOL, ['server', 'keys', 'revoke', aliceId, '--keys', keys], { stdio: 'ignore' });
  const deadline = Date.now() + 5000;
  let status = 200;
  while (Date.now() < deadline && (status = (await fetch(`${base}/v1/memory_stores`, { headers: { cookie } })).status) !== 401) {
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(status, 401, 'a revoked key ends its sessions');
  // The open page, at its next request, says so and asks for a key again.
  await page.click('button[aria-label="plan.md"]');
  await page.waitForSelector('#login-key');
  await waitStatus(page, /log in/);
  await page.reload();
  await page.waitForSelector('#login-key');
});
