// memtool web in a real browser: Debian's chromium or firefox-esr
// (MEMTOOL_WEB_BROWSER, lib.mjs), driven by puppeteer-core (which downloads nothing), with axe-core checking each view. The flows of
// docs/web.md, an XSS corpus that must stay text, and the server's side:
// the versions those flows leave (actor web:...), 401 without a session, the
// login token used once, CSRF, CSP. Screenshots of each step go to
// $MEMTOOL_WEB_SHOTS (the build directory; never in git).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BROWSER, SHOT_PREFIX, assertBrowser, launchBrowser, watchCsp, axeCheck, startMemtool } from './lib.mjs';

const MEMTOOL = process.env.MEMTOOL;
const SHOTS = process.env.MEMTOOL_WEB_SHOTS || join(tmpdir(), 'memtool-web-shots');

const dir = mkdtempSync(join(tmpdir(), 'memtool-web-'));
// MEMTOOL_WEB_STORE=sqlite: the same flows on a SQLite store (--store
// sqlite:PATH); otherwise the file store (--root).
const STORE = process.env.MEMTOOL_WEB_STORE || 'file';
const store = STORE === 'sqlite' ? ['--store', 'sqlite:' + join(dir, 'store.db')] : ['--root', join(dir, 'store')];
const audit = join(dir, 'audit.log');
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  if (!process.env.MEMTOOL_TEST_KEEP) rmSync(dir, { recursive: true, force: true });
});

function memtool(args, input) {
  return execFileSync(MEMTOOL, [...store, '--audit', audit, ...args], {
    input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], timeout: 30000,
  });
}
const call = (input) => memtool(['call'], JSON.stringify(input));
const create = (path, text) => call({ command: 'create', path: '/memories' + path, file_text: text });

const start = (args, env) => startMemtool(args, cleanups, env);

// The versions the memory tool lists (memtool log --json), newest first.
function versions(path) {
  return memtool(['log', '--json', ...(path ? [path] : [])]).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

// The seed: ordinary notes, a long one (shown in pages), JSON, CJK, and an
// XSS corpus in names and contents; a memory store of memtool server beside.
const TOKEN = 'ghp_' + 'aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5';
const EDITED = '# Todo\n- ship the browser\n- write `docs/web.md`\n- edited in the page\n';
const XSS_NAME = '/xss/<img src=x onerror=window.__xss=1>.md';
const XSS_TEXT = '<script>window.__xss=2;alert(1)</script>\n[click me](javascript:alert(3))\n' +
  '<img src=x onerror="window.__xss=4">\n<a href="javascript:alert(5)">link</a> https://example.com/x\n';

test(`the memory browser, in ${BROWSER}, on the ${STORE} store`, { timeout: 150000 }, async () => {
  assertBrowser();
  mkdirSync(SHOTS, { recursive: true });
  // This browser's screenshots of the last run (the other's are left alone).
  const prefix = SHOT_PREFIX + (STORE === 'file' ? '' : STORE + '-');
  const mine = prefix ? (f) => f.startsWith(prefix) : (f) => /^\d/.test(f);
  for (const f of readdirSync(SHOTS)) if (f.endsWith('.png') && mine(f)) rmSync(join(SHOTS, f));
  create('/notes/todo.md', '# Todo\n- ship the browser\n- write `docs/web.md`\n');
  create('/notes/long.md', Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  create('/data/config.json', '{"name": "memtool", "retries": 3, "ok": true}\n');
  create('/cjk/日本語.md', '記憶のテスト: 東京で会議\n');
  create('/old/secret.md', 'first draft with a password hint\n');
  call({ command: 'str_replace', path: '/memories/old/secret.md', old_str: 'first draft with a password hint', new_str: 'clean' });
  create(XSS_NAME, XSS_TEXT);
  // A history longer than the page's first 100 versions.
  create('/notes/busy.md', 'n0\n');
  for (let i = 1; i <= 105; i++) call({ command: 'str_replace', path: '/memories/notes/busy.md', old_str: `n${i - 1}`, new_str: `n${i}` });
  // The agent tries to keep a token: the guard refuses it, and the audit log says so.
  assert.throws(() => create('/notes/keys.md', 'deploy with\n' + TOKEN + '\n'), (e) => e.status === 1 && /would contain a secret/.test(e.stdout));

  // A memory store of memtool server in the same store, for tenant "default".
  const keys = join(dir, 'keys');
  const key = execFileSync(MEMTOOL, ['server', 'keys', 'add', 'default', '--keys', keys], { encoding: 'utf8' }).trim();
  const srv = start([...store, 'server', '--listen', '127.0.0.1:0', '--keys', keys]);
  const base = (await srv.line).trim();
  const auth = { authorization: 'Bearer ' + key, 'content-type': 'application/json' };
  const ms = await (await fetch(base + '/v1/memory_stores', { method: 'POST', headers: auth, body: JSON.stringify({ name: 'Team notes' }) })).json();
  const made = await fetch(`${base}/v1/memory_stores/${ms.id}/memories`, { method: 'POST', headers: auth, body: JSON.stringify({ path: '/team.md', content: 'team memory\n' }) });
  assert.equal(made.status, 200);
  await srv.stop();

  // memtool web: exactly one line on stdout, the address with its token.
  // --expire-after as the agent's memtool would be given it: the usage view
  // shows when each memory expires.
  const web = start([...store, '--audit', audit, '--expire-after', '30d', 'web']);
  const printed = await web.line;
  await new Promise((r) => setTimeout(r, 200));
  assert.match(web.out(), /^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}\n$/);
  const url = printed.trim();
  const origin = new URL(url).origin;

  // Without a session: 401, naming nothing; the page's files hold no data.
  for (const p of ['/v1/memory_stores', `/v1/memory_stores/memstore_0000000000000000/memories`,
    '/memtool/v1/memory_stores/memstore_0000000000000000/search?q=ship', '/session', '/etc/passwd']) {
    const r = await fetch(origin + p);
    assert.equal(r.status, 401, p);
    const body = await r.text();
    assert.ok(!body.includes('todo') && !body.includes('notes'), body);
  }
  const page0 = await fetch(origin + '/');
  const csp = page0.headers.get('content-security-policy');
  assert.ok(csp && csp.includes("script-src 'self'") && csp.includes("default-src 'none'"), csp);
  assert.ok(!/unsafe-inline|unsafe-eval/.test(csp), csp);
  assert.equal(page0.headers.get('referrer-policy'), 'no-referrer');
  const html = await page0.text();
  assert.ok(!/<script>|<style>| style=| on[a-z]+=/i.test(html), 'no inline script or style in the page');

  const browser = await launchBrowser(dir);
  cleanups.push(() => browser.close());
  const page = await browser.newPage();
  page.setDefaultTimeout(10000);
  await page.setViewport({ width: 1200, height: 800 });
  const dialogs = [];
  const outside = [];
  const seen = [];
  const cspErrors = [];
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.on('console', (m) => { if (/Content.Security.Policy|Refused to/.test(m.text())) cspErrors.push(m.text()); });
  await watchCsp(page);
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    seen.push(r.url());
    if (new URL(r.url()).origin !== origin && !r.url().startsWith('data:')) {
      outside.push(r.url());
      r.abort();
    } else r.continue();
  });

  let shot = 0;
  const snap = async (name) => page.screenshot({ path: join(SHOTS, `${prefix}${String(++shot).padStart(2, '0')}-${name}.png`), fullPage: true });
  const axe = (name) => axeCheck(page, name);
  const ready = () => page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const statusText = () => page.$eval('#status', (e) => e.textContent);
  const waitStatus = (re) => page.waitForFunction((s) => new RegExp(s).test(document.getElementById('status').textContent), { timeout: 10000 }, re.source);
  // The page re-renders after each answer: a node found may be replaced before the click lands.
  const click = async (sel) => {
    for (let i = 0; ; i++) {
      try {
        const h = await page.waitForSelector(sel, { timeout: 10000 });
        await h.click();
        return;
      } catch (e) {
        if (i >= 5 || !/detached|not clickable/.test(e.message)) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const heading = (text) => page.waitForFunction((t) => [...document.querySelectorAll('#view h2')].some((h) => h.textContent === t), { timeout: 10000 }, text);

  // Log in: the token leaves the address bar, then opens nothing.
  await page.goto(url);
  await ready();
  assert.equal(new URL(page.url()).search, '', 'the token left the address bar');
  const reuse = await fetch(origin + '/session', { method: 'POST', headers: { 'content-type': 'application/json', origin }, body: JSON.stringify({ token: new URL(url).searchParams.get('token') }) });
  assert.equal(reuse.status, 401, 'the token works once');
  const cookies = await page.cookies();
  const session = cookies.find((c) => c.name === 'mt_session_' + new URL(url).port);
  assert.ok(session && session.httpOnly && session.sameSite === 'Strict', JSON.stringify(cookies));

  // The stores (the plain one first, memtool server's beside it) and the tree.
  const stores = await page.$$eval('#store option', (os) => os.map((o) => o.textContent));
  assert.equal(stores[0], '/memories');
  assert.ok(stores.some((s) => s.startsWith('Team notes')), stores.join());
  for (const name of ['todo.md', 'long.md', 'config.json', '日本語.md', 'secret.md']) {
    assert.ok(await page.$(`aria/${name}[role="button"]`), `a button named ${name}`);
  }
  await axe('tree');
  await snap('tree');

  // The filter.
  await page.type('#filter', 'config');
  await page.waitForFunction(() => document.querySelectorAll('#tree li.mem').length === 1);
  await page.$eval('#filter', (e) => { e.value = ''; e.dispatchEvent(new Event('input')); });

  // The keyboard alone: Tab reaches the filter, the tree's buttons, and Enter opens one.
  await page.focus('#filter');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), '日本語.md');
  await page.keyboard.press('Enter');
  await heading('/cjk/日本語.md');

  // Create, then rename.
  await click('#new-memory');
  await page.waitForSelector('#new-path');
  await page.$eval('#new-path', (e) => { e.value = ''; });
  await page.type('#new-path', '/notes/made-in-page.md');
  await page.type('#new-content', 'made in the page\n');
  await axe('create');
  await click('#view form button[type=submit]');
  await heading('/notes/made-in-page.md');
  assert.equal(memtool(['cat', '/memories/notes/made-in-page.md']), 'made in the page\n');
  await click('#rename');
  await page.waitForSelector('#rename-path');
  await page.$eval('#rename-path', (e) => { e.value = '/notes/renamed.md'; });
  await click('#view form.inline button[type=submit]');
  await heading('/notes/renamed.md');
  assert.equal(memtool(['cat', '/memories/notes/renamed.md']), 'made in the page\n');
  const renamedLog = versions('/memories/notes/renamed.md');
  assert.deepEqual(renamedLog.map((v) => [v.operation, v.actor.slice(0, 4)]), [['modified', 'web:'], ['created', 'web:']]);

  // A memory: line numbers, highlighting, its last version's actor.
  await click('button[aria-label="todo.md"]');
  await heading('/notes/todo.md');
  const lines = await page.$$eval('#view .code .no', (ns) => ns.map((n) => n.textContent));
  assert.deepEqual(lines, ['1', '2', '3']);
  assert.ok((await page.$eval('#view .meta', (e) => e.textContent)).includes('cli'));
  await axe('memory');
  await snap('memory');

  // Long memories come in pages of lines; the keyboard reaches the pager.
  await click('button[aria-label="long.md"]');
  await heading('/notes/long.md');
  assert.equal(await page.$$eval('#view .code .ln', (l) => l.length), 400);
  await click('#next-lines');
  await page.waitForFunction(() => document.querySelector('#view .code .no').textContent === '401');

  // Edit and save (the SHA-256 read is the precondition).
  await click('button[aria-label="todo.md"]');
  await heading('/notes/todo.md');
  await click('#edit');
  await page.waitForSelector('#editor');
  await page.$eval('#editor', (e, t) => { e.value = t; }, EDITED);
  await axe('editor');
  await click('#save');
  await waitStatus(/Saved/);
  await heading('/notes/todo.md');
  assert.equal(memtool(['cat', '/memories/notes/todo.md']), EDITED);
  assert.match(versions('/memories/notes/todo.md')[0].actor, /^web:[0-9a-f]{12}$/);
  await snap('saved');

  // A conflict: the agent writes while the person edits; the page shows
  // both and overwrites nothing until the person chooses.
  await click('#edit');
  await page.waitForSelector('#editor');
  await page.$eval('#editor', (e) => { e.value = e.value + '- mine\n'; });
  call({ command: 'str_replace', path: '/memories/notes/todo.md', old_str: '- ship the browser', new_str: '- ship the browser (agent)' });
  await click('#save');
  await page.waitForSelector('#conflict-theirs');
  assert.match(await page.$eval('#conflict-theirs', (e) => e.value), /\(agent\)/);
  assert.match(await page.$eval('#conflict-mine', (e) => e.value), /- mine/);
  assert.match(memtool(['cat', '/memories/notes/todo.md']), /\(agent\)/, 'nothing overwritten yet');
  await axe('conflict');
  await snap('conflict');
  // Merge by hand: keep the agent's line and add mine.
  await page.$eval('#conflict-mine', (e) => { e.value = e.value.replace('- ship the browser\n', '- ship the browser (agent)\n'); });
  await click('#keep-mine');
  await waitStatus(/Saved/);
  const merged = memtool(['cat', '/memories/notes/todo.md']);
  assert.match(merged, /\(agent\)/);
  assert.match(merged, /- mine/);
  const todoLog = versions('/memories/notes/todo.md');
  assert.equal(todoLog[0].actor.slice(0, 4), 'web:');
  assert.equal(todoLog[1].actor, 'cli', "the agent's version is kept in the history");

  // Delete, then undo.
  await click('#delete');
  await page.waitForSelector('.confirm');
  await axe('delete-confirm');
  await click('.confirm button.danger');
  await waitStatus(/Deleted \/notes\/todo.md/);
  assert.equal(await page.$('button[aria-label="todo.md"]'), null);
  assert.throws(() => memtool(['cat', '/memories/notes/todo.md']));
  await snap('deleted');
  await click('#status button');
  await waitStatus(/Restored/);
  await page.waitForSelector('button[aria-label="todo.md"]');
  assert.equal(memtool(['cat', '/memories/notes/todo.md']), merged);

  // History: a timeline, a diff against the version before, restore.
  await heading('/notes/todo.md');
  await click('aria/History[role="button"]');
  await page.waitForSelector('#history tbody tr');
  const rows = await page.$$eval('#history tbody tr', (rs) => rs.map((r) => r.dataset.version));
  assert.ok(rows.length >= 5, rows.join());
  await axe('history');
  // The diff of the page's first edit (the fourth row from the top: restore, delete, merge, agent, edit).
  const edited = versions('/memories/notes/todo.md').find((v) => v.actor.startsWith('web:') && v.operation === 'modified' && v.content_size_bytes === Buffer.byteLength(EDITED));
  assert.ok(edited, JSON.stringify(versions('/memories/notes/todo.md')));
  await click(`#history tr[data-version="memver_${edited.id}"] ::-p-aria(Diff)`);
  await page.waitForFunction(() => document.querySelectorAll('#diff-area .add').length > 0);
  assert.deepEqual(await page.$$eval('#diff-area .add', (l) => l.map((x) => x.textContent)), ['+- edited in the page']);
  await axe('diff');
  await snap('history-diff');
  // Restore the first version.
  const first = versions('/memories/notes/todo.md').at(-1);
  await click(`#history tr[data-version="memver_${first.id}"] ::-p-text(Restore)`);
  await waitStatus(/Restored memver_/);
  assert.equal(memtool(['cat', '/memories/notes/todo.md']), '# Todo\n- ship the browser\n- write `docs/web.md`\n');
  assert.match(versions('/memories/notes/todo.md')[0].actor, /^web:/);

  // Redact an old version: the confirmation says what goes for good.
  await click('button[aria-label="secret.md"]');
  await heading('/old/secret.md');
  await click('aria/History[role="button"]');
  await page.waitForSelector('#history tbody tr');
  const old = versions('/memories/old/secret.md').at(-1);
  await click(`#history tr[data-version="memver_${old.id}"] ::-p-text(Redact)`);
  await page.waitForSelector('.confirm');
  assert.match(await page.$eval('.confirm', (e) => e.textContent), /erased for good/);
  await snap('redact-confirm');
  await click('.confirm button.danger');
  await waitStatus(/Redacted/);
  assert.equal(versions('/memories/old/secret.md').at(-1).redacted, true);
  assert.throws(() => memtool(['show', String(old.id)]));

  // A history of 106 versions: the first 100, then the older ones on request.
  await click('button[aria-label="busy.md"]');
  await heading('/notes/busy.md');
  await click('aria/History[role="button"]');
  await page.waitForSelector('#history tbody tr');
  assert.equal(await page.$$eval('#history tbody tr', (r) => r.length), 100);
  const busyLog = memtool(['log', '--json', '--limit', '1000', '/memories/notes/busy.md']).split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(busyLog.length, 106);
  const firstBusy = busyLog.at(-1);
  assert.equal(await page.$(`#history tr[data-version="memver_${firstBusy.id}"]`), null);
  await click('#history-more');
  await page.waitForFunction(() => document.querySelectorAll('#history tbody tr').length === 106);
  assert.ok(await page.$(`#history tr[data-version="memver_${firstBusy.id}"]`), 'the first version, on the second page');
  assert.ok(await page.$eval('#history-more', (b) => b.hidden), 'no more pages');
  assert.equal(await page.$$eval('#history tbody tr', (rs) => rs.filter((r) => r.textContent.includes('(current)')).length), 1);

  // Search, with the match highlighted.
  await click('#nav-search');
  await page.type('#search-q', '東京');
  await click('#view form button[type=submit]');
  await page.waitForSelector('#search-results mark');
  assert.equal(await page.$eval('#search-results mark', (m) => m.textContent), '東京');
  await axe('search');
  await snap('search');

  // What the guard refused: kind and line, never the secret.
  await click('#nav-guard');
  await page.waitForSelector('#guard tbody tr');
  const refused = await page.$eval('#guard tbody', (e) => e.textContent);
  assert.match(refused, /\/notes\/keys\.md/);
  assert.match(refused, /a secret \(github-token, line 2\)/);
  assert.ok(!(await page.content()).includes(TOKEN.slice(4, 16)), 'the secret is nowhere on the page');
  await axe('guard');
  await snap('guard');

  // Usage and limits, and the store's history.
  await click('#nav-usage');
  await page.waitForSelector('#usage');
  const expiring = await page.$$eval('#expiring li', (x) => x.map((e) => e.textContent));
  assert.ok(expiring.length > 0, 'the memories closest to expiring are listed');
  for (const line of expiring) assert.match(line, /^\/\S.* · expires in 29d 2[23]h, \d{4}-\d\d-\d\d /, line);
  await axe('usage');
  await click('#nav-store-history');
  await page.waitForSelector('#history tbody tr');
  await axe('store-history');
  await snap('store-history');

  // The XSS corpus stays text: in the tree and in the memory.
  const xssButton = await page.$('aria/<img src=x onerror=window.__xss=1>.md[role="button"]');
  assert.ok(xssButton, 'the XSS name is a button named by its text');
  await xssButton.click();
  await heading(XSS_NAME);
  const shown = await page.$eval('#view .code', (e) => e.textContent);
  assert.ok(shown.includes('<script>window.__xss=2;alert(1)</script>'));
  assert.ok(shown.includes('javascript:alert(3)'));
  assert.equal(await page.$$eval('#view img, #view script, #view a, #tree img, #tree a', (x) => x.length), 0);
  await snap('xss');

  // Another store (memtool server's), then a reload: the cookie keeps the session.
  await page.select('#store', ms.id);
  await page.waitForSelector('button[aria-label="team.md"]');
  await page.reload();
  await ready();
  assert.ok(await page.$('button[aria-label="todo.md"]'));

  // A second memtool web on this machine, opened in the same browser: each
  // keeps its own session (a host's cookies go to all of its ports).
  const web2 = start([...store, 'web']);
  const url2 = (await web2.line).trim();
  const page2 = await browser.newPage();
  await page2.goto(url2);
  await page2.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await page2.close();
  await web2.stop();
  await page.reload();
  await ready();
  assert.ok(await page.$('button[aria-label="todo.md"]'), 'the first session outlives the second');

  assert.equal(await page.evaluate(() => window.__xss), undefined, 'no script of the corpus ran');
  assert.deepEqual(dialogs, [], 'no dialog opened');
  assert.deepEqual(outside, [], 'no request left 127.0.0.1');
  assert.deepEqual(cspErrors, [], 'the page broke none of its own policy');
  assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], 'no CSP violation reported');
  // Both watches are live in this browser, so the three checks above could fail:
  // interception saw the page's own requests, and a request the policy forbids
  // is reported as a violation.
  assert.ok(seen.some((u) => u.endsWith('/assets/app.js')), 'request interception saw the page load its script');
  await page.evaluate(() => fetch('http://192.0.2.1/x').catch(() => null));
  await page.waitForFunction(() => window.__cspViolations.some((v) => v.startsWith('connect-src')), { timeout: 5000 });

  // CSRF: a change with the session cookie and the page's Origin but without the token is 403.
  const cookie = `${session.name}=${session.value}`;
  const noCsrf = await fetch(`${origin}/v1/memory_stores/memstore_0000000000000000/memories`, {
    method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' }, body: JSON.stringify({ path: '/x.md', content: 'x' }),
  });
  assert.equal(noCsrf.status, 403);
  assert.match((await noCsrf.json()).error.message, /CSRF/);
  const { csrf_token: csrf } = await (await fetch(origin + '/session', { headers: { cookie } })).json();
  const withCsrf = await fetch(`${origin}/v1/memory_stores/memstore_0000000000000000/memories`, {
    method: 'POST', headers: { cookie, origin, 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify({ path: '/x.md', content: 'x' }),
  });
  assert.equal(withCsrf.status, 200);
  const otherOrigin = await fetch(`${origin}/v1/memory_stores/memstore_0000000000000000/memories`, {
    method: 'POST', headers: { cookie, 'content-type': 'application/json', 'x-csrf-token': csrf, origin: 'http://evil.example' }, body: JSON.stringify({ path: '/y.md', content: 'y' }),
  });
  assert.equal(otherOrigin.status, 403);
  // Only the page's own files: nothing else is served, with a session or without.
  for (const p of ['/assets/%2e%2e/%2e%2e/etc/passwd', '/assets/x.js', '/memories/notes/todo.md', '/.memtool', '/notes/todo.md']) {
    const r = await fetch(origin + p, { headers: { cookie } });
    assert.equal(r.status, 404, p);
  }
  // The page in a narrow window.
  await page.setViewport({ width: 380, height: 800 });
  await click('button[aria-label="todo.md"]');
  await heading('/notes/todo.md');
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'nothing wider than a narrow window');
  await axe('narrow');
  await snap('narrow');
  writeFileSync(join(SHOTS, 'README'), 'Screenshots of tests/web/browser.test.mjs (firefox-*: in Firefox) and server_ui.test.mjs, newest run.\n');
});
