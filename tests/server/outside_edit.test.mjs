// A file store's memory edited by hand (an editor, a script): the API
// serves it as it is now, and a precondition on the old content fails.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './lib.mjs';

const sha = (s) => createHash('sha256').update(s, 'utf8').digest('hex');

test('an edit made outside memtool is what the API serves', async () => {
  const srv = await startServer();
  const ms = new Anthropic({ apiKey: srv.keys.a, baseURL: srv.baseURL, maxRetries: 0 }).beta.memoryStores;
  try {
    const S = (await ms.create({ name: 'by hand' })).id;
    const m = await ms.memories.create(S, { path: '/hand.md', content: 'before\n' });
    writeFileSync(`${srv.dir}/store/.memtool/tenants/alice~${S}/hand.md`, 'edited by hand\n');
    const got = await ms.memories.retrieve(m.id, { memory_store_id: S });
    assert.equal(got.content, 'edited by hand\n');
    assert.equal(got.content_sha256, sha('edited by hand\n'));
    await assert.rejects(
      ms.memories.update(m.id, { memory_store_id: S, content: 'x', precondition: { type: 'content_sha256', content_sha256: m.content_sha256 } }),
      (e) => e.status === 409,
    );
    const v = [];
    for await (const x of ms.memoryVersions.list(S, { memory_id: m.id })) v.push(x.created_by);
    assert.equal(v[0], null, 'the outside edit is a version of its own, by nobody the API knows');
  } finally {
    await srv.stop();
  }
});
