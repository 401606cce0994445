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
