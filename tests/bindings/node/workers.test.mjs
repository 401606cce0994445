// The addon in several worker threads at once: each loads it (its own instance data),
// opens the same store and inserts 25 lines into one file; no line may be lost.
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';
import { Worker } from 'node:worker_threads';

import { PKG, memtool, scratch, stores } from './lib.mjs';

const WORKERS = 8;
const INSERTS = 25;

const body = `
const { workerData, parentPort } = require('node:worker_threads');
const { MemoryStore } = require(workerData.entry);
(async () => {
  // No cap on the versions kept, so every insert's version can be counted.
  const store = await MemoryStore.open({ store: workerData.url, actor: 'worker-' + workerData.n, historyKeep: 0 });
  const texts = [];
  for (let i = 0; i < workerData.inserts; i++) {
    const r = await store.call({ command: 'insert', path: '/memories/shared.md', insert_line: 0,
                                 insert_text: 'worker ' + workerData.n + ' line ' + i });
    if (r.isError) throw new Error(r.content);
    texts.push(r.content);
  }
  await store.close();
  parentPort.postMessage(texts.length);
})().catch((e) => { throw e; });
`;

for (const kind of ['file', 'sqlite']) {
  test(`${WORKERS} workers x ${INSERTS} inserts on one ${kind} store file lose no line`, async (t) => {
    const url = stores(t).find(([k]) => k === kind)[1];
    const store = await memtool.MemoryStore.open({ store: url, historyKeep: 0 });
    t.after(() => store.close());
    await store.create('/memories/shared.md', '');
    const done = [];
    for (let n = 0; n < WORKERS; n++) {
      const w = new Worker(body, {
        eval: true,
        workerData: { entry: path.join(PKG, 'lib', 'index.cjs'), url, n, inserts: INSERTS },
      });
      done.push(
        new Promise((resolve, reject) => {
          let count = 0;
          w.on('message', (m) => (count = m));
          w.on('error', reject);
          w.on('exit', (code) => (code === 0 ? resolve(count) : reject(new Error(`worker ${n} exited ${code}`))));
        }),
      );
    }
    assert.deepEqual(await Promise.all(done), Array(WORKERS).fill(INSERTS));
    const lines = (await store.read('/memories/shared.md')).toString().split('\n').filter(Boolean);
    assert.equal(lines.length, WORKERS * INSERTS);
    const want = [];
    for (let n = 0; n < WORKERS; n++) for (let i = 0; i < INSERTS; i++) want.push(`worker ${n} line ${i}`);
    assert.deepEqual([...lines].sort(), want.sort());
    // Each worker's own lines are in the order it wrote them (each insert went on top).
    for (let n = 0; n < WORKERS; n++) {
      const mine = lines.filter((l) => l.startsWith(`worker ${n} `));
      assert.deepEqual(mine, mine.slice().sort((a, b) => Number(b.split(' ')[3]) - Number(a.split(' ')[3])));
    }
    const versions = await store.log({ path: '/memories/shared.md', limit: 1000 });
    assert.equal(versions.length, WORKERS * INSERTS + 1);
    assert.equal(new Set(versions.map((v) => v.actor)).size, WORKERS + 1);
  });
}

test('a worker that exits with calls in flight and a store never closed does not bring the process down', async (t) => {
  const [[, url]] = stores(t);
  const code = `
const { workerData } = require('node:worker_threads');
const { MemoryStore } = require(workerData.entry);
MemoryStore.open({ store: workerData.url }).then((s) => {
  for (let i = 0; i < 20; i++) s.create('/memories/w' + i + '.md', 'x');
  process.exit(0);
});
`;
  for (let round = 0; round < 4; round++) {
    const w = new Worker(code, { eval: true, workerData: { entry: path.join(PKG, 'lib', 'index.cjs'), url } });
    const exit = await new Promise((resolve, reject) => {
      w.on('error', reject);
      w.on('exit', resolve);
    });
    assert.equal(exit, 0);
  }
  const store = await memtool.MemoryStore.open({ store: url });
  t.after(() => store.close());
  assert.match(await store.view('/memories'), /^Here're the files/);
});
