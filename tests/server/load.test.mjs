// Load, bounded: 64 clients at once, each making 16 mixed requests through
// the SDK (1,024 in all, plus the counter's retries), on the store that
// MEMTOOL_TEST_STORE names (registered on file, SQLite and PostgreSQL), the
// clients spread over two server processes on that store
// (MEMTOOL_LOAD_SERVERS changes the 2).
//
// The mix, per client and per 8 requests: one update of a shared counter
// memory under a content_sha256 precondition (read, add one, write; a 409 is
// retried), two creates of its own notes, one update of its own note under
// its precondition (uncontended: it must succeed at once), a retrieve and a
// full list of its own notes (which must hold its own content and no other
// client's), a depth-1 listing and a version listing.
//
// Checked: no request fails; the counter ends at exactly the number of
// successful updates, and its versions are exactly those updates, each
// number once, each written by the client that made it; every note holds
// the content of the client that wrote it.
//
// Numbers: 64 x 16 takes ~20 s a store on 2 shared cores (most of it the
// counter's retries: 64 writers on one memory); MEMTOOL_LOAD_PER_CLIENT
// changes the 16 (a multiple of 8).
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './lib.mjs';

const CLIENTS = 64;
const PER_CLIENT = Number(process.env.MEMTOOL_LOAD_PER_CLIENT || 16);
const SERVERS = Number(process.env.MEMTOOL_LOAD_SERVERS || 2);
const sha = (s) => createHash('sha256').update(s, 'utf8').digest('hex');
const note = (c, i, rev) => `client ${c} note ${i}${rev ? ' rev' : ''}\n`;

test(`${CLIENTS} clients x ${PER_CLIENT} mixed requests lose nothing`, { timeout: 300000 }, async () => {
  assert.equal(PER_CLIENT % 8, 0, 'MEMTOOL_LOAD_PER_CLIENT is a multiple of 8');
  // Every version kept (the default keeps 100 a memory), so that each update's can be counted.
  const srv = await startServer(['--history-keep', '0']);
  const servers = [srv];
  // Two server processes on the one store, the clients spread over them: a store shared by
  // processes (the memory tool's everyday case, and several hosts on PostgreSQL) loses nothing either.
  for (let n = 1; n < SERVERS; n++) servers.push(await srv.another());
  try {
    const admin = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 60000 });
    const store = await admin.beta.memoryStores.create({ name: 'load' });
    const S = store.id;
    const counter = await admin.beta.memoryStores.memories.create(S, { path: '/counter', content: '0\n' });
    let updates = 0;
    let requests = 0;
    let retries = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const client = new Anthropic({
          apiKey: srv.keys.a,
          baseURL: servers[c % servers.length].baseURL,
          maxRetries: 0,
          timeout: 60000,
        });
        const mem = client.beta.memoryStores.memories;
        const own = new Map(); // i -> memory
        for (let i = 0; i < PER_CLIENT; i++) {
          requests++;
          switch (i % 8) {
            case 0: {
              // The counter: read, add one, write under the precondition.
              for (;;) {
                const cur = await mem.retrieve(counter.id, { memory_store_id: S });
                const n = Number(cur.content.split('\n')[0]);
                try {
                  await mem.update(counter.id, {
                    memory_store_id: S,
                    content: `${n + 1}\nclient ${c} update ${i}\n`,
                    precondition: { type: 'content_sha256', content_sha256: cur.content_sha256 },
                  });
                  updates++;
                  break;
                } catch (e) {
                  if (!(e instanceof Anthropic.ConflictError) || e.error?.error?.type !== 'memory_precondition_failed_error')
                    throw e;
                  retries++;
                }
              }
              break;
            }
            case 1:
            case 5: {
              const m = await mem.create(S, { path: `/clients/c${c}/m${i}.md`, content: note(c, i) });
              assert.equal(m.content_sha256, sha(note(c, i)));
              own.set(i, m);
              break;
            }
            case 2: {
              const page = await mem.list(S, { path_prefix: '/clients/', depth: 1 });
              assert.ok(page.data.length >= 1 && page.data.length <= 100);
              assert.ok(page.data.every((x) => x.type === 'memory_prefix' && /^\/clients\/c\d+\/$/.test(x.path)));
              break;
            }
            case 3: {
              // Its own note, under its own precondition: nobody else writes it, so it succeeds at once.
              const m = own.get(i - 2);
              const u = await mem.update(m.id, {
                memory_store_id: S,
                content: note(c, i - 2, true),
                precondition: { type: 'content_sha256', content_sha256: m.content_sha256 },
              });
              assert.equal(u.content_sha256, sha(note(c, i - 2, true)));
              break;
            }
            case 4: {
              const v = await client.beta.memoryStores.memoryVersions.list(S, { memory_id: counter.id, limit: 5 });
              assert.ok(v.data.length >= 1 && v.data.length <= 5);
              break;
            }
            case 6: {
              const m = await mem.retrieve(own.get(i - 1).id, { memory_store_id: S });
              assert.equal(m.content, note(c, i - 1));
              break;
            }
            default: {
              const page = await mem.list(S, { path_prefix: `/clients/c${c}/`, view: 'full' });
              assert.ok(page.data.length >= 2);
              for (const m of page.data) assert.match(m.content, new RegExp(`^client ${c} note \\d+( rev)?\\n$`));
            }
          }
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    const ms = admin.beta.memoryStores;
    const end = await ms.memories.retrieve(counter.id, { memory_store_id: S });
    assert.equal(Number(end.content.split('\n')[0]), updates, 'the counter is the number of successful updates');
    assert.equal(end.content_sha256, sha(end.content));
    assert.equal(updates, CLIENTS * (PER_CLIENT / 8));

    // Every note holds its own writer's content.
    const notes = new Map();
    for await (const m of ms.memories.list(S, { path_prefix: '/clients/', view: 'full' })) notes.set(m.path, m.content);
    assert.equal(notes.size, CLIENTS * (PER_CLIENT / 4));
    for (let c = 0; c < CLIENTS; c++)
      for (let i = 0; i < PER_CLIENT; i++)
        if (i % 8 === 1 || i % 8 === 5)
          assert.equal(notes.get(`/clients/c${c}/m${i}.md`), note(c, i, i % 8 === 1), `client ${c}'s note ${i}`);

    // The counter's versions are exactly the successful updates: 1..updates, each once.
    const seen = new Set();
    const writes = new Set();
    for await (const v of ms.memoryVersions.list(S, { memory_id: counter.id, operation: 'modified', view: 'full' })) {
      const [n, who] = v.content.split('\n');
      assert.ok(!seen.has(n), `counter value ${n} written twice`);
      seen.add(n);
      assert.ok(!writes.has(who), `${who} recorded twice`);
      writes.add(who);
    }
    assert.equal(seen.size, updates, 'each successful update is one version');
    for (let n = 1; n <= updates; n++) assert.ok(seen.has(String(n)), `counter value ${n} has its version`);
    console.log(
      `# ${requests} requests + ${retries} counter retries (each a retrieve and an update), ` +
        `${updates} counter updates, ${servers.length} server(s), ${seconds.toFixed(1)} s`,
    );
  } finally {
    for (const s of servers.reverse()) await s.stop();
  }
});

// Races on paths, over two server processes: creates of /x and of /x/yN at
// once, and renames of many memories onto one path. Whatever wins, the store
// never holds a memory and another beneath it, nor two at one path, every
// loser is 409 memory_path_conflict_error, and every winner is listed.
test('racing creates and renames never leave overlapping paths', { timeout: 120000 }, async () => {
  const srv = await startServer();
  const servers = [srv];
  for (let n = 1; n < SERVERS; n++) servers.push(await srv.another());
  try {
    const sdk = servers.map(
      (s) => new Anthropic({ apiKey: srv.keys.a, baseURL: s.baseURL, maxRetries: 0, timeout: 60000 }).beta.memoryStores,
    );
    const S = (await sdk[0].create({ name: 'races' })).id;
    const losers = (results) => {
      for (const r of results)
        if (r.status === 'rejected')
          assert.ok(
            r.reason.status === 409 && r.reason.error?.error?.type === 'memory_path_conflict_error',
            `a loser is 409 memory_path_conflict_error, not ${r.reason.status} ${r.reason.message}`,
          );
      return results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    };
    const listed = async (prefix) => {
      const out = [];
      for await (const m of sdk[0].memories.list(S, { path_prefix: prefix })) out.push(m.path);
      return out.sort();
    };
    for (let round = 0; round < 6; round++) {
      const results = await Promise.allSettled(
        Array.from({ length: 24 }, (_, i) =>
          sdk[i % sdk.length].memories.create(S, {
            path: (i + round) % 3 === 0 ? `/r${round}/x` : `/r${round}/x/y${i}`,
            content: `round ${round} writer ${i}`,
          }),
        ),
      );
      const won = losers(results).map((m) => m.path).sort();
      const paths = await listed(`/r${round}/`);
      assert.deepEqual(paths, won, `round ${round}: exactly the winners are stored`);
      assert.ok(
        (paths.length === 1 && paths[0] === `/r${round}/x`) || paths.every((p) => p.startsWith(`/r${round}/x/y`)),
        `round ${round}: /x and /x/y never both: ${paths}`,
      );
    }
    // Sixteen memories renamed onto one path at once: one wins, the others stay where they were.
    const ms = await Promise.all(
      Array.from({ length: 16 }, (_, i) => sdk[0].memories.create(S, { path: `/src/m${i}.md`, content: `m${i}` })),
    );
    const results = await Promise.allSettled(
      ms.map((m, i) => sdk[i % sdk.length].memories.update(m.id, { memory_store_id: S, path: '/target.md' })),
    );
    const won = losers(results);
    assert.equal(won.length, 1, 'one rename wins');
    assert.deepEqual(await listed('/src/'), ms.filter((m) => m.id !== won[0].id).map((m) => m.path).sort());
    const t = (await sdk[0].memories.list(S, { depth: 1, view: 'full' })).data.filter((m) => m.path === '/target.md');
    assert.equal(t.length, 1);
    assert.equal(t[0].id, won[0].id);
    assert.equal(t[0].content, `m${ms.findIndex((m) => m.id === won[0].id)}`);
    // A delete racing updates of the same memory: after the dust settles, it is gone or it
    // holds one update's content, and every answer is 200, 404 or 409.
    for (let round = 0; round < 4; round++) {
      const m = await sdk[0].memories.create(S, { path: `/dr/m${round}.md`, content: 'start' });
      const results = await Promise.allSettled([
        sdk[0].memories.delete(m.id, { memory_store_id: S }),
        ...Array.from({ length: 8 }, (_, i) =>
          sdk[(i + 1) % sdk.length].memories.update(m.id, { memory_store_id: S, content: `update ${i}` })),
      ]);
      for (const r of results)
        if (r.status === 'rejected') assert.ok([404, 409].includes(r.reason.status), `${r.reason.status} ${r.reason.message}`);
      assert.equal(results[0].status, 'fulfilled', 'an unconditional delete succeeds');
      await assert.rejects(sdk[0].memories.retrieve(m.id, { memory_store_id: S }), (e) => e.status === 404);
      const ops = [];
      for await (const v of sdk[0].memoryVersions.list(S, { memory_id: m.id })) ops.push(v.operation);
      assert.equal(ops[0], 'deleted', 'the delete is the last version');
      assert.equal(ops.filter((o) => o === 'deleted').length, 1);
    }
  } finally {
    for (const s of servers.reverse()) await s.stop();
  }
});
