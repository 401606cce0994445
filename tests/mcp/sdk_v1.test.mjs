// The official TypeScript SDK v1 client (@modelcontextprotocol/sdk) against
// `memtool mcp`: handshake era, tools, every command's exact text.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { MEMTOOL, RecordingTransport, scratchStore } from './lib.mjs';
import { checkInstructions, checkTools, runScenario } from './scenario.mjs';

async function connect(root) {
  const client = new Client({ name: 'memtool-test-v1', version: '1.0.0' });
  const transport = new RecordingTransport(
    new StdioClientTransport({ command: MEMTOOL, args: ['--root', root, 'mcp'], stderr: 'inherit' }),
  );
  await client.connect(transport);
  return { client, transport };
}

function textOf(result) {
  assert.equal(result.content.length, 1);
  assert.equal(result.content[0].type, 'text');
  return { text: result.content[0].text, isError: result.isError === true };
}

test('v1 client: handshake, tools and every command', async () => {
  const { client, transport } = await connect(scratchStore());
  try {
    assert.equal(client.getServerVersion().name, 'memtool');
    // The v1 client asks for its newest revision, which memtool echoes.
    const init = transport.responseTo('initialize');
    assert.equal(transport.sent[0].params.protocolVersion, '2025-11-25');
    assert.equal(init.result.protocolVersion, '2025-11-25');
    assert.equal(init.result.resultType, undefined);
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
    checkInstructions(client.getInstructions());
    await client.ping();

    const { tools } = await client.listTools();
    checkTools(tools);

    await runScenario(async (name, args) => textOf(await client.callTool({ name, arguments: args })));

    // An unknown tool is a protocol error, not a tool result.
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), (e) => e.code === -32602 && /Unknown tool: nope/.test(e.message));
  } finally {
    await client.close();
  }
});

// JSON.stringify writes a lone surrogate as \udXXX when text was cut inside an
// emoji. The SDK sends such a request as it is: it must get its answer, not
// leave the client waiting for a reply that never comes.
test('v1 client: a lone surrogate in an argument is answered', async () => {
  const { client, transport } = await connect(scratchStore());
  try {
    const cut = 'Launch day \ud83d'; // half of 🚀
    const created = textOf(await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/cut.md', file_text: cut } }, undefined, { timeout: 10000 }));
    assert.deepEqual(created, { text: 'File created successfully at: /memories/cut.md', isError: false });
    const seen = textOf(await client.callTool({ name: 'memory_view', arguments: { path: '/memories/cut.md' } }, undefined, { timeout: 10000 }));
    assert.equal(seen.text, "Here's the content of /memories/cut.md with line numbers:\n     1\tLaunch day \ufffd");
    // The request really went out with the lone escape.
    assert.ok(transport.sent.some((m) => JSON.stringify(m).includes('\\ud83d')));
  } finally {
    await client.close();
  }
});
