// The 2,000-memories-per-store cap (the SDK's sync helper names it): the
// 2,001st create is refused with a 4xx in the error shape, even when twenty
// race for the last place (exactly one wins); a delete frees a place; the
// cap is per store; and the memory tool keeps it too.
import test from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, memtool } from './lib.mjs';

test('a store holds at most 2,000 memories, even under a race for the last place', { timeout: 120000 }, async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0, timeout: 60000 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'cap' })).id;
    for (let i = 0; i < 1999; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, 1999 - i) }, (_, j) =>
          ms.memories.create(S, { path: `/d${(i + j) % 20}/m${i + j}.md`, content: `${i + j}` })),
      );
    const race = await Promise.allSettled(
      Array.from({ length: 20 }, (_, k) => ms.memories.create(S, { path: `/race/r${k}.md`, content: `r${k}` })),
    );
    const won = race.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, `one create takes the last place, not ${won.length}`);
    for (const r of race.filter((x) => x.status === 'rejected')) {
      const e = r.reason;
      assert.ok(e.status >= 400 && e.status < 500, `over the cap: a 4xx, not ${e.status} ${e.message}`);
      assert.equal(e.error?.type, 'error');
      assert.match(e.error?.error?.type ?? '', /_error$/);
    }
    let count = 0;
    for await (const _ of ms.memories.list(S)) count++;
    assert.equal(count, 2000);
    // The memory tool cannot go past it either.
    let toolOut;
    try {
      toolOut = memtool(['--store', srv.store, '--tenant', 'alice', '--memory-store', S, 'call'],
        JSON.stringify({ command: 'create', path: '/memories/by-tool.md', file_text: 'x' }));
    } catch (e) {
      toolOut = e.stdout;
    }
    count = 0;
    for await (const _ of ms.memories.list(S)) count++;
    assert.equal(count, 2000, `the memory tool went past the cap: ${toolOut}`);
    // A delete frees a place; another store has places of its own.
    await ms.memories.delete(won[0].value.id, { memory_store_id: S });
    assert.equal((await ms.memories.create(S, { path: '/freed.md', content: 'f' })).path, '/freed.md');
    const T = (await ms.create({ name: 'other' })).id;
    assert.equal((await ms.memories.create(T, { path: '/x.md', content: 'x' })).path, '/x.md');
    // Updates and renames of the 2,000 still work at the cap.
    const one = (await ms.memories.list(S, { path_prefix: '/d0/', limit: 1 })).data[0];
    assert.equal((await ms.memories.update(one.id, { memory_store_id: S, path: '/renamed.md', content: 'r' })).path, '/renamed.md');
  } finally {
    await srv.stop();
  }
});
