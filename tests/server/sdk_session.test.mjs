// A session through every endpoint of the memory-store API, made by the
// official TypeScript SDK against memtool server (no hand-made HTTP).
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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

// What the SDK's types and doc comments promise, case by case: the error
// classes and bodies, one request per 409, views and their page caps,
// versions, archived stores, and what each kind of key may do.
test('the SDK sees the documented errors, views, versions and key rules', async () => {
  const srv = await startServer();
  let requests = 0;
  const counting = (url, init) => {
    requests++;
    return fetch(url, init);
  };
  const client = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, fetch: counting, timeout: 30000 });
  const ms = client.beta.memoryStores;
  // One SDK call that must fail: its error, after exactly one request.
  const once = async (call, cls, status, type) => {
    requests = 0;
    let err;
    try {
      await call();
    } catch (e) {
      err = e;
    }
    assert.ok(err, `expected ${status} ${type}, the call succeeded`);
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err.constructor.name} ${err.status} ${err.message}`);
    assert.equal(err.status, status);
    assert.equal(err.error?.type, 'error', 'the body is {"type":"error",...}');
    assert.equal(err.error?.error?.type, type);
    assert.equal(typeof err.error.error.message, 'string');
    assert.match(err.error.request_id, /^req_/);
    assert.equal(err.requestID, err.error.request_id, 'request-id header and body agree');
    assert.equal(requests, 1, `${status} ${type} was sent ${requests} times`);
    return err;
  };
  try {
    const S = (await ms.create({ name: 'rules' })).id;

    // Create: an empty memory is allowed; the same path again is a path conflict.
    const empty = await ms.memories.create(S, { path: '/empty.md', content: '' });
    assert.equal(empty.content_sha256, sha(''));
    assert.equal(empty.content_size_bytes, 0);
    const dup = await once(() => ms.memories.create(S, { path: '/empty.md', content: 'x' }),
      Anthropic.ConflictError, 409, 'memory_path_conflict_error');
    assert.equal(dup.error.error.conflicting_memory_id, empty.id);
    assert.equal(dup.error.error.conflicting_path, '/empty.md');
    assert.equal(dup.headers.get('x-should-retry'), 'false');
    // /notes vs /notes/a.md, both ways.
    const na = await ms.memories.create(S, { path: '/notes/a.md', content: 'A\n' });
    const up = await once(() => ms.memories.create(S, { path: '/notes', content: 'x' }),
      Anthropic.ConflictError, 409, 'memory_path_conflict_error');
    assert.equal(up.error.error.conflicting_memory_id, na.id);
    assert.equal(up.error.error.conflicting_path, '/notes/a.md');
    const down = await once(() => ms.memories.create(S, { path: '/empty.md/child.md', content: 'x' }),
      Anthropic.ConflictError, 409, 'memory_path_conflict_error');
    assert.equal(down.error.error.conflicting_memory_id, empty.id);
    assert.equal(down.error.error.conflicting_path, '/empty.md');
    // A rename onto a taken path is one too, and changes nothing.
    const ren = await once(() => ms.memories.update(na.id, { memory_store_id: S, path: '/empty.md' }),
      Anthropic.ConflictError, 409, 'memory_path_conflict_error');
    assert.equal(ren.error.error.conflicting_memory_id, empty.id);
    assert.equal((await ms.memories.retrieve(na.id, { memory_store_id: S })).path, '/notes/a.md');

    // Preconditions: a stale one on update and on delete is one 409 request, nothing changed.
    const stale = await once(() => ms.memories.update(na.id, {
      memory_store_id: S, content: 'B\n', precondition: { type: 'content_sha256', content_sha256: sha('B\n') },
    }), Anthropic.ConflictError, 409, 'memory_precondition_failed_error');
    assert.equal(stale.headers.get('x-should-retry'), 'false');
    await once(() => ms.memories.delete(na.id, { memory_store_id: S, expected_content_sha256: sha('B\n') }),
      Anthropic.ConflictError, 409, 'memory_precondition_failed_error');
    assert.equal((await ms.memories.retrieve(na.id, { memory_store_id: S })).content, 'A\n');
    // On a rename the precondition is the current content's.
    const moved = await ms.memories.update(na.id, {
      memory_store_id: S, path: '/notes/b.md', precondition: { type: 'content_sha256', content_sha256: sha('A\n') },
    });
    assert.equal(moved.id, na.id);
    assert.equal(moved.path, '/notes/b.md');
    assert.equal(moved.content_sha256, sha('A\n'));
    // Renamed, then rewritten (both in one update: a test of its own below).
    await ms.memories.update(na.id, { memory_store_id: S, path: '/notes/c.md' });
    const both = await ms.memories.update(na.id, { memory_store_id: S, content: 'C\n' });
    assert.equal(both.path, '/notes/c.md');
    assert.equal(both.content_sha256, sha('C\n'));
    // An update that changes nothing adds no version.
    const same = await ms.memories.update(na.id, { memory_store_id: S, content: 'C\n' });
    assert.equal(same.memory_version_id, both.memory_version_id);
    assert.equal(same.updated_at, both.updated_at);

    // Views: basic (content null, sha and size set) is the default on create, update and list; full on retrieve.
    assert.equal(both.content, null);
    const fullUpd = await ms.memories.update(na.id, { memory_store_id: S, content: 'D\n', view: 'full' });
    assert.equal(fullUpd.content, 'D\n');
    const fullCreate = await ms.memories.create(S, { path: '/f.md', content: 'F\n', view: 'full' });
    assert.equal(fullCreate.content, 'F\n');
    const basicGet = await ms.memories.retrieve(na.id, { memory_store_id: S, view: 'basic' });
    assert.equal(basicGet.content, null);
    assert.equal(basicGet.content_sha256, sha('D\n'));
    assert.equal(basicGet.content_size_bytes, 2);
    const basicList = await ms.memories.list(S);
    assert.ok(basicList.data.length >= 3);
    for (const m of basicList.data) {
      assert.equal(m.type, 'memory');
      assert.equal(m.content, null, `list is basic by default: ${m.path}`);
      assert.match(m.content_sha256, /^[0-9a-f]{64}$/);
      assert.equal(typeof m.content_size_bytes, 'number');
    }
    for (const m of (await ms.memories.list(S, { view: 'full' })).data) assert.equal(typeof m.content, 'string');
    // memory_version_id names the newest version, which holds the current content.
    const newest = (await ms.memoryVersions.list(S, { memory_id: na.id, limit: 1 })).data[0];
    assert.equal(newest.id, fullUpd.memory_version_id);
    const nv = await ms.memoryVersions.retrieve(newest.id, { memory_store_id: S });
    assert.equal(nv.content, 'D\n'); // full is the default on a version's retrieve
    assert.equal(nv.content_sha256, sha('D\n'));
    assert.equal(nv.memory_store_id, S);
    assert.equal((await ms.memoryVersions.retrieve(newest.id, { memory_store_id: S, view: 'basic' })).content, null);
    // A version list is basic by default too, newest first, and filters by the key that wrote.
    const vs = [];
    for await (const v of ms.memoryVersions.list(S, { memory_id: na.id })) vs.push(v);
    assert.deepEqual(vs.map((v) => v.operation), ['modified', 'modified', 'modified', 'modified', 'created']);
    assert.ok(vs.every((v) => v.content === null && v.memory_id === na.id && v.type === 'memory_version'));
    assert.deepEqual(vs[0].created_by, { type: 'api_actor', api_key_id: srv.keyIds.a });
    assert.deepEqual(vs.map((v) => v.path), ['/notes/c.md', '/notes/c.md', '/notes/c.md', '/notes/b.md', '/notes/a.md']);
    const byKey = [];
    for await (const v of ms.memoryVersions.list(S, { api_key_id: srv.keyIds.a })) byKey.push(v.id);
    assert.ok(byKey.length >= vs.length);
    assert.equal((await ms.memoryVersions.list(S, { api_key_id: srv.keyIds.b })).data.length, 0);
    // A deleted memory: its deleted version has no content, sha or size; the one before keeps them.
    await ms.memories.delete(empty.id, { memory_store_id: S, expected_content_sha256: sha('') });
    const ev = (await ms.memoryVersions.list(S, { memory_id: empty.id })).data;
    assert.deepEqual(ev.map((v) => v.operation), ['deleted', 'created']);
    assert.equal(ev[0].content_sha256, null);
    assert.equal(ev[0].content_size_bytes, null);
    assert.equal(ev[1].content_sha256, sha(''));
    assert.equal(ev[1].content_size_bytes, 0);
    await once(() => ms.memories.retrieve(empty.id, { memory_store_id: S }), Anthropic.NotFoundError, 404, 'not_found_error');
    await once(() => ms.memories.delete(empty.id, { memory_store_id: S }), Anthropic.NotFoundError, 404, 'not_found_error');
    await once(() => ms.memories.update(empty.id, { memory_store_id: S, content: 'x' }), Anthropic.NotFoundError, 404, 'not_found_error');
    // Redacting twice is fine; a redacted version still retrieves.
    const r1 = await ms.memoryVersions.redact(ev[1].id, { memory_store_id: S });
    assert.ok(r1.redacted_at);
    assert.equal((await ms.memoryVersions.retrieve(ev[1].id, { memory_store_id: S })).redacted_at, r1.redacted_at);

    // Paths and prefixes: whole segments only; depth 1 mixes memories and prefixes.
    await ms.memories.create(S, { path: '/notes-archive/x.md', content: 'x' });
    await ms.memories.create(S, { path: '/notes/deep/y.md', content: 'y' });
    const under = [];
    for await (const m of ms.memories.list(S, { path_prefix: '/notes/' })) under.push(m.path);
    assert.deepEqual(under.sort(), ['/notes/c.md', '/notes/deep/y.md']);
    const level = [];
    for await (const m of ms.memories.list(S, { path_prefix: '/notes/', depth: 1 })) level.push(`${m.type} ${m.path}`);
    assert.deepEqual(level.sort(), ['memory /notes/c.md', 'memory_prefix /notes/deep/']);
    const root = [];
    for await (const m of ms.memories.list(S, { depth: 1 })) root.push(`${m.type} ${m.path}`);
    assert.deepEqual(root.sort(), ['memory /f.md', 'memory_prefix /notes-archive/', 'memory_prefix /notes/']);

    // Page caps: basic at most 100 a page, full at most 20, whatever the limit asked.
    await Promise.all(Array.from({ length: 130 }, (_, i) => ms.memories.create(S, { path: `/many/m${i}.md`, content: `${i}` })));
    const big = await ms.memories.list(S, { path_prefix: '/many/', limit: 500 });
    assert.equal(big.data.length, 100, 'view=basic caps a page at 100');
    assert.ok(big.next_page, 'and says there is more');
    const bigFull = await ms.memories.list(S, { path_prefix: '/many/', limit: 500, view: 'full' });
    assert.equal(bigFull.data.length, 20, 'view=full caps a page at 20');
    const vBasic = await ms.memoryVersions.list(S, { limit: 500 });
    assert.equal(vBasic.data.length, 100, 'a version list is capped at 100 a page (basic)');
    assert.ok(vBasic.data.every((v) => v.content === null) && vBasic.next_page);
    const vFull = await ms.memoryVersions.list(S, { limit: 500, view: 'full' });
    assert.equal(vFull.data.length, 20, 'and at 20 with view=full');
    assert.ok(vFull.data.every((v) => typeof v.content === 'string' || v.operation === 'deleted' || v.redacted_at));
    const small = await ms.memories.list(S, { path_prefix: '/many/', limit: 7 });
    assert.equal(small.data.length, 7);
    let pages = 0;
    let seen = 0;
    for (let p = small; ; p = await p.getNextPage()) {
      pages++;
      seen += p.data.length;
      if (!p.hasNextPage()) break;
    }
    assert.equal(seen, 130);
    assert.equal(pages, Math.ceil(130 / 7));

    // Stores: a list leaves archived ones out unless asked; an archived store takes no writes.
    const T = (await ms.create({ name: 'to archive', description: 'd', metadata: { k: 'v' } })).id;
    const t1 = await ms.memories.create(T, { path: '/t.md', content: 'T0\n' });
    await ms.memories.update(t1.id, { memory_store_id: T, content: 'T\n' });
    const cleared = await ms.update(T, { description: '' });
    assert.equal(cleared.description, '');
    assert.deepEqual(cleared.metadata, { k: 'v' }, 'metadata keys left out keep their values');
    const arch = await ms.archive(T);
    assert.ok(arch.archived_at);
    const active = [];
    for await (const s of ms.list()) active.push(s.id);
    assert.ok(active.includes(S) && !active.includes(T), 'an archived store is left out of a list');
    const every = [];
    for await (const s of ms.list({ include_archived: true })) every.push(s.id);
    assert.ok(every.includes(S) && every.includes(T), 'include_archived lists it');
    await once(() => ms.memories.create(T, { path: '/u.md', content: 'x' }), Anthropic.ConflictError, 409, 'conflict_error');
    await once(() => ms.memories.update(t1.id, { memory_store_id: T, content: 'x' }), Anthropic.ConflictError, 409, 'conflict_error');
    await once(() => ms.update(T, { name: 'renamed' }), Anthropic.ConflictError, 409, 'conflict_error');
    // Reads, redaction, memory deletes and the store's delete still work.
    assert.equal((await ms.memories.retrieve(t1.id, { memory_store_id: T })).content, 'T\n');
    const [tcur, tv] = (await ms.memoryVersions.list(T)).data;
    assert.equal(tv.operation, 'created');
    assert.ok((await ms.memoryVersions.redact(tv.id, { memory_store_id: T })).redacted_at);
    // (docs/server.md: a memory's current version cannot be redacted, 409 conflict_error.)
    await once(() => ms.memoryVersions.redact(tcur.id, { memory_store_id: T }), Anthropic.ConflictError, 409, 'conflict_error');
    assert.deepEqual(await ms.memories.delete(t1.id, { memory_store_id: T }), { id: t1.id, type: 'memory_deleted' });
    assert.deepEqual(await ms.delete(T), { id: T, type: 'memory_store_deleted' });
    await once(() => ms.retrieve(T), Anthropic.NotFoundError, 404, 'not_found_error');
    await once(() => ms.memories.list(T), Anthropic.NotFoundError, 404, 'not_found_error');
    await once(() => ms.memoryVersions.retrieve(tv.id, { memory_store_id: T }), Anthropic.NotFoundError, 404, 'not_found_error');

    // Another tenant: every id of alice's is 404 (never 403), and bob's lists hold none of them.
    const asBob = new Anthropic({ apiKey: srv.keys.b, baseURL: srv.baseURL, fetch: counting, timeout: 30000 }).beta.memoryStores;
    const NF = [Anthropic.NotFoundError, 404, 'not_found_error'];
    await once(() => asBob.retrieve(S), ...NF);
    await once(() => asBob.update(S, { name: 'mine' }), ...NF);
    await once(() => asBob.archive(S), ...NF);
    await once(() => asBob.delete(S), ...NF);
    await once(() => asBob.memories.list(S), ...NF);
    await once(() => asBob.memories.create(S, { path: '/b.md', content: 'b' }), ...NF);
    await once(() => asBob.memories.retrieve(na.id, { memory_store_id: S }), ...NF);
    await once(() => asBob.memories.update(na.id, { memory_store_id: S, content: 'b' }), ...NF);
    await once(() => asBob.memories.delete(na.id, { memory_store_id: S }), ...NF);
    await once(() => asBob.memoryVersions.list(S), ...NF);
    await once(() => asBob.memoryVersions.retrieve(newest.id, { memory_store_id: S }), ...NF);
    await once(() => asBob.memoryVersions.redact(newest.id, { memory_store_id: S }), ...NF);
    const B = (await asBob.create({ name: 'bob' })).id;
    const bobs = [];
    for await (const s of asBob.list({ include_archived: true })) bobs.push(s.id);
    assert.deepEqual(bobs, [B]);
    // A memory id of one store is not found through another store of the same tenant.
    const S2 = (await ms.create({ name: 'second' })).id;
    await once(() => ms.memories.retrieve(na.id, { memory_store_id: S2 }), ...NF);

    // A read-only key: every read 200, every write 403 permission_error, and nothing changed.
    const asRO = new Anthropic({ apiKey: srv.keys.aro, baseURL: srv.baseURL, fetch: counting, timeout: 30000 }).beta.memoryStores;
    assert.equal((await asRO.retrieve(S)).id, S);
    assert.ok((await asRO.list()).data.some((s) => s.id === S));
    assert.equal((await asRO.memories.retrieve(na.id, { memory_store_id: S })).content, 'D\n');
    assert.ok((await asRO.memories.list(S)).data.length > 0);
    assert.ok((await asRO.memoryVersions.list(S)).data.length > 0);
    assert.equal((await asRO.memoryVersions.retrieve(newest.id, { memory_store_id: S })).id, newest.id);
    const PD = [Anthropic.PermissionDeniedError, 403, 'permission_error'];
    await once(() => asRO.create({ name: 'ro' }), ...PD);
    await once(() => asRO.update(S, { name: 'ro' }), ...PD);
    await once(() => asRO.archive(S), ...PD);
    await once(() => asRO.delete(S), ...PD);
    await once(() => asRO.memories.create(S, { path: '/ro.md', content: 'x' }), ...PD);
    await once(() => asRO.memories.update(na.id, { memory_store_id: S, content: 'x' }), ...PD);
    await once(() => asRO.memories.delete(na.id, { memory_store_id: S }), ...PD);
    await once(() => asRO.memoryVersions.redact(newest.id, { memory_store_id: S }), ...PD);
    const still = await ms.retrieve(S);
    assert.equal(still.name, 'rules');
    assert.equal(still.archived_at, null);
    assert.equal((await ms.memoryVersions.retrieve(newest.id, { memory_store_id: S })).redacted_at, null);

    // Keys that open nothing: 401 authentication_error, whatever the call.
    for (const apiKey of ['mtk_' + 'x'.repeat(43), 'nonsense', srv.keys.a.slice(0, -1) + (srv.keys.a.endsWith('A') ? 'B' : 'A')]) {
      const bad = new Anthropic({ apiKey, baseURL: srv.baseURL, fetch: counting, timeout: 30000 }).beta.memoryStores;
      await once(() => bad.list(), Anthropic.AuthenticationError, 401, 'authentication_error');
      await once(() => bad.retrieve(S), Anthropic.AuthenticationError, 401, 'authentication_error');
      await once(() => bad.memories.create(S, { path: '/x.md', content: 'x' }), Anthropic.AuthenticationError, 401, 'authentication_error');
    }
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

// A path a memory left and another took: the one there now is listed,
// retrieved and in the way of a create, whatever the one that left did
// since (its newest version, elsewhere, is newer than the new one's).
test('a memory moved away and changed does not hide the one at its old path', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'moved' })).id;
    const a = await ms.memories.create(S, { path: '/a.md', content: 'A1' });
    await ms.memories.update(a.id, { memory_store_id: S, path: '/q.md' });
    const b = await ms.memories.create(S, { path: '/a.md', content: 'B1' });
    await ms.memories.update(a.id, { memory_store_id: S, content: 'A2' });
    const listed = async (q) => (await ms.memories.list(S, q)).data.map((m) => [m.path, m.id]);
    const both = [['/a.md', b.id], ['/q.md', a.id]];
    assert.deepEqual(await listed({}), both);
    assert.deepEqual(await listed({ depth: 1 }), both);
    assert.deepEqual(await listed({ path_prefix: '/', view: 'full' }), both);
    const e = await ms.memories.create(S, { path: '/a.md', content: 'C' }).catch((x) => x);
    assert.equal(e.status, 409);
    assert.equal(e.error?.error?.conflicting_memory_id, b.id);
  } finally {
    await srv.stop();
  }
});

// The limits the SDK's doc comments state, at and over each edge, and the
// formats of what comes back: each refusal a BadRequestError (400
// invalid_request_error), each acceptance a round trip.
test('the documented limits and formats, at and over each edge', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  const refused = async (what, call) => {
    let err;
    try {
      await call();
    } catch (e) {
      err = e;
    }
    assert.ok(err, `${what}: expected 400, the call succeeded`);
    assert.ok(err instanceof Anthropic.BadRequestError, `${what}: expected 400, got ${err.status} ${err.message}`);
    assert.equal(err.error?.error?.type, 'invalid_request_error', what);
  };
  const rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
  try {
    // Store names 1-255 chars without control chars; description <= 1,024; metadata <= 16 pairs,
    // keys 1-64 chars, values <= 512.
    const meta16 = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(512)]));
    const edge = await ms.create({ name: 'n'.repeat(255), description: 'd'.repeat(1024), metadata: meta16 });
    assert.equal(edge.name.length, 255);
    assert.equal(edge.description.length, 1024);
    assert.equal(Object.keys(edge.metadata).length, 16);
    assert.match(edge.created_at, rfc3339);
    assert.match(edge.updated_at, rfc3339);
    assert.equal((await ms.create({ name: 'k', metadata: { ['k'.repeat(64)]: '' } })).metadata['k'.repeat(64)], '');
    await refused('empty name', () => ms.create({ name: '' }));
    await refused('name of 256 chars', () => ms.create({ name: 'n'.repeat(256) }));
    await refused('name with a control char', () => ms.create({ name: 'a\u0001b' }));
    await refused('description of 1,025 chars', () => ms.create({ name: 'x', description: 'd'.repeat(1025) }));
    await refused('17 metadata pairs', () => ms.create({ name: 'x', metadata: { ...meta16, k16: 'v' } }));
    await refused('metadata key of 65 chars', () => ms.create({ name: 'x', metadata: { ['k'.repeat(65)]: 'v' } }));
    await refused('empty metadata key', () => ms.create({ name: 'x', metadata: { '': 'v' } }));
    await refused('metadata value of 513 chars', () => ms.create({ name: 'x', metadata: { k: 'v'.repeat(513) } }));
    await refused('a 17th pair by update', () => ms.update(edge.id, { metadata: { k16: 'v' } }));
    await refused('update to an empty name', () => ms.update(edge.id, { name: '' }));
    // A store's updated_at moves with its name, not with its memories.
    const S = (await ms.create({ name: 'limits' })).id;
    const s0 = await ms.retrieve(S);
    await new Promise((r) => setTimeout(r, 20));
    await ms.memories.create(S, { path: '/m.md', content: 'm' });
    assert.equal((await ms.retrieve(S)).updated_at, s0.updated_at, 'a memory write leaves the store updated_at alone');
    await new Promise((r) => setTimeout(r, 20));
    const s1 = await ms.update(S, { name: 'limits 2' });
    assert.ok(s1.updated_at > s0.updated_at, 'a rename moves updated_at');
    assert.equal(s1.created_at, s0.created_at);

    // Paths: at most 1,024 bytes and 20 segments; NFC; any UTF-8 name round trips.
    const long = '/' + Array.from({ length: 4 }, () => 'a'.repeat(255)).join('/');
    assert.equal(Buffer.byteLength(long), 1024);
    assert.equal((await ms.memories.create(S, { path: long, content: 'long' })).path, long);
    await refused('a path of 1,025 bytes', () => ms.memories.create(S, { path: long + 'b', content: 'x' }));
    const twenty = '/' + Array.from({ length: 20 }, (_, i) => `s${i}`).join('/');
    assert.equal((await ms.memories.create(S, { path: twenty, content: '20' })).path, twenty);
    await refused('21 segments', () => ms.memories.create(S, { path: twenty.replace('/s0/', '/s0/x/'), content: 'x' }));
    for (const p of ['/café.md', '/日本/メモ.md', '/with space.md', '/Notes/UPPER.md', '/notes/upper.md', '/emoji 🎉.md']) {
      const m = await ms.memories.create(S, { path: p, content: p });
      assert.equal(m.path, p);
      const back = await ms.memories.retrieve(m.id, { memory_store_id: S });
      assert.equal(back.path, p);
      assert.equal(back.content, p);
      assert.equal(back.content_size_bytes, Buffer.byteLength(p));
    }
    await refused('a path not in NFC', () => ms.memories.create(S, { path: '/cafe\u0301.md', content: 'x' }));
    await refused('a path ending in /', () => ms.memories.create(S, { path: '/dir/', content: 'x' }));
    await refused('a path without a leading /', () => ms.memories.create(S, { path: 'rel.md', content: 'x' }));
    await refused('a path_prefix without a trailing /', () => ms.memories.list(S, { path_prefix: '/notes' }));
    // Content: bytes, not characters, and no normalization: NFD content keeps its bytes and its hash.
    const nfd = 'cafe\u0301\r\n\ttab\u0000nul?';
    let kept;
    try {
      kept = await ms.memories.create(S, { path: '/nfd.md', content: nfd, view: 'full' });
    } catch (e) {
      // A NUL may be refused (400) as memtool refuses binary content; never anything else.
      assert.ok(e instanceof Anthropic.BadRequestError, `NUL in content: 400 if refused, got ${e.status}`);
      kept = await ms.memories.create(S, { path: '/nfd.md', content: nfd.replace('\u0000', ''), view: 'full' });
    }
    const exact = kept.content;
    assert.ok(exact.includes('cafe\u0301\r\n\t'), 'content kept byte for byte');
    assert.equal(kept.content_sha256, sha(exact));
    assert.equal(kept.content_size_bytes, Buffer.byteLength(exact));
    assert.equal((await ms.memories.retrieve(kept.id, { memory_store_id: S })).content, exact);

    // An idempotent retry with a stale precondition: a rename already made succeeds, adds nothing.
    const r = await ms.memories.create(S, { path: '/r1.md', content: 'r' });
    const moved = await ms.memories.update(r.id, { memory_store_id: S, path: '/r2.md', content: 'r2' });
    const retry = await ms.memories.update(r.id, {
      memory_store_id: S, path: '/r2.md', content: 'r2', precondition: { type: 'content_sha256', content_sha256: r.content_sha256 },
    });
    assert.equal(retry.memory_version_id, moved.memory_version_id);

    // Store lists page newest first and filter by created_at; version lists too.
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push(await ms.create({ name: `page ${i}` }));
      await new Promise((res) => setTimeout(res, 5));
    }
    const listed = [];
    for await (const s of ms.list({ limit: 2 })) listed.push(s.id);
    assert.equal(new Set(listed).size, listed.length, 'no store twice across pages');
    assert.deepEqual(listed.slice(0, 5), made.map((s) => s.id).reverse(), 'newest first');
    const since = [];
    for await (const s of ms.list({ 'created_at[gte]': made[2].created_at })) since.push(s.id);
    assert.deepEqual(since.sort(), made.slice(2).map((s) => s.id).sort());
    const until = [];
    for await (const s of ms.list({ 'created_at[lte]': made[1].created_at })) until.push(s.id);
    assert.ok(until.includes(made[0].id) && until.includes(made[1].id) && !until.includes(made[2].id));
    const vAll = (await ms.memoryVersions.list(S, { limit: 100 })).data;
    const vLate = (await ms.memoryVersions.list(S, { limit: 100, 'created_at[gte]': vAll[2].created_at })).data;
    assert.ok(vLate.length >= 3 && vLate.length < vAll.length, `created_at[gte] filters versions (${vLate.length} of ${vAll.length})`);
    assert.ok(vLate.every((v) => v.created_at >= vAll[2].created_at));
    assert.equal((await ms.memoryVersions.list(S, { session_id: 'sesn_0123' })).data.length, 0);
    assert.equal((await ms.memoryVersions.list(S, { service_account_id: 'svac_0123' })).data.length, 0);
    // A depth-1 listing's prefixes count toward the page limit, and paging goes on past them.
    const d1 = await ms.memories.list(S, { depth: 1, limit: 3 });
    assert.equal(d1.data.length, 3);
    const d1all = [];
    for await (const x of ms.memories.list(S, { depth: 1, limit: 3 })) d1all.push(x.path);
    assert.equal(new Set(d1all).size, d1all.length);
    assert.ok(d1all.includes('/日本/') && d1all.includes('/Notes/') && d1all.includes('/notes/') && d1all.includes('/m.md'));
  } finally {
    await srv.stop();
  }
});

// docs/server.md: "The API's limits also hold for the memory tool when it
// works on a memory store." Every path and size the API refuses, the memory
// tool (memtool --memory-store ... call) refuses too, so that the API never
// serves a memory it would not accept.
test('the memory tool on a memory store keeps the API limits', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'tool limits' })).id;
    // The tool's answer and exit code (call exits 1 on a tool error).
    const tool = (input) => {
      try {
        return { code: 0, out: memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'], JSON.stringify(input)) };
      } catch (e) {
        if (e.status !== 1) throw e;
        return { code: 1, out: e.stdout };
      }
    };
    assert.equal(tool({ command: 'create', path: '/memories/ok.md', file_text: 'ok\n' }).code, 0);
    const refusedPaths = {
      '21 segments': '/' + Array.from({ length: 21 }, () => 'd').join('/'),
      'not NFC': '/cafe\u0301.md',
      'a format char': '/a\u200db.md',
      'a line separator': '/a\u2028b.md',
      'over 1,024 bytes': '/' + Array.from({ length: 11 }, () => 'n'.repeat(100)).join('/'),
    };
    const failures = [];
    for (const [what, p] of Object.entries(refusedPaths)) {
      const r = tool({ command: 'create', path: '/memories' + p, file_text: 'x' });
      if (r.code !== 1) failures.push(`create ${what}: exit ${r.code}, ${r.out.trim().slice(0, 80)}`);
      const m = tool({ command: 'rename', old_path: '/memories/ok.md', new_path: '/memories' + p });
      if (m.code !== 1) {
        failures.push(`rename to ${what}: exit ${m.code}, ${m.out.trim().slice(0, 80)}`);
        tool({ command: 'rename', old_path: '/memories' + p, new_path: '/memories/ok.md' });
      }
    }
    // A directory moved so deep that a memory in it breaks the rule: refused whole.
    const deep = '/memories/deep/' + Array.from({ length: 18 }, () => 'd').join('/') + '/f.md';
    assert.equal(tool({ command: 'create', path: deep, file_text: 'deep\n' }).code, 0);
    const moved = tool({ command: 'rename', old_path: '/memories/deep', new_path: '/memories/x/deep' });
    if (moved.code !== 1) failures.push(`rename of a directory to 21 segments: exit ${moved.code}`);
    else assert.match(moved.out, /more than 20 segments/);
    const big = tool({ command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(102401) });
    if (big.code !== 1) failures.push('create of 102,401 bytes accepted');
    tool({ command: 'create', path: '/memories/grow.md', file_text: 'x'.repeat(102400) });
    const grow = tool({ command: 'insert', path: '/memories/grow.md', insert_line: 0, insert_text: 'y' });
    if (grow.code !== 1) failures.push('an insert past 102,400 bytes accepted');
    // Whatever the tool let through, the API now serves: list what breaks its own rules.
    for await (const m of ms.memories.list(S)) {
      const segs = m.path.split('/').length - 1;
      if (m.path.normalize('NFC') !== m.path || segs > 20 || Buffer.byteLength(m.path) > 1024 ||
          /[\u200b-\u200f\u2028\u2029]/.test(m.path) || m.content_size_bytes > 102400)
        failures.push(`the API serves ${JSON.stringify(m.path.slice(0, 60))} (${Buffer.byteLength(m.path)} bytes, ${segs} segments, ${m.content_size_bytes} content bytes)`);
    }
    assert.deepEqual(failures, []);
  } finally {
    await srv.stop();
  }
});

// A page cursor holds its place while the store changes under it: deleting
// what was already seen, or creating before the cursor, neither skips nor
// repeats a memory (the SDK's sync helper downloads a store page by page).
test('paging holds its place while the store changes', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'paging' })).id;
    const made = [];
    for (let i = 0; i < 120; i += 40)
      made.push(...(await Promise.all(Array.from({ length: 40 }, (_, j) =>
        ms.memories.create(S, { path: `/m${String(i + j).padStart(3, '0')}.md`, content: `${i + j}` })))));
    for (const view of ['basic', 'full']) {
      const first = await ms.memories.list(S, { limit: 10, view });
      const seen = first.data.map((m) => m.path);
      const gone = made.filter((m) => seen.includes(m.path)).slice(0, 5);
      await Promise.all(gone.map((m) => ms.memories.delete(m.id, { memory_store_id: S })));
      await ms.memories.create(S, { path: `/a-${view}.md`, content: 'before the cursor' });
      for (let p = first; p.hasNextPage(); ) {
        p = await p.getNextPage();
        seen.push(...p.data.map((m) => m.path));
      }
      assert.equal(new Set(seen).size, seen.length, `${view}: no memory twice`);
      const alive = made.filter((m) => !gone.includes(m)).map((m) => m.path);
      assert.deepEqual(alive.filter((x) => !seen.includes(x)), [], `${view}: no memory skipped`);
      made.splice(0, made.length, ...made.filter((m) => !gone.includes(m)));
    }
    // Versions page newest first; writes after the first page do not shift the rest.
    const vfirst = await ms.memoryVersions.list(S, { limit: 10 });
    await Promise.all(made.slice(0, 10).map((m) => ms.memories.update(m.id, { memory_store_id: S, content: 'changed' })));
    const vseen = vfirst.data.map((v) => v.id);
    for (let q = vfirst; q.hasNextPage(); ) {
      q = await q.getNextPage();
      vseen.push(...q.data.map((v) => v.id));
    }
    assert.equal(new Set(vseen).size, vseen.length, 'no version twice');
    assert.equal(vseen.length, 120 + 10 + 2, 'every version older than the first page, once');
  } finally {
    await srv.stop();
  }
});

// docs/server.md: redaction erases a version's content and path for good,
// from the store's files. After redacting every version that held them, no
// byte of the content or the path is left anywhere under the store (the
// file store's history, the SQLite file and its journal), nor in the log.
test('redaction leaves no trace of the content or path in the store', async (t) => {
  if (process.env.MEMTOOL_TEST_STORE === 'postgresql') return t.skip('the database is not a file to read');
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  let stopped = false;
  try {
    const S = (await ms.create({ name: 'redact' })).id;
    const m = await ms.memories.create(S, { path: '/leak-PATHMARK-7f3a.md', content: 'REDACT-CONTENT-MARK-9c1e\n' });
    await ms.memories.update(m.id, { memory_store_id: S, content: 'REDACT-CONTENT-MARK-9c1e\nmore\n' });
    await ms.memories.update(m.id, { memory_store_id: S, path: '/clean.md' });
    await ms.memories.update(m.id, { memory_store_id: S, content: 'clean\n' });
    const vs = (await ms.memoryVersions.list(S, { memory_id: m.id })).data;
    assert.equal(vs.length, 4);
    for (const v of vs.slice(1)) {
      const r = await ms.memoryVersions.redact(v.id, { memory_store_id: S });
      assert.equal(r.content, null);
      assert.equal(r.path, null);
    }
    for (const v of (await ms.memoryVersions.list(S, { memory_id: m.id, view: 'full' })).data.slice(1)) {
      assert.ok(v.redacted_at && v.path === null && v.content === null && v.content_sha256 === null, JSON.stringify(v));
    }
    await srv.stop();
    stopped = true;
    const holding = (marker) => {
      const hits = [];
      const walk = (dir) => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          const p = join(dir, e.name);
          if (e.isDirectory()) walk(p);
          else if (e.isFile() && readFileSync(p).includes(marker)) hits.push(p);
        }
      };
      walk(srv.dir);
      return hits;
    };
    assert.deepEqual(holding('REDACT-CONTENT-MARK-9c1e'), [], 'the content is gone from every file');
    assert.deepEqual(holding('PATHMARK-7f3a'), [], 'the path is gone from every file');
    assert.ok(!srv.log().includes('PATHMARK-7f3a') && !srv.log().includes('REDACT-CONTENT'), 'and was never logged');
  } finally {
    if (!stopped) await srv.stop();
  }
});

// docs/server.md: deleting a store removes its record, "then the server
// deletes its memories and redacts its versions". Once it has, nothing of
// its memories (content or path) is left in any file under the store, and a
// new store of the same tenant starts empty.
test('a deleted store leaves no content or path of its memories behind', async (t) => {
  if (process.env.MEMTOOL_TEST_STORE === 'postgresql') return t.skip('the database is not a file to read');
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  let stopped = false;
  try {
    const S = (await ms.create({ name: 'to delete' })).id;
    const m = await ms.memories.create(S, { path: '/del-PATHMARK-51d0.md', content: 'DELSTORE-CONTENT-MARK-0b7e\n' });
    await ms.memories.update(m.id, { memory_store_id: S, content: 'DELSTORE-CONTENT-MARK-0b7e two\n' });
    await ms.memories.create(S, { path: '/other/del-PATHMARK-51d0-2.md', content: 'x' });
    // A search through the memory tool indexes the words: the index must forget them too.
    assert.match(memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'search', 'DELSTORE']), /PATHMARK/);
    assert.deepEqual(await ms.delete(S), { id: S, type: 'memory_store_deleted' });
    const T = (await ms.create({ name: 'after' })).id;
    assert.equal((await ms.memories.list(T)).data.length, 0);
    assert.equal((await ms.memoryVersions.list(T)).data.length, 0);
    // Checked twice: with the server still running (a database's write-ahead
    // log must have been emptied by the deletion itself, not by the close),
    // then after it stopped.
    const check = () => {
      assert.deepEqual(holding('DELSTORE-CONTENT-MARK-0b7e'), [], 'no content of a deleted store is left');
      assert.deepEqual(holding('PATHMARK-51d0'), [], 'no path of a deleted store is left');
    };
    const holding = (marker) => {
      const hits = [];
      const walk = (dir) => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          const p = join(dir, e.name);
          if (e.isDirectory()) walk(p);
          else if (e.isFile() && readFileSync(p).includes(marker)) hits.push(p.slice(srv.dir.length));
        }
      };
      walk(srv.dir);
      return hits;
    };
    check();
    await srv.stop();
    stopped = true;
    check();
  } finally {
    if (!stopped) await srv.stop();
  }
});

// Oversize through the SDK: content over 102,400 bytes in a body under the
// server's 1 MiB limit is BadRequestError (400); a body over the limit is
// ContentTooLargeError (413). Each is one request (the SDK retries neither),
// and the same client goes on working after them (the connection is sound).
test('oversize content and bodies through the SDK', async () => {
  const srv = await startServer();
  let requests = 0;
  const counting = (url, init) => {
    requests++;
    return fetch(url, init);
  };
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, fetch: counting, timeout: 30000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'oversize' })).id;
    const m = await ms.memories.create(S, { path: '/m.md', content: 'm' });
    for (const [what, size, cls, status] of [
      ['102,401 bytes', 102401, Anthropic.BadRequestError, 400],
      ['1,000,000 bytes', 1000000, Anthropic.BadRequestError, 400],
      ['2 MiB', 2 << 20, Anthropic.ContentTooLargeError, 413],
    ]) {
      for (const call of [
        () => ms.memories.create(S, { path: `/big-${size}.md`, content: 'x'.repeat(size) }),
        () => ms.memories.update(m.id, { memory_store_id: S, content: 'x'.repeat(size) }),
      ]) {
        requests = 0;
        await assert.rejects(call(), (e) => {
          assert.ok(e instanceof cls, `${what}: ${cls.name} expected, got ${e.constructor.name} ${e.status}`);
          assert.equal(e.status, status);
          if (status === 400) assert.equal(e.error?.error?.type, 'invalid_request_error');
          return true;
        });
        assert.equal(requests, 1, `${what}: sent once`);
        assert.equal((await ms.memories.retrieve(m.id, { memory_store_id: S })).content, 'm', `${what}: nothing changed`);
      }
    }
    // Exactly at the limit: accepted, and read back whole.
    const max = await ms.memories.create(S, { path: '/max.md', content: 'é'.repeat(51200), view: 'full' });
    assert.equal(max.content_size_bytes, 102400);
    assert.equal((await ms.memories.retrieve(max.id, { memory_store_id: S })).content.length, 51200);
  } finally {
    await srv.stop();
  }
});

// The memory tool and the API on one memory: a precondition the API client
// read is stale once the tool has changed the memory; memory_version_id and
// the times follow every change, whichever side made it.
test('the memory tool and the API keep one history and one precondition', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 30000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'shared' })).id;
    const tool = (input) =>
      memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'], JSON.stringify(input));
    const m = await ms.memories.create(S, { path: '/shared.md', content: 'one\n' });
    const read = await ms.memories.retrieve(m.id, { memory_store_id: S });
    await new Promise((r) => setTimeout(r, 15));
    assert.match(tool({ command: 'str_replace', path: '/memories/shared.md', old_str: 'one', new_str: 'two' }), /edited/);
    await assert.rejects(
      ms.memories.update(m.id, {
        memory_store_id: S, content: 'three\n', precondition: { type: 'content_sha256', content_sha256: read.content_sha256 },
      }),
      (e) => e instanceof Anthropic.ConflictError && e.error.error.type === 'memory_precondition_failed_error',
    );
    const now = await ms.memories.retrieve(m.id, { memory_store_id: S });
    assert.equal(now.content, 'two\n');
    assert.equal(now.content_sha256, sha('two\n'));
    assert.equal(now.created_at, m.created_at, 'created_at stays');
    assert.ok(now.updated_at > m.updated_at, 'updated_at moves with the tool change');
    const newest = (await ms.memoryVersions.list(S, { memory_id: m.id, limit: 1 })).data[0];
    assert.equal(now.memory_version_id, newest.id);
    assert.equal(newest.operation, 'modified');
    assert.deepEqual(newest.created_by, { type: 'user_actor', user_id: 'cli' });
    // The fresh precondition works; the tool then sees the API's change.
    await ms.memories.update(m.id, {
      memory_store_id: S, content: 'three\n', precondition: { type: 'content_sha256', content_sha256: now.content_sha256 },
    });
    assert.match(tool({ command: 'view', path: '/memories/shared.md' }), /three/);
    // A rename by the tool keeps the id the API knows; a delete by the tool is a deleted version.
    assert.equal(tool({ command: 'rename', old_path: '/memories/shared.md', new_path: '/memories/moved.md' }).length > 0, true);
    const moved = await ms.memories.retrieve(m.id, { memory_store_id: S });
    assert.equal(moved.path, '/moved.md');
    tool({ command: 'delete', path: '/memories/moved.md' });
    await assert.rejects(ms.memories.retrieve(m.id, { memory_store_id: S }), (e) => e.status === 404);
    const ops = (await ms.memoryVersions.list(S, { memory_id: m.id })).data.map((v) => v.operation);
    assert.deepEqual(ops, ['deleted', 'modified', 'modified', 'modified', 'created']);
  } finally {
    await srv.stop();
  }
});
