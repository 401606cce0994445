// The official TypeScript SDK v2 client (@modelcontextprotocol/client):
// in `auto` mode it probes with server/discover and must settle on the
// stateless 2026-07-28 revision; in its default legacy mode it must get
// the handshake era. Both run every command.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { MEMTOOL, RecordingTransport, scratchStore } from './lib.mjs';
import { checkInstructions, checkTools, runScenario } from './scenario.mjs';

async function connect(root, versionNegotiation) {
  const client = new Client({ name: 'memtool-test-v2', version: '2.0.0' }, { versionNegotiation });
  const transport = new StdioClientTransport({ command: MEMTOOL, args: ['--root', root, 'mcp'], stderr: 'inherit' });
  await client.connect(transport);
  return client;
}

function textOf(result) {
  assert.equal(result.content.length, 1);
  assert.equal(result.content[0].type, 'text');
  return { text: result.content[0].text, isError: result.isError === true };
}

async function exercise(client) {
  assert.equal(client.getServerVersion()?.name ?? 'memtool', 'memtool');
  checkInstructions(client.getInstructions());
  const { tools } = await client.listTools();
  checkTools(tools);
  await runScenario(async (name, args) => textOf(await client.callTool({ name, arguments: args })));
  await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), (e) => e.code === -32602 && /Unknown tool: nope/.test(e.message));
}

test('v2 client in auto mode negotiates 2026-07-28', async () => {
  const client = await connect(scratchStore(), { mode: 'auto' });
  try {
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const discover = client.getDiscoverResult();
    assert.ok(discover.supportedVersions.includes('2026-07-28'));
    assert.deepEqual(discover.capabilities.tools, { listChanged: false });
    await exercise(client);
  } finally {
    await client.close();
  }
});

test('v2 client pinned to 2026-07-28', async () => {
  const client = await connect(scratchStore(), { mode: { pin: '2026-07-28' } });
  try {
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const { tools } = await client.listTools();
    checkTools(tools);
  } finally {
    await client.close();
  }
});

test('v2 client in legacy mode gets the handshake era', async () => {
  const client = await connect(scratchStore(), { mode: 'legacy' });
  try {
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    await client.ping();
    await exercise(client);
  } finally {
    await client.close();
  }
});

test('v2 client in auto mode over a recording transport: the wire of 2026-07-28', async () => {
  const client = new Client({ name: 'memtool-test-v2', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const transport = new RecordingTransport(
    new StdioClientTransport({ command: MEMTOOL, args: ['--root', scratchStore(), 'mcp'], stderr: 'inherit' }),
  );
  await client.connect(transport);
  try {
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    await client.listTools();
    await client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories' } });

    // No handshake: the first message is the discover probe.
    assert.equal(transport.sent[0].method, 'server/discover');
    assert.ok(!transport.sent.some((m) => m.method === 'initialize'));
    for (const m of transport.sent.filter((x) => x.id !== undefined)) {
      assert.equal(m.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
    }
    for (const m of transport.received) {
      assert.equal(m.result.resultType, 'complete');
      assert.equal(m.result._meta['io.modelcontextprotocol/serverInfo'].name, 'memtool');
    }
    const discover = transport.responseTo('server/discover').result;
    assert.equal(discover.supportedVersions[0], '2026-07-28');
    assert.equal(typeof discover.ttlMs, 'number');
    assert.equal(discover.cacheScope, 'public');
    const list = transport.responseTo('tools/list').result;
    assert.ok(Number.isInteger(list.ttlMs) && list.ttlMs >= 0);
    assert.equal(list.cacheScope, 'public');
  } finally {
    await client.close();
  }
});

// The v2 client in both eras sends text cut inside an emoji (a lone surrogate,
// as JSON.stringify writes it) and must get its answer, not time out.
for (const mode of ['auto', 'legacy']) {
  test(`v2 client (${mode}): a lone surrogate in an argument is answered`, async () => {
    const client = await connect(scratchStore(), { mode });
    try {
      const cut = 'Launch day 🚀'.slice(0, -1);
      const created = textOf(await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/cut\udc00.md', file_text: cut } }, { timeout: 10000 }));
      assert.deepEqual(created, { text: 'File created successfully at: /memories/cut\ufffd.md', isError: false });
      const seen = textOf(await client.callTool({ name: 'memory_view', arguments: { path: '/memories/cut\ufffd.md' } }, { timeout: 10000 }));
      assert.equal(seen.text, "Here's the content of /memories/cut\ufffd.md with line numbers:\n     1\tLaunch day \ufffd");
    } finally {
      await client.close();
    }
  });
}
