// Every memory command through an MCP client, checked against the exact
// texts of SPEC section 3. `call(name, args)` runs one tools/call and
// returns { text, isError }; each client test supplies its own.
import assert from 'node:assert/strict';

const LISTING = 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:';

// The tools/list answer both clients must see.
export function checkTools(tools) {
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(tools.map((t) => t.name).sort(), ['memory', 'memory_search', 'memory_view']);

  const memory = byName.memory;
  assert.equal(memory.inputSchema.type, 'object');
  assert.deepEqual(memory.inputSchema.required, ['command']);
  assert.deepEqual(memory.inputSchema.properties.command.enum, [
    'view', 'create', 'str_replace', 'insert', 'delete', 'rename',
  ]);
  const props = memory.inputSchema.properties;
  assert.deepEqual(Object.keys(props).sort(), [
    'command', 'file_text', 'insert_line', 'insert_text', 'new_path', 'new_str', 'old_path',
    'old_str', 'path', 'view_range',
  ]);
  for (const k of ['path', 'file_text', 'old_str', 'new_str', 'insert_text', 'old_path', 'new_path']) {
    assert.equal(props[k].type, 'string', k);
  }
  assert.equal(props.insert_line.type, 'integer');
  assert.deepEqual(
    { type: props.view_range.type, items: props.view_range.items, min: props.view_range.minItems, max: props.view_range.maxItems },
    { type: 'array', items: { type: 'integer' }, min: 2, max: 2 },
  );
  assert.equal(memory.annotations.readOnlyHint, false);
  assert.equal(memory.annotations.destructiveHint, true);
  assert.equal(memory.annotations.idempotentHint, false);
  assert.equal(memory.annotations.openWorldHint, false);

  const view = byName.memory_view;
  assert.deepEqual(Object.keys(view.inputSchema.properties).sort(), ['path', 'view_range']);
  assert.deepEqual(view.inputSchema.required, ['path']);
  assert.equal(view.annotations.readOnlyHint, true);
  assert.equal(view.annotations.openWorldHint, false);

  const search = byName.memory_search;
  assert.deepEqual(Object.keys(search.inputSchema.properties).sort(), ['limit', 'path', 'query']);
  assert.deepEqual(search.inputSchema.required, ['query']);
  assert.equal(search.annotations.readOnlyHint, true);
  assert.equal(search.annotations.destructiveHint, false);
  assert.match(search.description, /Examples: /);
}

// The server's instructions must say how to use the directory.
export function checkInstructions(text) {
  assert.equal(typeof text, 'string');
  assert.match(text, /\/memories/);
  assert.match(text, /first/i);
  assert.match(text, /tidy/i);
}

export async function runScenario(call) {
  const ok = async (name, args, want) => {
    const r = await call(name, args);
    assert.equal(r.text, want, `${name} ${JSON.stringify(args)}`);
    assert.equal(r.isError, false, `${name} ${JSON.stringify(args)} should succeed`);
  };
  const fails = async (name, args, want) => {
    const r = await call(name, args);
    assert.equal(r.text, want, `${name} ${JSON.stringify(args)}`);
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} should fail`);
  };
  const P = '/memories/notes.md';

  // view: an empty store, then a file, a range and a bad range.
  await ok('memory', { command: 'view', path: '/memories' }, `${LISTING}\n0B\t/memories`);
  await ok('memory', { command: 'create', path: P, file_text: 'alpha\nbeta\ngamma\n' },
    `File created successfully at: ${P}`);
  await fails('memory', { command: 'create', path: P, file_text: 'again' }, `Error: File ${P} already exists`);
  await ok('memory', { command: 'view', path: P },
    `Here's the content of ${P} with line numbers:\n     1\talpha\n     2\tbeta\n     3\tgamma`);
  await ok('memory_view', { path: P, view_range: [2, -1] },
    `Here's the content of ${P} with line numbers:\n     2\tbeta\n     3\tgamma`);
  await fails('memory', { command: 'view', path: P, view_range: [9, 12] },
    'Error: Invalid view_range [9, 12]: the file has 3 lines; start must be within [1, 3]');
  await fails('memory_view', { path: '/memories/missing.md' },
    'The path /memories/missing.md does not exist. Please provide a valid path.');

  // str_replace: success with its snippet, no match, several matches.
  await ok('memory', { command: 'str_replace', path: P, old_str: 'beta', new_str: 'BETA' },
    'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n' +
      '     1\talpha\n     2\tBETA\n     3\tgamma');
  await fails('memory', { command: 'str_replace', path: P, old_str: 'zzz', new_str: 'y' },
    `No replacement was performed, old_str \`zzz\` did not appear verbatim in ${P}.`);
  await fails('memory', { command: 'str_replace', path: P, old_str: 'a', new_str: 'b' },
    'No replacement was performed. Multiple occurrences of old_str `a` in lines: 1, 3. Please ensure it is unique');
  await fails('memory', { command: 'str_replace', path: '/memories/none.md', old_str: 'a', new_str: 'b' },
    'Error: The path /memories/none.md does not exist. Please provide a valid path.');

  // insert: success, then a line out of range.
  await ok('memory', { command: 'insert', path: P, insert_line: 1, insert_text: 'inserted\n' },
    `The file ${P} has been edited.`);
  await ok('memory_view', { path: P },
    `Here's the content of ${P} with line numbers:\n     1\talpha\n     2\tinserted\n     3\tBETA\n     4\tgamma`);
  await fails('memory', { command: 'insert', path: P, insert_line: 99, insert_text: 'x' },
    'Error: Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 4]');
  await fails('memory', { command: 'insert', path: '/memories/none.md', insert_line: 0, insert_text: 'x' },
    'Error: The path /memories/none.md does not exist');

  // rename: success into a new directory, a missing source, an existing destination.
  const Q = '/memories/archive/notes.md';
  await ok('memory', { command: 'rename', old_path: P, new_path: Q }, `Successfully renamed ${P} to ${Q}`);
  await fails('memory', { command: 'rename', old_path: P, new_path: Q }, `Error: The path ${P} does not exist`);
  await ok('memory', { command: 'create', path: P, file_text: '' }, `File created successfully at: ${P}`);
  await fails('memory', { command: 'rename', old_path: P, new_path: Q }, `Error: The destination ${Q} already exists`);
  await ok('memory_view', { path: '/memories' },
    `${LISTING}\n26B\t/memories\n26B\t/memories/archive/\n26B\t/memories/archive/notes.md\n0B\t/memories/notes.md`);

  // memory_view only ever views, whatever else it is sent.
  await ok('memory_view', { path: P, command: 'delete' }, `Here's the content of ${P} with line numbers:`);

  // delete: a file, a directory, something missing, the root.
  await ok('memory', { command: 'delete', path: P }, `Successfully deleted ${P}`);
  await fails('memory', { command: 'delete', path: P }, `Error: The path ${P} does not exist`);
  await ok('memory', { command: 'delete', path: '/memories/archive' }, 'Successfully deleted /memories/archive');
  await fails('memory', { command: 'delete', path: '/memories' }, 'Error: Cannot delete the /memories directory itself');
  await ok('memory', { command: 'view', path: '/memories' }, `${LISTING}\n0B\t/memories`);

  // Refusals and unknown commands are tool errors, not protocol errors.
  await fails('memory', { command: 'view', path: '/etc/passwd' }, 'Error: Path must start with /memories, got: /etc/passwd');
  await fails('memory', { command: 'bogus' },
    "Error: Unknown command: 'bogus'. Valid commands are: view, create, str_replace, insert, delete, rename");
  const noPath = await call('memory', { command: 'create', file_text: 'x' });
  assert.equal(noPath.isError, true);
  assert.match(noPath.text, /^Error: .*path/);

  // memory_search: read-only, best first, the lines and the first match marked.
  const S = '/memories/ops/deploy.md';
  await ok('memory', { command: 'create', path: S, file_text: 'The deploy script\nruns nightly, deploy it\n' },
    `File created successfully at: ${S}`);
  await ok('memory_search', { query: 'DEPLOY' },
    `1 memory matches, best match first:\n${S} (lines 1, 2)\n  1: The **deploy** script\n  2: runs nightly, **deploy** it`);
  await ok('memory_search', { query: '"script runs"', path: '/memories/ops', limit: 3 },
    `1 memory matches, best match first:\n${S} (line 1)\n  1: The deploy **script runs** nightly, deploy it`);
  await ok('memory_search', { query: 'nowhere' }, 'No memories match.');
  await fails('memory_search', { query: '"open' },
    'Error: a quote in the query is not closed: end the phrase with "');
  await fails('memory_search', { query: 'x', command: 'delete' },
    'Error: memory_search takes query, path and limit, not command');
  await fails('memory_search', { path: '/memories' }, 'Error: memory_search needs query, a string of words to find');
  await ok('memory', { command: 'delete', path: '/memories/ops' }, 'Successfully deleted /memories/ops');
}
