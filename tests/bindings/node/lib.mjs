// What the Node.js binding's tests share: the package under test (built by CMake into
// MEMTOOL_NODE_PACKAGE), scratch directories, and the memtool command to compare with.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this test through ctest (tests/bindings/node)`);
  return v;
}

export const PKG = need('MEMTOOL_NODE_PACKAGE');
export const MEMTOOL = need('MEMTOOL');
/** node as the tests run it (with the sanitizer's runtime in an ASan build). */
export const NODE_SH = need('MEMTOOL_TEST_NODE');
export const HERE = path.dirname(new URL(import.meta.url).pathname);

export const memtool = await import(pathToFileURL(path.join(PKG, 'lib', 'index.mjs')).href);
export const requirePkg = createRequire(path.join(PKG, 'package.json'));

export function scratch(t, prefix = 'memtool-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `memtool call` on the same store: its exit status and exact stdout. */
export function cliCall(storeUrl, input, ...opts) {
  // Nor the sanitizer runtime node.sh preloads for node: an ASan memtool has its own.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('MEMTOOL_') && k !== 'LD_PRELOAD'),
  );
  const r = spawnSync(MEMTOOL, ['--store', storeUrl, ...opts, 'call'], {
    input: typeof input === 'string' ? input : JSON.stringify(input),
    env,
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The stores every API test runs on. */
export function stores(t) {
  const dir = scratch(t);
  return [
    ['file', `file:${path.join(dir, 'files')}`],
    ['sqlite', `sqlite:${path.join(dir, 'memories.db')}`],
  ];
}
