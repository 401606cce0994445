// The page's server side, without a browser: requests sent byte for byte
// over a socket (node's URL parser and fetch would tidy `/../`, `%2e%2e`
// and an absolute-form target before sending them, so a check of those
// could never fail), Host and Origin rules (DNS rebinding, cross-site
// requests), the CSRF token, the security headers on every kind of answer,
// and the sessions' bounds and lifetimes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMemtool } from './lib.mjs';

const MEMTOOL = process.env.MEMTOOL;
const dir = mkdtempSync(join(tmpdir(), 'memtool-websec-'));
const root = join(dir, 'store');
const keys = join(dir, 'keys');
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const MARK = 'store-content-marker-7f3a';
const memtool = (args, input) => execFileSync(MEMTOOL, ['--root', root, ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
memtool(['call'], JSON.stringify({ command: 'create', path: '/memories/notes/todo.md', file_text: MARK + '\n' }));
const keyAdd = (tenant) => execFileSync(MEMTOOL, ['server', 'keys', 'add', tenant, '--keys', keys], { encoding: 'utf8' }).trim();
const keyList = () => JSON.parse(execFileSync(MEMTOOL, ['server', 'keys', 'list', '--json', '--keys', keys], { encoding: 'utf8' }));

// A child that prints its address on stdout first: that address.
const start = async (args, env) => (await startMemtool(args, cleanups, env).line).trim();

// One HTTP/1.1 request, exactly as given: target, headers and body go out
// unparsed. {status, headers (lowercase names), body}.
function raw(port, method, target, headers = {}, body = '') {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    s.on('data', (d) => (data = Buffer.concat([data, d])));
    s.on('error', reject);
    s.on('end', () => {
      const text = data.toString('utf8');
      const cut = text.indexOf('\r\n\r\n');
      const head = text.slice(0, cut).split('\r\n');
      const h = {};
      for (const l of head.slice(1)) {
        const i = l.indexOf(':');
        h[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(head[0].split(' ')[1]), headers: h, body: text.slice(cut + 4) });
    });
    const all = { host: `127.0.0.1:${port}`, connection: 'close', ...headers };
    if (body) all['content-length'] = Buffer.byteLength(body);
    const lines = Object.entries(all).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}: ${v}`);
    s.write(`${method} ${target} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`);
  });
}
const json = (r) => JSON.parse(r.body);
const cookieOf = (r) => r.headers['set-cookie'].split(';')[0];

// Every answer, the page's, the API's and every refusal, carries these.
function assertHeaders(r, what) {
  const csp = r.headers['content-security-policy'];
  assert.ok(csp && csp.includes("default-src 'none'") && csp.includes("script-src 'self'") && csp.includes("frame-ancestors 'none'"), `${what}: CSP ${csp}`);
  assert.ok(!/unsafe-inline|unsafe-eval/.test(csp), `${what}: ${csp}`);
  assert.equal(r.headers['x-content-type-options'], 'nosniff', what);
  assert.equal(r.headers['referrer-policy'], 'no-referrer', what);
  assert.equal(r.headers['x-frame-options'], 'DENY', what);
  assert.equal(r.headers['cache-control'], 'no-store', what);
}

// Paths that would reach past the page's files if anything joined them to a
// folder; none may answer 2xx or show the store.
const TRAVERSALS = ['/..%2f..%2f..%2fetc%2fpasswd', '/%2e%2e/%2e%2e/etc/passwd', '/assets/../../etc/passwd',
  '/assets/%2e%2e/%2e%2e/.memtool', '/assets/..%2fapp.js/../../notes/todo.md', '/./notes/todo.md',
  '/memories/notes/todo.md', '/notes/todo.md', '//etc/passwd', '/assets/..\\..\\notes\\todo.md', '/assets/app.js%00.md'];

test('memtool web: Host, Origin, CSRF, headers, traversal, healthz', { timeout: 60000 }, async () => {
  const url = await start(['--root', root, 'web']);
  const { port } = new URL(url);
  const token = new URL(url).searchParams.get('token');
  const origin = `http://127.0.0.1:${port}`;

  // A foreign Host (a name rebound to 127.0.0.1) reaches nothing, not even /healthz.
  for (const p of ['/', '/session', '/healthz', '/v1/memory_stores']) {
    const r = await raw(port, 'GET', p, { host: `evil.example:${port}` });
    assert.equal(r.status, 403, p);
    assertHeaders(r, `foreign host ${p}`);
  }
  assert.equal((await raw(port, 'GET', '/healthz', { host: `evil.example` })).status, 403);
  assert.equal((await raw(port, 'GET', '/healthz', { host: undefined })).status, 403, 'no Host');
  const health = await raw(port, 'GET', '/healthz');
  assert.equal(health.status, 200);
  assert.equal(health.body, 'ok\n');
  assert.equal((await raw(port, 'GET', '/healthz', { host: `localhost:${port}` })).status, 200);

  // The login needs the page's own Origin: without one, or another, the token opens nothing.
  const loginBody = JSON.stringify({ token });
  const typed = { 'content-type': 'application/json' };
  let r = await raw(port, 'POST', '/session', typed, loginBody);
  assert.equal(r.status, 403, 'a login without Origin');
  assertHeaders(r, 'login without origin');
  r = await raw(port, 'POST', '/session', { ...typed, origin: 'http://evil.example' }, loginBody);
  assert.equal(r.status, 403, 'a login from another origin');
  r = await raw(port, 'POST', '/session', { ...typed, origin: `http://localhost:${port}.evil.example` }, loginBody);
  assert.equal(r.status, 403, 'an origin that only starts like ours');
  r = await raw(port, 'POST', '/session', { ...typed, origin }, loginBody);
  assert.equal(r.status, 200, r.body);
  assertHeaders(r, 'login');
  const cookie = cookieOf(r);
  const { csrf_token: csrf } = json(r);
  assert.match(r.headers['set-cookie'], /HttpOnly; SameSite=Strict; Path=\//);

  // JSON answers and errors carry the headers too.
  const S = '/v1/memory_stores/memstore_0000000000000000';
  r = await raw(port, 'GET', `${S}/memories?path_prefix=/notes/`, { cookie });
  assert.equal(r.status, 200, r.body);
  assertHeaders(r, 'an API answer');
  r = await raw(port, 'GET', `${S}/memories/mem_0000000000000000`, { cookie });
  assert.equal(r.status, 404);
  assertHeaders(r, "the API's 404");
  r = await raw(port, 'GET', S + '/memories');
  assert.equal(r.status, 401);
  assertHeaders(r, 'no session');

  // A change: the cookie, the CSRF token and the page's Origin, all three.
  const change = (h) => raw(port, 'POST', `${S}/memories`, { ...typed, cookie, ...h }, JSON.stringify({ path: '/made.md', content: 'x\n' }));
  r = await change({ origin });
  assert.equal(r.status, 403, 'no CSRF token');
  assertHeaders(r, 'csrf refusal');
  r = await change({ origin, 'x-csrf-token': csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') });
  assert.equal(r.status, 403, 'a wrong CSRF token');
  r = await change({ origin, 'x-csrf-token': 'short' });
  assert.equal(r.status, 403, 'a short CSRF token');
  r = await change({ 'x-csrf-token': csrf });
  assert.equal(r.status, 403, 'a change without Origin');
  r = await change({ 'x-csrf-token': csrf, origin: 'null' });
  assert.equal(r.status, 403, 'Origin: null');
  r = await change({ 'x-csrf-token': csrf, origin: `https://127.0.0.1:${port}` });
  assert.equal(r.status, 403, 'the wrong scheme');
  assert.throws(() => memtool(['cat', '/memories/made.md']), 'nothing refused was made');
  r = await change({ 'x-csrf-token': csrf, origin });
  assert.equal(r.status, 200, r.body);
  // A DELETE and a restore are changes too.
  r = await raw(port, 'DELETE', `${S}/memories/${json(r).id}`, { cookie, 'x-csrf-token': csrf });
  assert.equal(r.status, 403, 'a DELETE without Origin');

  // Traversal, sent as is: with a session and without, nothing but the page's files.
  for (const p of TRAVERSALS) {
    for (const c of [cookie, undefined]) {
      const t = await raw(port, 'GET', p, { cookie: c });
      assert.ok([400, 401, 403, 404].includes(t.status), `${p}: ${t.status}`);
      assert.ok(!t.body.includes(MARK) && !t.body.includes('root:'), `${p}: ${t.body}`);
    }
  }
  // Absolute-form, naming another host: the Host header is ours, the target is not.
  const abs = await raw(port, 'GET', `http://evil.example:${port}/assets/../../notes/todo.md`, { cookie });
  assert.ok([400, 403, 404].includes(abs.status), String(abs.status));
  assert.ok(!abs.body.includes(MARK));
});

test('memtool server /ui/: Host, --public-host, Origin on login and changes', { timeout: 60000 }, async () => {
  const alice = keyAdd('alice');
  const base = await start(['--root', root, 'server', '--listen', '127.0.0.1:0', '--keys', keys, '--public-host', 'memory.example.org,memory.example.org:8443']);
  const { port } = new URL(base);
  const origin = `http://127.0.0.1:${port}`;
  const typed = { 'content-type': 'application/json' };
  const login = (h) => raw(port, 'POST', '/ui/session', { ...typed, ...h }, JSON.stringify({ key: alice }));

  // The page, its login and the cookie's path answer this server's names only.
  for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.2:${port}`, `memory.example.org.evil:${port}`]) {
    const r = await raw(port, 'GET', '/ui/', { host });
    assert.equal(r.status, 403, host);
    assertHeaders(r, 'foreign host');
    assert.equal((await login({ host, origin: `http://${host}` })).status, 403, host);
  }
  assert.equal((await raw(port, 'GET', '/ui/')).status, 200);
  assert.equal((await raw(port, 'GET', '/ui/', { host: 'memory.example.org' })).status, 200, '--public-host');
  assert.equal((await raw(port, 'GET', '/ui/', { host: 'MEMORY.example.org:8443' })).status, 200, 'a host name in any case');
  assert.equal((await raw(port, 'GET', '/ui/', { host: 'memory.example.org:9999' })).status, 403, 'another port of a public host');

  // The login needs the page's Origin, even with a good key.
  assert.equal((await login({})).status, 403, 'a login without Origin');
  assert.equal((await login({ origin: 'http://evil.example' })).status, 403);
  assert.equal((await login({ host: 'memory.example.org', origin })).status, 403, 'an Origin not the Host named');
  // Behind a proxy that ends TLS, the public name's https origin is the page's.
  assert.equal((await login({ host: 'memory.example.org', origin: 'https://memory.example.org' })).status, 200);
  const r = await login({ origin });
  assert.equal(r.status, 200, r.body);
  const cookie = cookieOf(r);
  const { csrf_token: csrf } = json(r);

  // With the page's cookie, the API's paths follow the page's rules.
  assert.equal((await raw(port, 'GET', '/v1/memory_stores', { cookie })).status, 200);
  assert.equal((await raw(port, 'GET', '/v1/memory_stores', { cookie, host: `evil.example:${port}` })).status, 403);
  const make = (h) => raw(port, 'POST', '/v1/memory_stores', { ...typed, cookie, 'x-csrf-token': csrf, ...h }, JSON.stringify({ name: 'n' }));
  assert.equal((await make({})).status, 403, 'a change without Origin');
  assert.equal((await make({ origin: 'http://evil.example' })).status, 403);
  assert.equal((await make({ origin, 'x-csrf-token': 'x'.repeat(43) })).status, 403, 'a wrong CSRF token');
  const made = await make({ origin });
  assert.equal(made.status, 200, made.body);
  assertHeaders(made, 'an API answer through the page');

  // Without the cookie: the API's as before, whatever Host or Origin (the SDK, curl).
  const sdk = await raw(port, 'GET', '/v1/memory_stores', { authorization: 'Bearer ' + alice, host: 'api.internal:1' });
  assert.equal(sdk.status, 200);
  const sdkMade = await raw(port, 'POST', '/v1/memory_stores', { ...typed, authorization: 'Bearer ' + alice }, JSON.stringify({ name: 'sdk' }));
  assert.equal(sdkMade.status, 200, sdkMade.body);
  assert.equal((await raw(port, 'GET', '/healthz', { host: 'api.internal:1' })).status, 200, "memtool server's /healthz is the API's");
  // The server's own answers, without the page, carry the page's headers too.
  const noKey = await raw(port, 'GET', '/v1/memory_stores');
  assert.equal(noKey.status, 401);
  assertHeaders(noKey, "the API's 401");
  const notFound = await raw(port, 'GET', '/v1/nothing', { authorization: 'Bearer ' + alice });
  assert.equal(notFound.status, 404);
  assertHeaders(notFound, "the API's 404");
  assertHeaders(await raw(port, 'GET', '/healthz'), '/healthz');

  for (const p of TRAVERSALS.map((t) => '/ui' + t).concat(TRAVERSALS)) {
    const t = await raw(port, 'GET', p, { cookie });
    assert.ok([400, 401, 403, 404].includes(t.status), `${p}: ${t.status}`);
    assert.ok(!t.body.includes(MARK) && !t.body.includes('root:'), p);
  }
});

test('memtool server /ui/: sessions bounded per key, idle and absolute expiry', { timeout: 60000 }, async () => {
  const carol = keyAdd('carol');
  const dave = keyAdd('dave');
  const env = { MEMTOOL_WEB_SESSION_IDLE_S: '2', MEMTOOL_WEB_SESSION_MAX_S: '4' };
  const base = await start(['--root', root, 'server', '--listen', '127.0.0.1:0', '--keys', keys], env);
  const { port } = new URL(base);
  const origin = `http://127.0.0.1:${port}`;
  const login = async (key) => {
    const r = await raw(port, 'POST', '/ui/session', { 'content-type': 'application/json', origin }, JSON.stringify({ key }));
    assert.equal(r.status, 200, r.body);
    return cookieOf(r);
  };
  const status = async (cookie) => (await raw(port, 'GET', '/v1/memory_stores', { cookie })).status;

  // One key logging in again and again ends its own oldest sessions, never another key's.
  const daves = await login(dave);
  const carols = [];
  for (let i = 0; i < 80; i++) carols.push(await login(carol));
  assert.equal(await status(daves), 200, "carol's logins do not end dave's session");
  assert.equal(await status(carols[0]), 401, "carol's oldest session ended");
  assert.equal(await status(carols.at(-1)), 200);
  const carolId = keyList().find((k) => k.tenant === 'carol').id;
  const who = await raw(port, 'GET', '/ui/session', { cookie: carols.at(-1) });
  assert.equal(json(who).actor, 'web:' + carolId);

  // Idle: a session unused for longer than its idle time ends.
  const idle = await login(dave);
  await new Promise((r) => setTimeout(r, 2600));
  assert.equal(await status(idle), 401, 'an idle session ended');
  // Absolute: one in use all along ends at its lifetime all the same.
  const busy = await login(dave);
  const t0 = Date.now();
  while (Date.now() - t0 < 3500) {
    assert.equal(await status(busy), 200, 'in use, before its lifetime');
    await new Promise((r) => setTimeout(r, 500));
  }
  await new Promise((r) => setTimeout(r, 4200 - (Date.now() - t0)));
  assert.equal(await status(busy), 401, 'a session past its lifetime ended');
});

test("memtool's diff and restore calls: the base memtool diff uses, the API's limits, 404 only for no such version", { timeout: 30000 }, async () => {
  const call = (input) => memtool(['call'], JSON.stringify(input));
  call({ command: 'create', path: '/memories/d.md', file_text: 'one\n' });
  call({ command: 'str_replace', path: '/memories/d.md', old_str: 'one', new_str: 'two' });
  call({ command: 'str_replace', path: '/memories/d.md', old_str: 'two', new_str: 'three' });
  const [v3, v2, v1] = memtool(['log', '--json', '/memories/d.md']).split('\n').filter(Boolean).map((l) => JSON.parse(l).id);
  memtool(['redact', String(v2)]);
  const url = await start(['--root', root, 'web']);
  const { port } = new URL(url);
  const r = await raw(port, 'POST', '/session', { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` }, JSON.stringify({ token: new URL(url).searchParams.get('token') }));
  const cookie = cookieOf(r);
  const S = '/memtool/v1/memory_stores/memstore_0000000000000000';
  const d = await raw(port, 'GET', `${S}/memory_versions/memver_${v3}/diff`, { cookie });
  assert.equal(d.status, 200, d.body);
  const j = json(d);
  // A redacted version has no content: the diff is against the readable one before it, as memtool diff's.
  assert.equal(j.previous_version_id, `memver_${v1}`);
  assert.deepEqual(j.redacted_skipped, [`memver_${v2}`]);
  assert.match(j.diff, /^-one$/m);
  assert.match(j.diff, /^\+three$/m);
  const cli = JSON.parse(memtool(['diff', '--json', String(v3)]));
  assert.equal(cli.from.version, v1, 'the CLI compares with the same version');
  assert.deepEqual(cli.redacted_skipped, [v2]);
  const none = await raw(port, 'GET', `${S}/memory_versions/memver_999999/diff`, { cookie });
  assert.equal(none.status, 404);
  assertHeaders(none, 'a 404 of the diff call');
  const wrong = await raw(port, 'POST', `${S}/memory_versions/memver_${v3}/diff`, { cookie, origin: `http://127.0.0.1:${port}`, 'x-csrf-token': json(r).csrf_token });
  assert.equal(wrong.status, 405);
  assert.match(json(wrong).error.message, /allowed: GET/);

  // Restore is a write through the API: held to its 100 kB limit even on the
  // plain store, whose own limit is larger (the memory tool wrote 150 kB).
  const big = 'x'.repeat(150 * 1024) + '\n';
  call({ command: 'create', path: '/memories/big.md', file_text: big });
  call({ command: 'str_replace', path: '/memories/big.md', old_str: big.trim(), new_str: 'small' });
  const [, bigV] = memtool(['log', '--json', '/memories/big.md']).split('\n').filter(Boolean).map((l) => JSON.parse(l).id);
  const restored = await raw(port, 'POST', `${S}/memory_versions/memver_${bigV}/restore`, { cookie, origin: `http://127.0.0.1:${port}`, 'x-csrf-token': json(r).csrf_token });
  assert.equal(restored.status, 400, restored.body);
  assert.match(json(restored).error.message, /100 kB/);
  assert.equal(memtool(['cat', '/memories/big.md']), 'small\n', 'nothing restored');
  const back = await raw(port, 'POST', `${S}/memory_versions/memver_${v1}/restore`, { cookie, origin: `http://127.0.0.1:${port}`, 'x-csrf-token': json(r).csrf_token });
  assert.equal(back.status, 200, back.body);
  assert.equal(memtool(['cat', '/memories/d.md']), 'one\n');
  const gone = await raw(port, 'POST', `${S}/memory_versions/memver_999999/restore`, { cookie, origin: `http://127.0.0.1:${port}`, 'x-csrf-token': json(r).csrf_token });
  assert.equal(gone.status, 404);
});
