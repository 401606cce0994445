// Input no well-behaved client sends: lines far past the limit, binary
// junk, a last line without a newline. Each gets its error answer and the
// server goes on serving, in both `serve` and `mcp`.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { linesOf, runWith, scratchStore } from './lib.mjs';

const DEFAULT_LIMIT = 64 * 1024 * 1024;
const PING = '{"jsonrpc":"2.0","id":2,"method":"ping"}';
const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}';

// A create whose line is exactly `size` bytes long.
function createLine(path, size) {
  const head = `{"command":"create","path":"${path}","file_text":"`;
  const tail = '"}';
  return head + 'a'.repeat(size - head.length - tail.length) + tail;
}

test('serve: a line past the default limit gets an error and is skipped', async () => {
  const root = scratchStore();
  const huge = createLine('/memories/huge.md', DEFAULT_LIMIT + 1);
  const r = await runWith(root, ['serve'], [huge, '{"command":"view","path":"/memories"}']);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 2);
  assert.deepEqual(out[0], {
    type: 'tool_result',
    content: `Error: the line is longer than the ${DEFAULT_LIMIT}-byte limit (--max-line); split the content into smaller files`,
    is_error: true,
  });
  assert.equal(out[1].is_error, false);
  assert.ok(!existsSync(join(root, 'huge.md')));
});

test('serve: --max-line takes a line of exactly the limit and refuses one byte more', async () => {
  const root = scratchStore();
  const r = await runWith(root, ['serve', '--max-line', '1K'], [
    createLine('/memories/fits.md', 1024),
    createLine('/memories/over.md', 1025),
    createLine('/memories/way-over.md', 300000),
    '{"command":"view","path":"/memories/fits.md","view_range":[1,1]}',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 4);
  assert.equal(out[0].content, 'File created successfully at: /memories/fits.md');
  assert.equal(out[1].content, 'Error: the line is longer than the 1024-byte limit (--max-line); split the content into smaller files');
  assert.equal(out[2].content, 'Error: the line is longer than the 1024-byte limit (--max-line); split the content into smaller files');
  assert.ok(out[3].content.startsWith("Here's the content of /memories/fits.md with line numbers:\n     1\taaa"));
  assert.ok(!existsSync(join(root, 'over.md')));
});

test('serve: an oversized last line without a newline still gets its answer', async () => {
  const r = await runWith(scratchStore(), ['serve', '--max-line', '100'], '{"command":"view","path":"/memories"}\n' + 'x'.repeat(5000));
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 2);
  assert.equal(out[1].content, 'Error: the line is longer than the 100-byte limit (--max-line); split the content into smaller files');
});

test('serve: binary junk, NUL bytes and bad UTF-8 are answered, not fatal', async () => {
  const junk = Buffer.concat([
    Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x0a]),
    Buffer.from('{"command":"view","path":"/memories/\\u0000x"}\n'), // an escaped NUL reaches the path rules
    Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d, 0x0a]), // {"\xc3(":1}
    Buffer.from('{"command":"view","path":"/memories"}\n'),
  ]);
  const r = await runWith(scratchStore(), ['serve'], junk);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 4);
  assert.ok(out[0].content.startsWith('Error: the line is not valid JSON'));
  assert.equal(out[1].is_error, true);
  assert.ok(out[1].content.startsWith('Error: '));
  assert.ok(out[2].content.startsWith('Error: the line is not valid JSON'));
  assert.equal(out[3].is_error, false);
});

test('mcp: a message past the default limit gets -32600 under its id, then serving goes on', async () => {
  const huge = '{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"' + 'p'.repeat(DEFAULT_LIMIT) + '"}}';
  const r = await runWith(scratchStore(), ['mcp'], [INIT, huge, PING]);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 3);
  // The id comes before the padding, so the client gets its answer under it.
  assert.deepEqual(out[1], {
    jsonrpc: '2.0',
    id: 9,
    error: { code: -32600, message: `Invalid Request: the message is longer than the ${DEFAULT_LIMIT}-byte limit (--max-line)` },
  });
  assert.deepEqual(out[2], { jsonrpc: '2.0', id: 2, result: {} });
});

test('mcp: junk of every kind between good messages', async () => {
  const input = Buffer.concat([
    Buffer.from(INIT + '\n'),
    Buffer.from([0x00, 0x0a]),
    Buffer.from([0xc0, 0xaf, 0x0a]),
    Buffer.from('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory","arguments":{"command":"view","path":"/memories/\\u0000"}}}\n'),
    Buffer.from('}{\n'),
    Buffer.from(PING + '\n'),
  ]);
  const r = await runWith(scratchStore(), ['mcp', '--max-line', '64K'], input);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 6);
  assert.equal(out[1].error.code, -32700);
  assert.equal(out[1].id, null);
  assert.equal(out[2].error.code, -32700);
  assert.equal(out[3].result.isError, true);
  assert.ok(out[3].result.content[0].text.startsWith('Error: '));
  assert.equal(out[4].error.code, -32700);
  assert.deepEqual(out[5], { jsonrpc: '2.0', id: 2, result: {} });
});

test('serve and mcp exit 0 at once on empty input, and refuse stray arguments', async () => {
  for (const mode of ['serve', 'mcp']) {
    const r = await runWith(scratchStore(), [mode], '');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    const bad = await runWith(scratchStore(), [mode, 'extra'], '');
    assert.equal(bad.code, 2);
    const badLimit = await runWith(scratchStore(), [mode, '--max-line', 'lots'], '');
    assert.equal(badLimit.code, 2);
    const help = await runWith(scratchStore(), [mode, '--help'], '');
    assert.equal(help.code, 0);
    assert.match(help.stdout, new RegExp(`usage: memtool \\[options\\] ${mode}`));
  }
});

test('serve: a tool_use block past the limit is answered under its tool_use_id', async () => {
  const block = '{"type":"tool_use","id":"toolu_big","name":"memory","input":{"command":"create","path":"/memories/b.md","file_text":"' + 'b'.repeat(2000) + '"}}';
  const r = await runWith(scratchStore(), ['serve', '--max-line', '1K'], [block, '{"command":"view","path":"/memories"}']);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 2);
  assert.equal(out[0].tool_use_id, 'toolu_big');
  assert.equal(out[0].is_error, true);
  assert.equal(out[1].is_error, false);
});

// JSON.stringify writes half of a surrogate pair as \udXXX when text was cut
// inside an emoji; Python's json.dumps does the same. Such a line is read
// (the half as U+FFFD) and answered under its id, not refused with none.
test('serve: lone surrogates from JSON.stringify are read as U+FFFD, under the tool_use_id', async () => {
  const root = scratchStore();
  const cut = 'Launch day 🚀'.slice(0, -1); // the high half of 🚀 is left
  const block = (id, input) => JSON.stringify({ type: 'tool_use', id, name: 'memory', input });
  const lines = [
    block('toolu_a', { command: 'create', path: '/memories/cut.md', file_text: cut + '\n' }),
    block('toolu_b\udc00', { command: 'str_replace', path: '/memories/cut.md', old_str: 'day \ud83d', new_str: 'night \ude80' }),
    JSON.stringify({ command: 'view', path: '/memories/cut.md' }),
  ];
  assert.ok(lines[0].includes('\\ud83d'), 'JSON.stringify kept the lone surrogate as an escape');
  const r = await runWith(root, ['serve'], lines);
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout).map((l) => JSON.parse(l));
  assert.equal(out.length, 3);
  assert.deepEqual(out[0], { type: 'tool_result', tool_use_id: 'toolu_a', content: 'File created successfully at: /memories/cut.md', is_error: false });
  assert.equal(out[1].tool_use_id, 'toolu_b\ufffd');
  assert.equal(out[1].is_error, false);
  assert.equal(out[2].content, "Here's the content of /memories/cut.md with line numbers:\n     1\tLaunch night \ufffd");
  assert.equal(readFileSync(join(root, 'cut.md'), 'utf8'), 'Launch night \ufffd\n');
});

test('serve and mcp: a broken line is answered under the id it begins with', async () => {
  const s = await runWith(scratchStore(), ['serve'], [
    '{"type":"tool_use","id":"toolu_x","name":"memory","input":{"command":"view","path":"/memories"},}',
    '{"type":"tool_use","id":7,"name":"memory","input":{',
    '{"command":"view","path":"/memories"}',
  ]);
  assert.equal(s.code, 0, s.stderr);
  const so = linesOf(s.stdout).map((l) => JSON.parse(l));
  assert.equal(so.length, 3);
  assert.equal(so[0].tool_use_id, 'toolu_x');
  assert.ok(so[0].content.startsWith('Error: the line is not valid JSON'));
  // A tool_use id is a string: an integer one is not echoed as "".
  assert.ok(!('tool_use_id' in so[1]));
  assert.equal(so[1].is_error, true);
  assert.equal(so[2].is_error, false);

  const m = await runWith(scratchStore(), ['mcp'], [
    INIT,
    '{"jsonrpc":"2.0","id":"call-3","method":"tools/call","params":{"name":"memory","arguments":{"command":"view","path":"/memories"}},}',
    '{"jsonrpc":"2.0","id":4.5,"method":"ping",}',
    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_view","arguments":{"path":"/memories/\\ud83c"}}}',
    PING,
  ]);
  assert.equal(m.code, 0, m.stderr);
  const mo = linesOf(m.stdout).map((l) => JSON.parse(l));
  assert.equal(mo.length, 5);
  assert.equal(mo[1].id, 'call-3');
  assert.equal(mo[1].error.code, -32700);
  // 4.5 is no integer: not answered as request 4.
  assert.equal(mo[2].id, null);
  assert.equal(mo[2].error.code, -32700);
  assert.equal(mo[3].id, 5);
  assert.deepEqual(mo[3].result.content, [{ type: 'text', text: 'The path /memories/\ufffd does not exist. Please provide a valid path.' }]);
  assert.deepEqual(mo[4], { jsonrpc: '2.0', id: 2, result: {} });
});
