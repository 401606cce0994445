// `memtool serve` under load: 10,000 mixed requests through one process
// come back in order, one line each; answers are flushed line by line;
// many serve processes share one store and no edit is lost.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { LineServer, linesOf, runWith, scratchStore } from './lib.mjs';

const LISTING = 'Here\'re the files and directories up to 2 levels deep in';

// Request i of the mixed stream and what its answer must be. Every kind
// refers to files made by earlier requests, so an answer out of order or
// lost shows up as a wrong text.
function mixed(i) {
  const base = i - (i % 8);
  const file = (n) => `/memories/d${n % 50}/f${n}.md`;
  switch (i % 8) {
    case 0:
      return {
        line: JSON.stringify({ command: 'create', path: file(i), file_text: `line ${i}\n` }),
        content: `File created successfully at: ${file(i)}`,
        isError: false,
      };
    case 1:
      return {
        line: JSON.stringify({ type: 'tool_use', id: `toolu_${i}`, name: 'memory', input: { command: 'view', path: file(base) } }),
        content: `Here's the content of ${file(base)} with line numbers:\n     1\tline ${base}`,
        isError: false,
        id: `toolu_${i}`,
      };
    case 2:
      return {
        line: JSON.stringify({ command: 'str_replace', path: file(base), old_str: `line ${base}`, new_str: `LINE ${base}` }),
        content: `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tLINE ${base}`,
        isError: false,
      };
    case 3:
      return {
        line: JSON.stringify({ command: 'insert', path: file(base), insert_line: 1, insert_text: `tail ${i}` }),
        content: `The file ${file(base)} has been edited.`,
        isError: false,
      };
    case 4:
      return { line: `not json ${i}`, contentPrefix: 'Error: the line is not valid JSON', isError: true };
    case 5:
      return {
        line: JSON.stringify({ type: 'tool_use', id: `toolu_${i}`, name: 'memory', input: { command: 'view', path: file(base), view_range: [2, 2] } }),
        content: `Here's the content of ${file(base)} with line numbers:\n     2\ttail ${base + 3}`,
        isError: false,
        id: `toolu_${i}`,
      };
    case 6:
      return {
        line: `[${i}]`,
        content: 'Error: each line must be a JSON object (a tool input or a tool_use block), got an array',
        isError: true,
      };
    default:
      return {
        line: JSON.stringify({ command: 'delete', path: file(base) }),
        content: `Successfully deleted ${file(base)}`,
        isError: false,
      };
  }
}

test('10,000 mixed requests come back in order, one line each', async () => {
  const N = 10000;
  const reqs = [];
  const lines = [];
  for (let i = 0; i < N; i++) {
    const r = mixed(i);
    reqs.push(r);
    lines.push(r.line);
    if (i % 97 === 0) lines.push(''); // blank lines get no answer
  }
  const started = Date.now();
  // Ordering is the point here, not fsync: skip the flushes so a busy disk
  // cannot make the test slow.
  const r = await runWith(scratchStore(), ['--durability', 'none', 'serve'], lines);
  const seconds = (Date.now() - started) / 1000;
  assert.equal(r.code, 0, r.stderr);
  const out = linesOf(r.stdout);
  assert.equal(out.length, N, 'one answer per non-blank line');
  for (let i = 0; i < N; i++) {
    const got = JSON.parse(out[i]);
    const want = reqs[i];
    assert.equal(got.type, 'tool_result', `answer ${i}`);
    assert.equal(got.is_error, want.isError, `answer ${i}: ${out[i]}`);
    if (want.content !== undefined) assert.equal(got.content, want.content, `answer ${i}`);
    else assert.ok(got.content.startsWith(want.contentPrefix), `answer ${i}: ${got.content}`);
    assert.equal(got.tool_use_id, want.id, `answer ${i} tool_use_id`);
  }
  console.log(`# ${N} requests in ${seconds.toFixed(2)} s`);
});

test('each answer is written as soon as its line is read', async () => {
  const server = new LineServer(scratchStore(), ['serve']);
  try {
    // No stdin EOF between requests: an answer held in a buffer would hang here.
    for (let i = 0; i < 20; i++) {
      const got = JSON.parse(await server.send(JSON.stringify({ command: 'create', path: `/memories/x${i}.md`, file_text: '' })));
      assert.equal(got.content, `File created successfully at: /memories/x${i}.md`);
    }
    server.write('');
    const got = JSON.parse(await server.send(JSON.stringify({ type: 'tool_use', id: 'last', name: 'memory', input: { command: 'view', path: '/memories' } })));
    assert.equal(got.tool_use_id, 'last');
    assert.ok(got.content.startsWith(LISTING));
  } finally {
    assert.equal(await server.close(), 0);
  }
});

test('concurrent serve processes on one store lose no edit', async () => {
  const root = scratchStore();
  const setup = await runWith(root, ['serve'], [JSON.stringify({ command: 'create', path: '/memories/shared.md', file_text: '' })]);
  assert.equal(JSON.parse(setup.stdout).is_error, false);

  const P = 6;
  const EACH = 150;
  const runs = [];
  for (let p = 0; p < P; p++) {
    const lines = [];
    for (let i = 0; i < EACH; i++) {
      lines.push(JSON.stringify({ command: 'insert', path: '/memories/shared.md', insert_line: 0, insert_text: `p${p}-${i}` }));
      lines.push(JSON.stringify({ command: 'create', path: `/memories/p${p}/n${i}.md`, file_text: `${p}/${i}` }));
      // Every process races to create the same files: exactly one may win each.
      lines.push(JSON.stringify({ command: 'create', path: `/memories/race/r${i}.md`, file_text: `by ${p}` }));
    }
    runs.push(runWith(root, ['--durability', 'none', 'serve'], lines));
  }
  const results = await Promise.all(runs);
  const raceWins = new Array(EACH).fill(0);
  results.forEach((r, p) => {
    assert.equal(r.code, 0, r.stderr);
    const out = linesOf(r.stdout).map((l) => JSON.parse(l));
    assert.equal(out.length, EACH * 3);
    for (let i = 0; i < EACH; i++) {
      assert.deepEqual(out[3 * i], { type: 'tool_result', content: 'The file /memories/shared.md has been edited.', is_error: false });
      assert.equal(out[3 * i + 1].content, `File created successfully at: /memories/p${p}/n${i}.md`);
      const race = out[3 * i + 2];
      if (!race.is_error) {
        assert.equal(race.content, `File created successfully at: /memories/race/r${i}.md`);
        raceWins[i]++;
      } else {
        assert.equal(race.content, `Error: File /memories/race/r${i}.md already exists`);
      }
    }
  });
  assert.deepEqual(raceWins, new Array(EACH).fill(1), 'each raced file created exactly once');

  // Every insert landed: the file holds each process's lines, each once.
  const text = readFileSync(join(root, 'shared.md'), 'utf8');
  const got = text.split('\n').filter((l) => l !== '').sort();
  const want = [];
  for (let p = 0; p < P; p++) for (let i = 0; i < EACH; i++) want.push(`p${p}-${i}`);
  assert.deepEqual(got, want.sort());
  // And each process's own lines are in its order (later inserts go on top).
  const lines = text.split('\n');
  for (let p = 0; p < P; p++) {
    const mine = lines.filter((l) => l.startsWith(`p${p}-`));
    assert.deepEqual(mine, Array.from({ length: EACH }, (_, i) => `p${p}-${EACH - 1 - i}`));
  }
});
