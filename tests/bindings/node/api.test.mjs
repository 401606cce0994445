// MemoryStore and memtoolMemoryTool: the same texts as `memtool call`, history, the
// SDK's error contract, bad arguments, closed handles, and an event loop that keeps
// turning while a call waits for the store's lock.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import test from 'node:test';

import { PKG, cliCall, memtool, requirePkg, scratch, stores } from './lib.mjs';

const { MemoryStore, MemoryToolError, memtoolMemoryTool } = memtool;

const SESSION = [
  { command: 'view', path: '/memories' },
  { command: 'create', path: '/memories/notes/a.md', file_text: 'one\ntwo\nthree\n' },
  { command: 'create', path: '/memories/notes/a.md', file_text: 'again' },
  { command: 'str_replace', path: '/memories/notes/a.md', old_str: 'two\nthree', new_str: '2\n3' },
  { command: 'str_replace', path: '/memories/notes/a.md', old_str: 'absent', new_str: 'x' },
  { command: 'insert', path: '/memories/notes/a.md', insert_line: 1, insert_text: 'one and a half\n' },
  { command: 'insert', path: '/memories/notes/a.md', insert_line: 99, insert_text: 'x' },
  { command: 'view', path: '/memories/notes/a.md', view_range: [2, 3] },
  { command: 'rename', old_path: '/memories/notes/a.md', new_path: '/memories/b.md' },
  { command: 'view', path: '/memories/../etc/passwd' },
  { command: 'view', path: '/memories' },
  { command: 'delete', path: '/memories/notes' },
  { command: 'frobnicate', path: '/memories' },
  { command: 'view', path: '/memories/b.md' },
];

test('every command gives exactly what memtool call gives, on each store', async (t) => {
  for (const [kind, url] of stores(t)) {
    const viaCli = url.replace(/(memories\.db|files)$/, 'cli-$1');
    const store = await MemoryStore.open({ store: url, actor: 'cli' });
    for (const input of SESSION) {
      const got = await store.call(input);
      const want = cliCall(viaCli, input);
      assert.equal(got.content, want.stdout, `${kind}: ${JSON.stringify(input)}`);
      assert.equal(got.isError, want.status === 1, `${kind}: ${JSON.stringify(input)}`);
    }
    // JSON text is taken as it is, as `memtool call` takes stdin.
    const text = await store.call('{"command":"view","path":"/memories/b.md"}');
    assert.equal(text.content, cliCall(viaCli, { command: 'view', path: '/memories/b.md' }).stdout);
    await store.close();
  }
});

test('the six command methods return the text, or throw MemoryToolError with it', async (t) => {
  const dir = scratch(t);
  const store = await MemoryStore.open({ store: `file:${dir}` });
  t.after(() => store.close());
  assert.equal(await store.create('/memories/a.md', 'x\ny\n'), 'File created successfully at: /memories/a.md');
  assert.match(await store.strReplace('/memories/a.md', 'x\ny', 'X\nY'), /^The memory file has been edited/);
  assert.match(await store.insert('/memories/a.md', 0, 'top'), /^The file \/memories\/a.md has been edited/);
  assert.equal(
    await store.view('/memories/a.md', [1, 2]),
    "Here's the content of /memories/a.md with line numbers:\n     1\ttop\n     2\tX",
  );
  assert.equal(await store.rename('/memories/a.md', '/memories/b/c.md'), 'Successfully renamed /memories/a.md to /memories/b/c.md');
  assert.equal(fs.readFileSync(path.join(dir, 'b', 'c.md'), 'utf8'), 'top\nX\nY\n');
  await assert.rejects(store.view('/memories/../etc/passwd'), (e) => {
    assert.ok(e instanceof MemoryToolError);
    assert.equal(e.content, 'Error: Path /memories/../etc/passwd would escape /memories directory');
    assert.equal(e.isError, true);
    return true;
  });
  assert.equal(await store.delete('/memories/b'), 'Successfully deleted /memories/b');
  await assert.rejects(store.delete('/memories/b'), { content: 'Error: The path /memories/b does not exist' });
});

test('a plain path is a directory, as --root takes it: the SDK helper\'s memories stay', async (t) => {
  // BetaLocalFilesystemMemoryTool.init('./memory') kept /memories/x at ./memory/memories/x.
  const dir = scratch(t);
  fs.mkdirSync(path.join(dir, 'memory', 'memories'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'memory', 'memories', 'notes.md'), 'kept by the SDK helper\n');
  const cwd = process.cwd();
  process.chdir(dir);
  t.after(() => process.chdir(cwd));
  const tool = memtoolMemoryTool({ store: './memory/memories' });
  t.after(() => tool.close());
  assert.equal(
    await tool.run({ command: 'view', path: '/memories/notes.md' }),
    "Here's the content of /memories/notes.md with line numbers:\n     1\tkept by the SDK helper",
  );
  await tool.run({ command: 'create', path: '/memories/new.md', file_text: 'x' });
  assert.equal(fs.readFileSync(path.join(dir, 'memory', 'memories', 'new.md'), 'utf8'), 'x');
  // The same directory however it is named.
  const abs = path.join(dir, 'memory', 'memories');
  for (const spec of ['memory/memories', abs, `file:${abs}`, `/${abs}`]) {
    const store = await MemoryStore.open({ store: spec });
    assert.equal(await store.view('/memories/new.md'), "Here's the content of /memories/new.md with line numbers:\n     1\tx", spec);
    await store.close();
  }
  // A colon in the first component reads as a scheme; './' makes it a path.
  await assert.rejects(MemoryStore.open({ store: 'a:b' }), /not a store URL/);
  const colon = await MemoryStore.open({ store: './a:b' });
  await colon.create('/memories/c', 'y');
  await colon.close();
  assert.equal(fs.readFileSync(path.join(dir, 'a:b', 'c'), 'utf8'), 'y');
});

test('viewSync gives what view gives, on the calling thread, and views only', async (t) => {
  for (const [kind, url] of stores(t)) {
    const store = await MemoryStore.open({ store: url });
    await store.create('/memories/a.md', 'one\ntwo\n');
    assert.equal(store.viewSync('/memories/a.md'), await store.view('/memories/a.md'), kind);
    assert.equal(store.viewSync('/memories', undefined), await store.view('/memories'), kind);
    assert.equal(store.viewSync('/memories/a.md', [2, 2]), await store.view('/memories/a.md', [2, 2]), kind);
    assert.throws(() => store.viewSync('/memories/../x'), {
      name: 'MemoryToolError',
      content: 'Error: Path /memories/../x would escape /memories directory',
    });
    assert.throws(() => store.viewSync(3), { name: 'TypeError' });
    const native = requirePkg(path.join(PKG, 'build', 'Release', 'memtool.node'));
    const h = await native.open(url, {});
    assert.throws(() => h.viewSync('{"command":"create","path":"/memories/b.md","file_text":"x"}'), {
      name: 'TypeError',
      message: /view command only/,
    });
    assert.throws(() => h.viewSync('not json'), { name: 'TypeError' });
    await h.close();
    await store.close();
    assert.throws(() => store.viewSync('/memories'), { code: 'ERR_MEMTOOL_CLOSED' });
  }
});

test('history: log, versionContent, restore, undo, redact, as the C API has them', async (t) => {
  for (const [kind, url] of stores(t)) {
    const store = await MemoryStore.open({ store: url, actor: 'tester' });
    await store.create('/memories/n.md', 'first\n');
    await store.strReplace('/memories/n.md', 'first', 'second');
    await store.rename('/memories/n.md', '/memories/m.md');
    let log = await store.log();
    assert.deepEqual(log.map((v) => [v.id, v.operation, v.path, v.previousPath, v.actor]), [
      [3, 'modified', '/memories/m.md', '/memories/n.md', 'tester'],
      [2, 'modified', '/memories/n.md', null, 'tester'],
      [1, 'created', '/memories/n.md', null, 'tester'],
    ], kind);
    assert.match(log[0].memoryId, /^mem_[0-9a-f]{16}$/);
    assert.equal(log[0].memoryId, log[2].memoryId);
    assert.equal(log[2].contentSize, 6);
    assert.match(log[2].contentSha256, /^[0-9a-f]{64}$/);
    assert.ok(Math.abs(log[2].createdAt - Date.now()) < 60_000);
    assert.deepEqual((await store.log({ limit: 1, beforeId: 3 })).map((v) => v.id), [2]);
    assert.deepEqual((await store.log({ operation: 'created' })).map((v) => v.id), [1]);
    assert.deepEqual(await store.log({ actor: 'nobody' }), []);
    assert.deepEqual((await store.log({ since: new Date(Date.now() - 60_000) })).length, 3);

    assert.deepEqual(await store.versionContent(1), Buffer.from('first\n'));
    // The rename's version holds the content as it is, and so does 2: undo passes over
    // both to 1, the latest that differs.
    assert.deepEqual(await store.undo('/memories/m.md'), { versionId: 4, restored: 1 });
    assert.equal((await store.read('/memories/m.md')).toString(), 'first\n');
    // A restore that would leave the content as it is records nothing: 0.
    assert.equal(await store.restore(1), 0);
    assert.equal(await store.restore(2), 5);
    assert.equal((await store.read('/memories/m.md')).toString(), 'second\n');
    assert.equal(await store.restore(1), 6);
    assert.equal((await store.read('/memories/m.md')).toString(), 'first\n');
    await store.redact(2);
    const two = (await store.log()).find((v) => v.id === 2);
    assert.equal(two.redacted, true);
    assert.equal(two.path, null);
    assert.equal(two.contentSha256, null);
    await assert.rejects(store.versionContent(2), { code: 'MT_ENOTFOUND' });
    await assert.rejects(store.versionContent(99), { code: 'MT_ENOTFOUND' });
    await assert.rejects(store.redact(6), { code: 'MT_EINVAL', message: /^memtool: / });
    assert.deepEqual(await store.usage(), { bytes: 6, files: 1, dirs: 0 });
    await store.close();
  }
});

// Past 1 MiB of hashing a process loads the system's libcrypto for SHA-256; in node, whose
// own OpenSSL is linked in, its digests must still be SHA-256's, as another process sees them.
test('content hashes stay right once libcrypto is loaded into node', async (t) => {
  for (const [kind, url] of stores(t)) {
    const store = await MemoryStore.open({ store: url, durability: 'none' });
    let text = '';
    for (let i = 0; i < 600; i++) {
      text = `${i} `.padEnd(2000, 'abcdefgh') + '\n';
      await store.create(`/memories/m${i}.md`, text);
    }
    const maps = fs.readFileSync('/proc/self/maps', 'utf8');
    assert.match(maps, /libcrypto\.so/, `${kind}: libcrypto was not loaded`);
    const [last] = await store.log({ limit: 1 });
    const want = crypto.createHash('sha256').update(text).digest('hex');
    assert.equal(last.contentSha256, want, kind);
    assert.deepEqual(await store.versionContent(last.id), Buffer.from(text), kind);
    await store.strReplace('/memories/m599.md', '599 ', 'ABCDEFGH ');
    const edited = text.replace('599 ', 'ABCDEFGH ');
    const [now] = await store.log({ limit: 1 });
    assert.equal(now.contentSha256, crypto.createHash('sha256').update(edited).digest('hex'), kind);
    await store.close();
    // Another process, which hashes with libsodium, reads what this one recorded.
    const got = cliCall(url, { command: 'view', path: '/memories/m599.md', view_range: [1, 1] });
    assert.equal(got.status, 0, got.stderr);
    assert.match(got.stdout, /ABCDEFGH/);
  }
});

test('search: ranked hits with their lines and snippet, on each store', async (t) => {
  for (const [kind, url] of stores(t)) {
    const store = await MemoryStore.open({ store: url });
    await store.create('/memories/ops/deploy.md', 'The deploy script\nruns nightly; deploy again\n');
    await store.create('/memories/notes.md', 'Кафе\n');
    const hits = await store.search('DEPLOY');
    assert.equal(hits.length, 1, kind);
    assert.ok(hits[0].score > 0, kind);
    delete hits[0].score;
    assert.deepEqual(hits[0], {
      path: '/memories/ops/deploy.md', lines: [1, 2], moreLines: false, matches: 2,
      snippet: { line: 1, before: 'The ', match: 'deploy', after: ' script' },
    }, kind);
    assert.deepEqual((await store.search('кафе', { path: '/memories', limit: 5 })).map((h) => h.path),
      ['/memories/notes.md'], kind);
    assert.deepEqual(await store.search('absent'), [], kind);
    await assert.rejects(store.search('"open'), { code: 'MT_EINVAL', message: /not closed/ });
    await assert.rejects(store.search(42), TypeError);
    await assert.rejects(store.search('x', { limit: 0 }), RangeError);
    await store.close();
  }
});

test('toolResult answers a tool_use block as memtool call does', async (t) => {
  const [[, url]] = stores(t);
  const store = await MemoryStore.open({ store: url, actor: 'cli' });
  t.after(() => store.close());
  const block = { type: 'tool_use', id: 'toolu_9', name: 'memory', input: { command: 'view', path: '/etc' } };
  const got = await store.toolResult(block);
  assert.deepEqual(got, {
    type: 'tool_result',
    tool_use_id: 'toolu_9',
    content: 'Error: Path must start with /memories, got: /etc',
    is_error: true,
  });
  assert.equal(JSON.stringify(got), cliCall(url, block).stdout);
});

test('the tool is what betaMemoryTool returns, and its errors reach the runner exactly', async (t) => {
  const dir = scratch(t);
  const sdk = requirePkg('@anthropic-ai/sdk/helpers/beta/memory');
  const { ToolError } = requirePkg('@anthropic-ai/sdk/resources/beta/messages');
  const { runRunnableTool } = requirePkg('@anthropic-ai/sdk/lib/tools/BetaRunnableTool');
  const cjs = requirePkg(path.join(PKG, 'lib', 'index.cjs'));
  const tool = cjs.memtoolMemoryTool({ store: `file:${dir}` }, { cache_control: { type: 'ephemeral' } });
  t.after(() => tool.close());
  const theirs = sdk.betaMemoryTool({}, { cache_control: { type: 'ephemeral' } });
  // The same definition goes to the API, and the same keys are there to run it.
  assert.equal(JSON.stringify(tool), JSON.stringify(theirs));
  assert.deepEqual(Object.keys(tool).filter((k) => k !== 'close'), Object.keys(theirs));
  assert.equal(typeof tool.parse, 'function');

  const ctx = { toolUse: { id: 'toolu_1', name: 'memory', input: {} } };
  assert.deepEqual(await runRunnableTool(tool, { command: 'create', path: '/memories/a.md', file_text: 'hi\n' }, ctx), {
    content: 'File created successfully at: /memories/a.md',
    isError: false,
  });
  // An error text without "Error: " stays as memtool wrote it.
  for (const [input, text] of [
    [{ command: 'view', path: '/memories/../etc/passwd' }, 'Error: Path /memories/../etc/passwd would escape /memories directory'],
    [{ command: 'str_replace', path: '/memories/a.md', old_str: 'zz', new_str: 'y' },
      'No replacement was performed, old_str `zz` did not appear verbatim in /memories/a.md.'],
    [{ command: 'view', path: '/memories/none' }, 'The path /memories/none does not exist. Please provide a valid path.'],
    ['view', 'Error: The tool input must be a JSON object, not a string'],
  ]) {
    assert.deepEqual(await runRunnableTool(tool, input, ctx), { content: text, isError: true });
    await assert.rejects(tool.run(input), (e) => e instanceof ToolError && e.content === text);
  }
  // The ES module entry throws the ES module build's ToolError.
  const esm = memtoolMemoryTool({ store: `file:${dir}` });
  t.after(() => esm.close());
  const { ToolError: EsmToolError } = await import('file://' + requirePkg.resolve('@anthropic-ai/sdk/resources/beta/messages').replace(/\.js$/, '.mjs'));
  await assert.rejects(esm.run({ command: 'view', path: '/nope' }), (e) => e instanceof EsmToolError);
  // A tool on a store that cannot be opened says why, as a tool error.
  const bad = memtoolMemoryTool({ store: 'sqlite:/nonexistent-dir/x/y.db' });
  await assert.rejects(bad.run({ command: 'view', path: '/memories' }), /memtool: /);
});

test('bad arguments throw clear exceptions', async (t) => {
  const dir = scratch(t);
  await assert.rejects(MemoryStore.open(), { name: 'TypeError', message: /options object/ });
  await assert.rejects(MemoryStore.open({}), { name: 'TypeError', message: /options\.store must name the store/ });
  await assert.rejects(MemoryStore.open({ store: 42 }), { name: 'TypeError', message: /got number/ });
  await assert.rejects(MemoryStore.open({ store: `file:${dir}`, maxFiles: 'ten' }), {
    name: 'TypeError',
    message: /options\.maxFiles must be a number/,
  });
  await assert.rejects(MemoryStore.open({ store: `file:${dir}`, maxFiles: -1 }), { name: 'RangeError' });
  await assert.rejects(MemoryStore.open({ store: `file:${dir}`, viewLimt: 3 }), { message: /unknown option 'viewLimt'/ });
  await assert.rejects(MemoryStore.open({ store: `file:${dir}`, durability: 'sometimes' }), { name: 'RangeError' });
  await assert.rejects(MemoryStore.open({ store: `file:${dir}`, tenant: 'a\0b' }), { name: 'TypeError', message: /NUL/ });
  await assert.rejects(MemoryStore.open({ store: 'gopher://x' }), { code: 'MT_EINVAL', message: /^memtool: / });
  assert.throws(() => memtoolMemoryTool(), { name: 'TypeError' });
  assert.throws(() => memtoolMemoryTool({ store: '' }), { name: 'TypeError' });
  assert.throws(() => memtoolMemoryTool({ store: `file:${dir}` }, 'x'), { name: 'TypeError' });
  assert.throws(() => new MemoryStore({}), { name: 'TypeError', message: /MemoryStore\.open/ });

  const store = await MemoryStore.open({ store: `file:${dir}` });
  await assert.rejects(store.call(5), { name: 'TypeError' });
  await assert.rejects(store.call(null), { name: 'TypeError' });
  await assert.rejects(store.call([1]), { name: 'TypeError' });
  await assert.rejects(store.create('/memories/a.md', 7), { name: 'TypeError', message: /fileText must be a string/ });
  await assert.rejects(store.insert('/memories/a.md', '1', 'x'), { name: 'TypeError', message: /insertLine/ });
  await assert.rejects(store.log(5), { name: 'TypeError' });
  await assert.rejects(store.log({ operation: 'eaten' }), { name: 'RangeError' });
  await assert.rejects(store.log({ limit: 'all' }), { name: 'TypeError' });
  await assert.rejects(store.versionContent(-1), { name: 'TypeError' });
  await assert.rejects(store.restore(1.5), { name: 'TypeError' });
  // Bad JSON is a tool error, as in memtool serve.
  const r = await store.call('{"command": ');
  assert.equal(r.isError, true);
  assert.match(r.content, /^Error: /);

  // The addon itself refuses what it is not given, whatever the JavaScript layer does.
  const native = requirePkg(path.join(PKG, 'build', 'Release', 'memtool.node'));
  assert.throws(() => new native.Handle(), { name: 'TypeError', message: /come from open/ });
  assert.throws(() => native.Handle.prototype.call.call({}, '{}'), { name: 'TypeError', message: /Illegal invocation|not a memtool handle/ });
  assert.throws(() => native.open(), { name: 'TypeError' });
  assert.throws(() => native.open(`file:${dir}`, 'opts'), { name: 'TypeError' });
  assert.throws(() => native.open(`file:${dir}`, { maxFiles: 2 ** 60 }), { name: 'RangeError' });
  const h = await native.open(`file:${dir}`, {});
  assert.throws(() => h.call(42), { name: 'TypeError' });
  assert.throws(() => h.call(), { name: 'TypeError' });
  assert.throws(() => h.log('x'), { name: 'TypeError' });
  assert.throws(() => h.versionContent(NaN), { name: 'RangeError' });
  await h.close();
  assert.throws(() => h.call('{}'), { code: 'ERR_MEMTOOL_CLOSED' });

  // A closed store: clear errors, and close() twice is fine.
  const pending = store.create('/memories/last.md', 'x');
  const closing = store.close();
  assert.equal(store.closed, true);
  await assert.rejects(store.view('/memories'), { code: 'ERR_MEMTOOL_CLOSED', message: /closed/ });
  assert.equal(await pending, 'File created successfully at: /memories/last.md');
  await closing;
  await store.close();
  await assert.rejects(store.log(), { code: 'ERR_MEMTOOL_CLOSED' });
});

test('a call waiting for the store lock leaves the event loop running', async (t) => {
  const dir = scratch(t);
  const store = await MemoryStore.open({ store: `file:${dir}`, lockTimeoutMs: 10_000 });
  t.after(() => store.close());
  await store.create('/memories/a.md', 'x\n');
  // Another process holds the store's lock for a second.
  const holder = spawn(process.env.PYTHON3 || 'python3', ['-c', `
import fcntl, sys, time
f = open(sys.argv[1], 'r+')
fcntl.flock(f, fcntl.LOCK_EX)
print('locked', flush=True)
time.sleep(1.0)
`, path.join(dir, '.memtool', 'state')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(holder, 'exit');
  await once(holder.stdout, 'data');
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const started = Date.now();
  const result = await store.insert('/memories/a.md', 1, 'y');
  clearInterval(timer);
  const waited = Date.now() - started;
  await exited;
  assert.match(result, /has been edited/);
  assert.ok(waited >= 700, `the insert waited ${waited} ms for the lock`);
  assert.ok(ticks >= 20, `${ticks} timer ticks while the call waited ${waited} ms`);
});
