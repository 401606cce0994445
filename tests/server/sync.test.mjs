// The SDK's own SessionMemoryStores keeps a local folder and a memory store
// of memtool server in sync: local files reach the store, changes made
// through the API reach the folder, and so do those made by the memory
// tool (memtool --memory-store ... call), which the API then serves too.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, unlinkSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { SessionMemoryStores } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { startServer, memtool } from './lib.mjs';

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
  const work = mkdtempSync(join(tmpdir(), 'memtool-sync-'));
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
