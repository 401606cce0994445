// The npm package as a user gets it: `npm pack` makes the tarball, and `npm install`
// of that tarball, offline, builds the addon against libmemtool (found through
// MEMTOOL_LIBRARY_DIR here) with the Node headers on this machine; one call then
// works from CommonJS and from an ES module.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { HERE, NODE_SH, scratch } from './lib.mjs';

const SRC = path.resolve(HERE, '..', '..', '..', 'bindings', 'node');

function npm(args, opts) {
  const r = spawnSync('npm', args, { encoding: 'utf8', ...opts });
  assert.equal(r.status, 0, `npm ${args.join(' ')}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('npm pack makes a tarball that installs offline and runs', async (t) => {
  const dir = scratch(t, 'memtool-node-pack-');
  const env = {
    ...process.env,
    npm_config_nodedir: process.env.MEMTOOL_NODE_DIR,
    npm_config_cache: path.join(dir, 'npm-cache'),
    npm_config_update_notifier: 'false',
  };
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], { cwd: SRC, env }));
  const files = packed[0].files.map((f) => f.path).sort();
  assert.deepEqual(files, [
    'README.md',
    'binding.gyp',
    'examples/tool-runner.mjs',
    'lib/core.cjs',
    'lib/index.cjs',
    'lib/index.d.cts',
    'lib/index.d.mts',
    'lib/index.mjs',
    'lib/native.cjs',
    'package.json',
    'scripts/find-memtool.js',
    'src/addon.c',
  ]);
  const tarball = path.join(dir, packed[0].filename);

  const app = path.join(dir, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  npm(['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: app, env });
  assert.ok(fs.existsSync(path.join(app, 'node_modules', 'memtool', 'build', 'Release', 'memtool.node')));

  const store = `file:${path.join(dir, 'memories')}`;
  const cjs = `
const { MemoryStore } = require('memtool');
MemoryStore.open({ store: process.argv[1] }).then(async (s) => {
  process.stdout.write(await s.create('/memories/a.md', 'hello\\n'));
  await s.close();
});`;
  const esm = `
import { MemoryStore } from 'memtool';
const s = await MemoryStore.open({ store: process.argv[1] });
process.stdout.write((await s.call({ command: 'view', path: '/memories/a.md' })).content);
await s.close();`;
  const run = (args) => execFileSync('sh', [NODE_SH, ...args, store], { cwd: app, encoding: 'utf8' });
  assert.equal(run(['-e', cjs]), 'File created successfully at: /memories/a.md');
  assert.equal(run(['--input-type=module', '-e', esm]), "Here's the content of /memories/a.md with line numbers:\n     1\thello");
});

test('without libmemtool the install stops with a message that says what to do', async (t) => {
  const dir = scratch(t, 'memtool-node-pack-');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMTOOL_')));
  // A prefix that holds no memtool, and no pkg-config or standard path that could.
  env.MEMTOOL_PREFIX = dir;
  const r = spawnSync(process.execPath, [path.join(SRC, 'scripts', 'find-memtool.js'), 'libs'], { env, encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^memtool: cannot build the Node\.js addon: MEMTOOL_PREFIX=.* holds no include\/memtool\.h/);
  assert.match(r.stderr, /MEMTOOL_LIBRARY_DIR=/);
});
