// Load, bounded: 64 clients at once, each making 1,000 mixed requests
// (64,000 in all, plus the counter's retries), from load_client.c (one
// thread and one keep-alive connection a client), on the store that
// MEMTOOL_TEST_STORE names (registered on file, SQLite and PostgreSQL), the
// clients spread over two server processes on that store
// (MEMTOOL_LOAD_SERVERS changes the 2; MEMTOOL_LOAD_PER_CLIENT the 1,000).
//
// The mix, per client and per 8 requests (load_client.c has it in full): in
// the first rounds, an update of a shared counter memory under a
// content_sha256 precondition (read, add one, write; a 409 is retried); a
// create of its own note, an update of it under its precondition
// (uncontended: it must succeed at once), a retrieve, its versions, a delete
// of the note of the round before under its precondition, a full list of its
// own notes (which must hold exactly its own, with its content), a depth-1
// listing. The client checks every answer.
//
// Then, here: the counter ends at exactly the number of successful updates,
// and its versions are exactly those updates, each number once, each written
// by the client that made it; the notes left are exactly those the clients
// hold, each with its writer's content.
//
// Numbers: 64 x 1,000 takes ~40 s on SQLite and ~75 s on PostgreSQL on 2 shared cores.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './lib.mjs';

const CLIENTS = 64;
const PER_CLIENT = Number(process.env.MEMTOOL_LOAD_PER_CLIENT || 1000);
const SERVERS = Number(process.env.MEMTOOL_LOAD_SERVERS || 2);
// Rounds in which each client also updates the shared counter (64 writers on one memory:
// each success costs the others a retry, so its rounds are few).
const COUNTER_ROUNDS = 2;
const sha = (s) => createHash('sha256').update(s, 'utf8').digest('hex');
const note = (c, i, rev) => `client ${c} note ${i}${rev ? ' rev' : ''}\n`;

test(`${CLIENTS} clients x ${PER_CLIENT} mixed requests lose nothing`, { timeout: 580000 }, async () => {
  assert.equal(PER_CLIENT % 8, 0, 'MEMTOOL_LOAD_PER_CLIENT is a multiple of 8');
  // Every version kept (the default keeps 100 a memory), so that each update's can be counted.
  // Durability none: what is checked here (no lost update, a serial order) is the locks'
  // doing, the same at every durability; fsyncs would only make the run longer (the crash
  // tests check durability).
  const srv = await startServer(['--history-keep', '0', '--durability', 'none']);
  const servers = [srv];
  // Two server processes on the one store, the clients spread over them: a store shared by
  // processes (the memory tool's everyday case, and several hosts on PostgreSQL) loses nothing either.
  for (let n = 1; n < SERVERS; n++) servers.push(await srv.another());
  try {
    const admin = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 60000 });
    const ms = admin.beta.memoryStores;
    const S = (await ms.create({ name: 'load' })).id;
    const counter = await ms.memories.create(S, { path: '/counter', content: '0\n' });
    // The load itself: load_client.c, one thread and one keep-alive connection a client.
    // Run apart (never spawnSync: the servers' logs come to this process, which must keep reading them).
    const run = await new Promise((resolve) => {
      const child = spawn(
        process.env.MEMTOOL_SERVER_LOAD,
        [srv.keys.a, S, counter.id, String(CLIENTS), String(PER_CLIENT), String(COUNTER_ROUNDS), ...servers.map((x) => x.baseURL)],
        { stdio: ['ignore', 'pipe', 'pipe'], timeout: 540000 },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
    });
    assert.equal(run.status, 0, `the load client (${run.signal ?? 'exit ' + run.status}): ${run.stderr}`);
    const { requests, retries, updates, seconds, holds } = JSON.parse(run.stdout);
    // One request a step, but a counter update's two (a retrieve, an update) and each retry's two.
    assert.equal(requests, CLIENTS * PER_CLIENT + updates + retries * 2);

    const end = await ms.memories.retrieve(counter.id, { memory_store_id: S });
    assert.equal(Number(end.content.split('\n')[0]), updates, 'the counter is the number of successful updates');
    assert.equal(end.content_sha256, sha(end.content));
    assert.equal(updates, CLIENTS * Math.min(COUNTER_ROUNDS, PER_CLIENT / 8));

    // Every note left holds its own writer's content, and no other is left.
    const notes = new Map();
    for await (const m of ms.memories.list(S, { path_prefix: '/clients/', view: 'full' })) notes.set(m.path, m.content);
    const expected = new Map();
    holds.forEach((own, c) => own.forEach((k) => expected.set(`/clients/c${c}/m${k}.md`, note(c, k, true))));
    assert.deepEqual(notes, expected);

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
      `# ${requests} requests (${retries} counter retries, each a retrieve and an update), ` +
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
