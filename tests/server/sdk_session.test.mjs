// A session through every endpoint of the memory-store API, made by the
// official TypeScript SDK against memtool server (no hand-made HTTP).
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, memtool } from './lib.mjs';

const sha = (s) => createHash('sha256').update(s, 'utf8').digest('hex');

test('the SDK runs a whole session against memtool server', async () => {
  const srv = await startServer();
  let requests = 0;
  const counting = (url, init) => {
    requests++;
    return fetch(url, init);
  };
  const client = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, fetch: counting });
  const ms = client.beta.memoryStores;
  try {
    const store = await ms.create({ name: 'Team notes', description: 'shared', metadata: { owner: 'qa' } });
    assert.match(store.id, /^memstore_[0-9a-f]{16}$/);
    assert.equal(store.type, 'memory_store');
    assert.equal(store.archived_at, null);
    assert.deepEqual(store.metadata, { owner: 'qa' });
    const S = store.id;

    const got = await ms.retrieve(S);
    assert.equal(got.name, 'Team notes');
    const upd = await ms.update(S, { name: 'Team', metadata: { owner: null, team: 'x' } });
    assert.equal(upd.name, 'Team');
    assert.deepEqual(upd.metadata, { team: 'x' });
    const listed = [];
    for await (const s of ms.list()) listed.push(s.id);
    assert.ok(listed.includes(S));

    // Memories: create, retrieve, list, update with preconditions.
    const m = await ms.memories.create(S, { path: '/notes/todo.md', content: '# TODO\n- a\n' });
    assert.match(m.id, /^mem_[0-9a-f]{16}$/);
    assert.equal(m.content, null); // basic is the default on create
    assert.equal(m.content_sha256, sha('# TODO\n- a\n'));
    assert.equal(m.content_size_bytes, 11);
    const full = await ms.memories.retrieve(m.id, { memory_store_id: S });
    assert.equal(full.content, '# TODO\n- a\n'); // full is the default on retrieve

    requests = 0;
    await assert.rejects(
      ms.memories.update(m.id, {
        memory_store_id: S,
        content: 'stale\n',
        precondition: { type: 'content_sha256', content_sha256: sha('other') },
      }),
      (e) => e.status === 409 && e.error?.error?.type === 'memory_precondition_failed_error',
    );
    assert.equal(requests, 1, 'a 409 carries x-should-retry: false, so the SDK sends it once');
    const fresh = await ms.memories.update(m.id, {
      memory_store_id: S,
      content: '# TODO\n- a\n- b\n',
      precondition: { type: 'content_sha256', content_sha256: full.content_sha256 },
    });
    assert.equal(fresh.content_sha256, sha('# TODO\n- a\n- b\n'));
    // The same request again: the memory already holds it, so it succeeds, with no new version.
    const again = await ms.memories.update(m.id, {
      memory_store_id: S,
      content: '# TODO\n- a\n- b\n',
      precondition: { type: 'content_sha256', content_sha256: full.content_sha256 },
    });
    assert.equal(again.memory_version_id, fresh.memory_version_id);

    // A rename keeps the id.
    const moved = await ms.memories.update(m.id, { memory_store_id: S, path: '/archive/todo.md' });
    assert.equal(moved.id, m.id);
    assert.equal(moved.path, '/archive/todo.md');

    // Path conflicts: a memory may not be another's directory.
    await assert.rejects(ms.memories.create(S, { path: '/archive', content: 'x' }), (e) => {
      assert.equal(e.status, 409);
      assert.equal(e.error.error.type, 'memory_path_conflict_error');
      assert.equal(e.error.error.conflicting_memory_id, m.id);
      assert.equal(e.error.error.conflicting_path, '/archive/todo.md');
      return true;
    });

    // The memory tool sees the same memory, and its change shows in the API.
    const view = memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'],
      JSON.stringify({ command: 'str_replace', path: '/memories/archive/todo.md', old_str: '- b', new_str: '- c' }));
    assert.match(view, /has been edited/);
    const viaTool = await ms.memories.retrieve(m.id, { memory_store_id: S });
    assert.equal(viaTool.content, '# TODO\n- a\n- c\n');

    // Versions: every change one version, newest first; filters; retrieve; redact.
    const versions = [];
    for await (const v of ms.memoryVersions.list(S, { memory_id: m.id })) versions.push(v);
    assert.deepEqual(versions.map((v) => v.operation), ['modified', 'modified', 'modified', 'created']);
    assert.deepEqual(versions[0].created_by, { type: 'user_actor', user_id: 'cli' });
    assert.equal(versions[1].created_by.type, 'api_actor');
    const created = [];
    for await (const v of ms.memoryVersions.list(S, { operation: 'created' })) created.push(v.id);
    assert.deepEqual(created, [versions[3].id]);
    const v1 = await ms.memoryVersions.retrieve(versions[3].id, { memory_store_id: S });
    assert.equal(v1.content, '# TODO\n- a\n');
    const red = await ms.memoryVersions.redact(versions[3].id, { memory_store_id: S });
    assert.equal(red.content, null);
    assert.equal(red.path, null);
    assert.equal(red.content_sha256, null);
    assert.equal(red.content_size_bytes, null);
    assert.ok(red.redacted_at);
    assert.equal(red.redacted_by.type, 'api_actor');

    // Delete with expected_content_sha256: stale refused, fresh done; versions outlive it.
    await assert.rejects(
      ms.memories.delete(m.id, { memory_store_id: S, expected_content_sha256: sha('nope') }),
      (e) => e.status === 409,
    );
    const del = await ms.memories.delete(m.id, { memory_store_id: S, expected_content_sha256: sha('# TODO\n- a\n- c\n') });
    assert.deepEqual(del, { id: m.id, type: 'memory_deleted' });
    await assert.rejects(ms.memories.retrieve(m.id, { memory_store_id: S }), (e) => e.status === 404);
    const after = [];
    for await (const v of ms.memoryVersions.list(S, { memory_id: m.id })) after.push(v.operation);
    assert.equal(after[0], 'deleted');

    // Paging: 1,000 memories, depth 0 and 1.
    const N = 1000;
    for (let i = 0; i < N; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          ms.memories.create(S, { path: `/bulk/d${(i + j) % 10}/m${String(i + j).padStart(4, '0')}.md`, content: `n ${i + j}\n` }),
        ),
      );
    }
    const all = [];
    for await (const x of ms.memories.list(S, { path_prefix: '/bulk/', limit: 100 })) all.push(x.path);
    assert.equal(all.length, N);
    assert.equal(new Set(all).size, N);
    assert.deepEqual(all, [...all].sort());
    const top = [];
    for await (const x of ms.memories.list(S, { path_prefix: '/bulk/', depth: 1 })) top.push(x);
    assert.equal(top.length, 10);
    assert.ok(top.every((x) => x.type === 'memory_prefix' && /^\/bulk\/d\d\/$/.test(x.path)));
    const page = await ms.memories.list(S, { path_prefix: '/bulk/d3/', view: 'full', limit: 50 });
    assert.equal(page.data.length, 20, 'view=full caps a page at 20');
    assert.match(page.data[0].content, /^n \d+\n$/);

    // Another tenant's key sees nothing of it: 404, never 403.
    const bob = new Anthropic({ apiKey: srv.keys.b, baseURL: srv.baseURL, maxRetries: 0 });
    await assert.rejects(bob.beta.memoryStores.retrieve(S), (e) => e.status === 404);
    await assert.rejects(bob.beta.memoryStores.memories.list(S), (e) => e.status === 404);
    // A read-only key reads and may not write.
    const ro = new Anthropic({ apiKey: srv.keys.aro, baseURL: srv.baseURL, maxRetries: 0 });
    assert.equal((await ro.beta.memoryStores.retrieve(S)).id, S);
    await assert.rejects(ro.beta.memoryStores.memories.create(S, { path: '/x.md', content: 'x' }), (e) => e.status === 403);
    // A bad key: 401.
    const bad = new Anthropic({ apiKey: 'mtk_' + 'x'.repeat(43), baseURL: srv.baseURL, maxRetries: 0 });
    await assert.rejects(bad.beta.memoryStores.list().then((p) => p), (e) => e.status === 401);

    // Archive: writes refused (409 conflict_error), reads work; then delete the store.
    const arch = await ms.archive(S);
    assert.ok(arch.archived_at);
    await assert.rejects(ms.memories.create(S, { path: '/late.md', content: 'x' }), (e) =>
      e.status === 409 && e.error.error.type === 'conflict_error');
    const stillListed = await ms.memories.list(S, { limit: 1 });
    assert.equal(stillListed.data.length, 1);
    const gone = await ms.delete(S);
    assert.deepEqual(gone, { id: S, type: 'memory_store_deleted' });
    await assert.rejects(ms.retrieve(S), (e) => e.status === 404);
  } finally {
    await srv.stop();
  }
});

test('a directory exists while a memory lies beneath it', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'dirs' })).id;
    const a = await ms.memories.create(S, { path: '/notes/deep/a.md', content: 'a' });
    // Moved away: /notes is free for a memory of its own.
    await ms.memories.update(a.id, { memory_store_id: S, path: '/moved.md' });
    const n = await ms.memories.create(S, { path: '/notes', content: 'now a file' });
    assert.equal(n.path, '/notes');
    // Deleted: the same.
    const b = await ms.memories.create(S, { path: '/d/e/b.md', content: 'b' });
    await ms.memories.delete(b.id, { memory_store_id: S });
    assert.equal((await ms.memories.create(S, { path: '/d', content: 'd' })).path, '/d');
    // A directory the memory tool left empty is no obstacle either.
    memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'],
      JSON.stringify({ command: 'create', path: '/memories/t/x.md', file_text: 'x' }));
    memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'],
      JSON.stringify({ command: 'rename', old_path: '/memories/t/x.md', new_path: '/memories/y.md' }));
    assert.equal((await ms.memories.create(S, { path: '/t', content: 't' })).path, '/t');
    // But a memory beneath it is: the path conflicts.
    await assert.rejects(ms.memories.create(S, { path: '/moved.md/x', content: 'x' }), (e) => e.status === 409);
    const top = [];
    for await (const x of ms.memories.list(S, { depth: 1 })) top.push(x.path);
    assert.deepEqual(top, ['/d', '/moved.md', '/notes', '/t', '/y.md']);
  } finally {
    await srv.stop();
  }
});

// "Every change adds exactly one version" and "modified covers a content
// change, a path change, or both": one update that renames and rewrites is
// one version, holding the new path and the new content together.
test('an update that renames and rewrites adds exactly one version', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'one version' })).id;
    const m = await ms.memories.create(S, { path: '/old.md', content: 'old\n' });
    const u = await ms.memories.update(m.id, { memory_store_id: S, path: '/new.md', content: 'new\n' });
    assert.equal(u.path, '/new.md');
    assert.equal(u.content_sha256, sha('new\n'));
    const vs = (await ms.memoryVersions.list(S, { memory_id: m.id, view: 'full' })).data;
    assert.deepEqual(
      vs.map((v) => [v.operation, v.path, v.content]),
      [['modified', '/new.md', 'new\n'], ['created', '/old.md', 'old\n']],
    );
    assert.equal(u.memory_version_id, vs[0].id);
  } finally {
    await srv.stop();
  }
});
