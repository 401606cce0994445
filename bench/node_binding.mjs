// `view` of a small file through the Node.js binding (bindings/node), in process,
// against the official TypeScript SDK's own filesystem memory tool
// (BetaLocalFilesystemMemoryTool, called as its tool runner calls it:
// betaMemoryTool(handlers).run(input)), `memtool call` (a process per call), and a
// floor: fs.readFileSync of the same file. All in one run, on the same file.
//
//   node bench/node_binding.mjs PACKAGE_DIR MEMTOOL [--iters N]
//
// PACKAGE_DIR is the built package (build/tests/bindings/node/package after
// `cmake --build build`), whose node_modules holds the SDK from
// bindings/node/package-lock.json. Prints a Markdown table.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const [pkg, memtoolCli] = process.argv.slice(2, 4);
if (!pkg || !memtoolCli) {
  console.error('usage: node bench/node_binding.mjs PACKAGE_DIR MEMTOOL [--iters N]');
  process.exit(2);
}
const itersArg = process.argv.indexOf('--iters');
const ITERS = itersArg > 0 ? Number(process.argv[itersArg + 1]) : 20000;
const require = createRequire(path.join(path.resolve(pkg), 'package.json'));
const { MemoryStore } = require(path.resolve(pkg, 'lib', 'index.cjs'));
const { BetaLocalFilesystemMemoryTool, betaMemoryTool } = require('@anthropic-ai/sdk/tools/memory/node');

// The small file of make bench: 20 lines, 1,262 bytes.
let text = '';
for (let line = 1; line <= 20; line++) {
  const n = String(line).padStart(2, '0');
  text +=
    line === 10
      ? `line ${n}: the release token is TOKEN_AAAA and it must stay unique\n`
      : `line ${n}: the build uses cmake and ninja; tests run under ctest\n`;
}

const base = fs.mkdtempSync(path.join(process.env.BENCH_WORKDIR || os.tmpdir(), 'memtool-node-bench-'));
const root = path.join(base, 'memories');
fs.mkdirSync(root);
fs.writeFileSync(path.join(root, 'small.md'), text);
const input = { command: 'view', path: '/memories/small.md' };

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function p99(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length * 0.99)];
}

async function time(n, fn) {
  for (let i = 0; i < Math.min(1000, n); i++) await fn(); // warm up
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    out[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  return out;
}

const store = await MemoryStore.open({ store: `file:${root}`, durability: 'file' });
const ours = await store.call(input);
const sdkTool = betaMemoryTool(await BetaLocalFilesystemMemoryTool.init(base));
const theirs = await sdkTool.run(input);
// Both read the file (the SDK's text differs: it numbers an empty line after the last newline).
if (ours.isError || !theirs.startsWith(ours.content)) throw new Error(`the views differ:\n${ours.content}\n---\n${theirs}`);

const rows = [];
const binding = await time(ITERS, () => store.call(input));
const bindingSync = await time(ITERS, () => store.viewSync(input.path));
// What any call through libuv's thread pool pays at least: a hand-over there and back.
const hop = await time(ITERS, () => new Promise((resolve) => fs.stat(root, resolve)));
const sdk = await time(ITERS, () => sdkTool.run(input));
const floor = await time(ITERS, () => fs.readFileSync(path.join(root, 'small.md')));
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMTOOL_')));
const cli = await time(Math.max(20, Math.floor(ITERS / 100)), () =>
  spawnSync(memtoolCli, ['--root', root, '--durability', 'file', 'call'], { input: JSON.stringify(input), env }),
);
rows.push(['memtool binding, in process (`MemoryStore.call`)', binding]);
rows.push(['memtool binding, in process, on the calling thread (`MemoryStore.viewSync`)', bindingSync]);
rows.push(['SDK `BetaLocalFilesystemMemoryTool` via `betaMemoryTool(...).run`', sdk]);
rows.push(['`memtool call`, a process per call (spawnSync)', cli]);
rows.push(['floor: `fs.readFileSync` of the file', floor]);
rows.push(['reference: `fs.stat` with a callback (one thread-pool round trip)', hop]);
await store.close();
fs.rmSync(base, { recursive: true, force: true });

console.log(`Node.js ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0].model}), ${ITERS} views each (memtool call: ${cli.length})\n`);
console.log('| view of a 1,262-byte file | median µs | p99 µs | SDK / this |');
console.log('| --- | ---: | ---: | ---: |');
for (const [name, xs] of rows) {
  console.log(`| ${name} | ${median(xs).toFixed(2)} | ${p99(xs).toFixed(2)} | ${(median(sdk) / median(xs)).toFixed(1)}× |`);
}
