// Load, bounded: 64 clients at once, each making a mix of requests through
// the SDK, one counter memory updated by all of them under content_sha256
// preconditions (retrying on 409). No request fails, and the counter ends
// at exactly the number of successful updates: no update is lost. On
// PostgreSQL the clients are spread over two server processes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './lib.mjs';

const CLIENTS = 64;
const PER_CLIENT = Number(process.env.MEMTOOL_LOAD_PER_CLIENT || 8);
const sha = (s) => createHash('sha256').update(s, 'utf8').digest('hex');

test(`${CLIENTS} clients x ${PER_CLIENT} mixed requests lose nothing`, { timeout: 300000 }, async () => {
  // Every version kept (the default keeps 100 a memory), so that each update's can be counted.
  const srv = await startServer(['--history-keep', '0']);
  const servers = [srv];
  if (process.env.MEMTOOL_TEST_STORE === 'postgresql') servers.push(await srv.another());
  try {
    const admin = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL });
    const store = await admin.beta.memoryStores.create({ name: 'load' });
    const S = store.id;
    const counter = await admin.beta.memoryStores.memories.create(S, { path: '/counter', content: '0\n' });
    let updates = 0;
    let requests = 0;
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
        for (let i = 0; i < PER_CLIENT; i++) {
          requests++;
          switch (i % 4) {
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
                  if (e.status !== 409) throw e;
                  requests++;
                }
              }
              break;
            }
            case 1:
              await mem.create(S, { path: `/clients/c${c}/m${i}.md`, content: `client ${c} note ${i}\n` });
              break;
            case 2: {
              const page = await mem.list(S, { path_prefix: '/clients/', depth: 1 });
              assert.ok(page.data.length <= 100);
              break;
            }
            default: {
              const v = await client.beta.memoryStores.memoryVersions.list(S, { memory_id: counter.id, limit: 5 });
              assert.ok(v.data.length >= 1);
            }
          }
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    const end = await admin.beta.memoryStores.memories.retrieve(counter.id, { memory_store_id: S });
    assert.equal(Number(end.content.split('\n')[0]), updates, 'the counter is the number of successful updates');
    assert.equal(end.content_sha256, sha(end.content));
    const mine = [];
    for await (const m of admin.beta.memoryStores.memories.list(S, { path_prefix: '/clients/' })) mine.push(m.path);
    assert.equal(mine.length, CLIENTS * Math.ceil((PER_CLIENT - 1) / 4));
    const versions = [];
    for await (const v of admin.beta.memoryStores.memoryVersions.list(S, { memory_id: counter.id, operation: 'modified' }))
      versions.push(v);
    assert.equal(versions.length, updates, 'each successful update is one version');
    console.log(`# ${requests} requests, ${updates} counter updates, ${servers.length} server(s), ${seconds.toFixed(1)} s`);
  } finally {
    for (const s of servers.reverse()) await s.stop();
  }
});
