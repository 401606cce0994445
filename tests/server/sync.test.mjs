// The SDK's own SessionMemoryStores keeps a local folder and a memory store
// of memtool server in sync: local files reach the store, changes made
// through the API reach the folder, and so do those made by the memory
// tool (memtool --memory-store ... call), which the API then serves too.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, unlinkSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { SessionMemoryStores } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { startServer, memtool, accessLog, scratchDir } from './lib.mjs';

test('SessionMemoryStores syncs a folder with memtool server', { timeout: 120000 }, async () => {
  const srv = await startServer();
  const client = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL });
  const ms = client.beta.memoryStores;
  // The tool's answer, an error included (call exits 1 on a tool error).
  const tool = (input) => {
    try {
      return memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'], JSON.stringify(input));
    } catch (e) {
      if (e.status !== 1) throw e;
      return e.stdout;
    }
  };
  const remote = async (path) => {
    for await (const m of ms.memories.list(S, { view: 'full', limit: 20 })) if (m.path === path) return m.content;
    return undefined;
  };
  const S = (await ms.create({ name: 'sync' })).id;
  await ms.memories.create(S, { path: '/a.md', content: 'A1\n' });
  const b = await ms.memories.create(S, { path: '/dir/b.md', content: 'B1\n' });
  const work = scratchDir('memtool-sync-');
  const root = join(work, 'mnt', 'sync');
  const stores = new SessionMemoryStores(client, { workdir: work });
  try {
    await stores.download({
      resources: [{ type: 'memory_store', memory_store_id: S, access: 'read_write', name: 'sync', description: '', mount_path: root }],
    });
    assert.equal(readFileSync(join(root, 'a.md'), 'utf8'), 'A1\n');
    assert.equal(readFileSync(join(root, 'dir/b.md'), 'utf8'), 'B1\n');

    // Local edits and a new file; a change through the API; one by the memory tool.
    writeFileSync(join(root, 'a.md'), 'A2 local\n');
    writeFileSync(join(root, 'new.md'), 'N1 local\n');
    await ms.memories.update(b.id, { memory_store_id: S, content: 'B2 remote\n' });
    assert.match(tool({ command: 'create', path: '/memories/tool.md', file_text: 'T1 tool\n' }), /created/);
    await stores.syncAll(false);
    assert.equal(await remote('/a.md'), 'A2 local\n');
    assert.equal(await remote('/new.md'), 'N1 local\n');
    assert.equal(readFileSync(join(root, 'dir/b.md'), 'utf8'), 'B2 remote\n');
    assert.equal(readFileSync(join(root, 'tool.md'), 'utf8'), 'T1 tool\n');
    // What the folder pushed, the memory tool reads.
    assert.match(tool({ command: 'view', path: '/memories/new.md' }), /N1 local/);

    // The memory tool edits a file the folder made: both sides see it.
    assert.match(tool({ command: 'str_replace', path: '/memories/new.md', old_str: 'N1', new_str: 'N2' }), /edited/);
    assert.equal(await remote('/new.md'), 'N2 local\n');
    await stores.syncAll(false);
    assert.equal(readFileSync(join(root, 'new.md'), 'utf8'), 'N2 local\n');

    // A file deleted in the folder is deleted in the store at the last sync.
    unlinkSync(join(root, 'a.md'));
    await stores.finish();
    assert.equal(await remote('/a.md'), undefined);
    assert.match(tool({ command: 'view', path: '/memories/a.md' }), /does not exist/);
  } finally {
    await stores.dispose();
    await srv.stop();
  }
  assert.equal(existsSync(root), false, 'dispose removes the folder it made');
});

// The worker's way: a client that authenticates with a bearer token, a store
// mounted with no mount_path ({workdir}/memory/{name}), and its teardown:
// finish, flushWrites, dispose. Also the marker never uploaded, a file over
// the content limit refused (and nothing else held up), a read-only store
// that only pulls, and the memory tool's renames and deletes reaching the folder.
test('SessionMemoryStores as the worker drives it', { timeout: 120000 }, async () => {
  const srv = await startServer();
  let requests = [];
  const counting = (url, init) => {
    requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
    return fetch(url, init);
  };
  const client = new Anthropic({ apiKey: null, authToken: srv.keys.a, baseURL: srv.baseURL, fetch: counting, timeout: 30000 });
  const ms = client.beta.memoryStores;
  const S = (await ms.create({ name: 'Work Notes' })).id;
  const R = (await ms.create({ name: 'reference' })).id;
  const tool = (store, input) => {
    try {
      return memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', store, 'call'], JSON.stringify(input));
    } catch (e) {
      if (e.status !== 1) throw e;
      return e.stdout;
    }
  };
  const remote = async (store) => {
    const all = new Map();
    for await (const m of ms.memories.list(store, { view: 'full', limit: 20 })) all.set(m.path, m.content);
    return all;
  };
  await ms.memories.create(S, { path: '/keep.md', content: 'K1\n' });
  await ms.memories.create(S, { path: '/old/name.md', content: 'O1\n' });
  await ms.memories.create(S, { path: '/gone.md', content: 'G1\n' });
  await ms.memories.create(R, { path: '/ref.md', content: 'R1\n' });
  const work = scratchDir('memtool-sync-');
  const stores = new SessionMemoryStores(client, { workdir: work });
  const rw = join(work, 'memory', 'Work Notes');
  const ro = join(work, 'memory', 'reference');
  try {
    await stores.download({
      resources: [
        { type: 'memory_store', memory_store_id: S, access: 'read_write', name: 'Work Notes', description: '' },
        { type: 'memory_store', memory_store_id: R, access: 'read_only', name: 'reference', description: '' },
      ],
    });
    assert.equal(readFileSync(join(rw, 'keep.md'), 'utf8'), 'K1\n');
    assert.equal(readFileSync(join(rw, 'old/name.md'), 'utf8'), 'O1\n');
    assert.equal(readFileSync(join(ro, 'ref.md'), 'utf8'), 'R1\n');

    // Local: a nested new file, an edit, and one file over 102,400 bytes. Remote (the memory
    // tool): a rename and a delete. The read-only store: edited on both sides.
    mkdirSync(join(rw, 'deep/er'), { recursive: true });
    writeFileSync(join(rw, 'deep/er/x.md'), 'X1 local\n');
    writeFileSync(join(rw, 'keep.md'), 'K2 local\n');
    writeFileSync(join(rw, 'huge.md'), 'h'.repeat(102401));
    assert.match(tool(S, { command: 'rename', old_path: '/memories/old/name.md', new_path: '/memories/new/name.md' }), /renamed|moved|success/i);
    assert.match(tool(S, { command: 'delete', path: '/memories/gone.md' }), /deleted/i);
    writeFileSync(join(ro, 'ref.md'), 'R2 local, never pushed\n');
    writeFileSync(join(ro, 'mine.md'), 'local only\n');
    await ms.memories.create(R, { path: '/ref2.md', content: 'R2 remote\n' });
    const before = accessLog(srv).length;
    await stores.syncAll(false);

    const r = await remote(S);
    assert.equal(r.get('/deep/er/x.md'), 'X1 local\n');
    assert.equal(r.get('/keep.md'), 'K2 local\n');
    assert.equal(r.has('/huge.md'), false, 'over the content limit: refused');
    assert.equal(r.has('/.anthropic-memory-store'), false, 'the marker is never uploaded');
    assert.equal(existsSync(join(rw, 'old/name.md')), false, 'the rename reached the folder');
    assert.equal(readFileSync(join(rw, 'new/name.md'), 'utf8'), 'O1\n');
    assert.equal(existsSync(join(rw, 'gone.md')), false, 'the delete reached the folder');
    const huge = accessLog(srv).slice(before).filter((l) => l.method === 'POST' && /\/memories$/.test(l.path) && l.status !== 200);
    assert.equal(huge.length, 1, 'one create refused: ' + JSON.stringify(huge));
    assert.ok([400, 413].includes(huge[0].status), `the oversize file: 400 or 413, not ${huge[0].status}`);
    const rr = await remote(R);
    assert.deepEqual([...rr.entries()].sort(), [['/ref.md', 'R1\n'], ['/ref2.md', 'R2 remote\n']], 'read-only: nothing pushed');
    assert.equal(readFileSync(join(ro, 'ref2.md'), 'utf8'), 'R2 remote\n', 'read-only: pulled');

    // flushWrites uploads what changed, and sends nothing when nothing did.
    writeFileSync(join(rw, 'flushed.md'), 'F1\n');
    await stores.flushWrites();
    assert.equal((await remote(S)).get('/flushed.md'), 'F1\n');
    requests = [];
    await stores.flushWrites();
    assert.deepEqual(requests, [], 'nothing dirty: no request');

    // The last sync (no 30 s wait for deletes), the flush after it, and the folder removed.
    unlinkSync(join(rw, 'deep/er/x.md'));
    await stores.finish();
    await stores.flushWrites();
    const last = await remote(S);
    assert.equal(last.has('/deep/er/x.md'), false);
    assert.deepEqual([...last.keys()].sort(), ['/flushed.md', '/keep.md', '/new/name.md']);
    assert.match(tool(S, { command: 'view', path: '/memories/deep/er/x.md' }), /does not exist/);
    assert.equal(accessLog(srv).filter((l) => l.status >= 500).length, 0, 'no 5xx');
  } finally {
    await stores.dispose();
    await srv.stop();
  }
  assert.equal(existsSync(rw), false, 'dispose removes the folders it made');
  assert.equal(existsSync(ro), false);
});

// Rounds of changes on every side at once (local files, the API, the memory
// tool), each followed by a sync: after the last sync, with nothing changing,
// the folder and the store hold exactly the same files, byte for byte.
test('a folder and a store converge after changes on every side', { timeout: 120000 }, async () => {
  const srv = await startServer();
  const client = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, timeout: 30000 });
  const ms = client.beta.memoryStores;
  const S = (await ms.create({ name: 'converge' })).id;
  const tool = (input) => {
    try {
      return memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'], JSON.stringify(input));
    } catch (e) {
      if (e.status !== 1) throw e;
      return e.stdout;
    }
  };
  let seed = 42;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  const names = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? `d${i % 4}/f${i}.md` : `f${i}.md`));
  for (const n of names.slice(0, 6)) await ms.memories.create(S, { path: '/' + n, content: `start ${n}\n` });
  const work = scratchDir('memtool-sync-');
  const root = join(work, 'mnt');
  const stores = new SessionMemoryStores(client, { workdir: work });
  const localFiles = () => {
    const out = new Map();
    const walk = (dir, rel) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name === '.anthropic-memory-store') continue;
        if (e.isDirectory()) walk(join(dir, e.name), rel + e.name + '/');
        else out.set('/' + rel + e.name, readFileSync(join(dir, e.name), 'utf8'));
      }
    };
    walk(root, '');
    return out;
  };
  const remoteFiles = async () => {
    const out = new Map();
    for await (const m of ms.memories.list(S, { view: 'full', limit: 20 })) out.set(m.path, m.content);
    return out;
  };
  try {
    await stores.download({
      resources: [{ type: 'memory_store', memory_store_id: S, access: 'read_write', name: 'c', description: '', mount_path: root }],
    });
    for (let round = 0; round < 6; round++) {
      const local = localFiles();
      const remote = await remoteFiles();
      const touched = new Set();
      const pick = () => {
        for (;;) {
          const n = names[rand(names.length)];
          if (!touched.has(n)) {
            touched.add(n);
            return n;
          }
        }
      };
      // Each file changes on one side at most in a round (a conflict is remote-wins, tested elsewhere).
      for (let k = 0; k < 2; k++) {
        const n = pick();
        mkdirSync(dirname(join(root, n)), { recursive: true });
        writeFileSync(join(root, n), `local r${round} ${n}\n`);
      }
      for (let k = 0; k < 2; k++) {
        const n = pick();
        const m = [...(await ms.memories.list(S, { limit: 100 })).data].find((x) => x.path === '/' + n);
        if (m) await ms.memories.update(m.id, { memory_store_id: S, content: `api r${round} ${n}\n` });
        else await ms.memories.create(S, { path: '/' + n, content: `api r${round} ${n}\n` });
      }
      {
        const n = pick();
        if (remote.has('/' + n) && local.has('/' + n) && rand(2) === 0) tool({ command: 'delete', path: '/memories/' + n });
        else tool({ command: 'create', path: '/memories/' + n, file_text: `tool r${round} ${n}\n` });
      }
      await stores.syncAll(false);
    }
    await stores.finish();
    const local = localFiles();
    const remote = await remoteFiles();
    assert.deepEqual([...local.entries()].sort(), [...remote.entries()].sort(), 'the folder and the store agree');
    assert.ok(remote.size >= 6);
    assert.equal(accessLog(srv).filter((l) => l.status >= 500).length, 0, 'no 5xx');
  } finally {
    await stores.dispose();
    await srv.stop();
  }
});
