// The in-process suites for the official TypeScript SDK's memory tool
// (BetaLocalFilesystemMemoryTool from @anthropic-ai/sdk/tools/memory/node),
// called the way the SDK's tool runner calls it: betaMemoryTool(handlers).run(input).
//
//   node sdk_bench.mjs ops     --base DIR [--iters N] [--view-iters N]
//   node sdk_bench.mjs listing --base DIR --param FILES [--iters N] [--rss-out FILE]
//   node sdk_bench.mjs bigfile --base DIR --param BYTES [--iters N] [--ops view_range,str_replace]
//
// The SDK keeps its files in DIR/memories. Workloads, fixtures and the CSV rows
// are the same as mt_bench's (bench.c, common.c), byte for byte.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BetaLocalFilesystemMemoryTool, betaMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';

const TOKEN_A = 'TOKEN_AAAA';
const TOKEN_B = 'TOKEN_BBBB';
const INSERT_LINE = 10;
const INSERT_TEXT = 'inserted by the benchmark\n';
const BATCH = 250;

function smallText() {
  let s = '';
  for (let line = 1; line <= 20; line++) {
    const n = String(line).padStart(2, '0');
    s +=
      line === 10
        ? `line ${n}: the release token is ${TOKEN_A} and it must stay unique\n`
        : `line ${n}: the build uses cmake and ninja; tests run under ctest\n`;
  }
  return s;
}

function parseArgs(argv) {
  const a = { iters: 1000, viewIters: 20000, param: '', ops: 'view_range,str_replace' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) throw new Error(`${k} needs a value`);
    if (k === '--base') a.base = v;
    else if (k === '--iters') a.iters = Number(v);
    else if (k === '--view-iters') a.viewIters = Number(v);
    else if (k === '--param') a.param = v;
    else if (k === '--ops') a.ops = v;
    else if (k === '--rss-out') a.rssOut = v;
    else throw new Error(`unknown option ${k}`);
  }
  if (!a.base || !(a.iters > 0)) throw new Error('usage: sdk_bench.mjs ops|listing|bigfile --base DIR ...');
  return a;
}

// Nearest rank, as bench_stats_of in common.c.
function stats(samples) {
  const s = Float64Array.from(samples).sort();
  const rank = (p) => s[Math.min(s.length, Math.max(1, Math.ceil(p * s.length - 1e-6))) - 1];
  const sum = s.reduce((x, y) => x + y, 0);
  return { n: s.length, median: rank(0.5), p99: rank(0.99), mean: sum / s.length, min: s[0] };
}

function row(suite, op, durability, param, samples) {
  const st = stats(samples);
  const f = (x) => x.toFixed(3);
  process.stdout.write(
    `${suite},${op},sdk,${durability},${param},${st.n},${f(st.median)},${f(st.p99)},${f(st.mean)},${f(st.min)}\n`,
  );
}

const warmupOf = (iters) => (iters >= 20 ? Math.floor(iters / 20) : 1);

// One call, in microseconds; a thrown error (the SDK's way of failing) stops the run.
async function timed(tool, input) {
  const t0 = process.hrtime.bigint();
  await tool.run(input);
  return Number(process.hrtime.bigint() - t0) / 1000;
}

async function repeat(tool, input, iters, warm) {
  const out = [];
  for (let i = 0; i < warm + iters; i++) {
    const us = await timed(tool, input);
    if (i >= warm) out.push(us);
  }
  return out;
}

// Setup writes reach the disk before timing, as settle() in bench.c does with syncfs.
function settle(dir) {
  execFileSync('sync', ['-f', dir]);
}

// Empty the directory but keep it, as bench_empty_dir does for the C implementations.
function freshDir(p) {
  fs.mkdirSync(p, { recursive: true });
  for (const name of fs.readdirSync(p)) fs.rmSync(path.join(p, name), { recursive: true, force: true });
}

async function open(base) {
  const handlers = await BetaLocalFilesystemMemoryTool.init(base);
  return { tool: betaMemoryTool(handlers), root: path.join(base, 'memories') };
}

const pad6 = (i) => String(i).padStart(6, '0');

async function cmdOps(a) {
  const { tool, root } = await open(a.base);
  const small = smallText();

  if (a.viewIters > 0) {
    fs.writeFileSync(path.join(root, 'small.md'), small);
    freshDir(path.join(root, 'dir100'));
    for (let i = 0; i < 100; i++)
      fs.writeFileSync(path.join(root, 'dir100', `f${String(i).padStart(3, '0')}.md`), small);
    settle(root);
    let n = a.viewIters;
    row('inproc', 'view', '-', 'small file', await repeat(tool, { command: 'view', path: '/memories/small.md' }, n, warmupOf(n)));
    n = Math.max(1, Math.floor(a.viewIters / 10));
    row('inproc', 'view_dir', '-', '100 entries', await repeat(tool, { command: 'view', path: '/memories/dir100' }, n, warmupOf(n)));
  }

  // The SDK has one durability: it fsyncs a written file, never a directory,
  // which is memtool's `file`.
  const batched = async (op, dir) => {
    const warm = warmupOf(a.iters);
    const total = a.iters + warm;
    const out = [];
    for (let done = 0; done < total; ) {
      const n = Math.min(BATCH, total - done);
      freshDir(path.join(root, dir));
      const inputs = [];
      for (let i = 0; i < n; i++) {
        const rel = `${dir}/f${pad6(done + i)}.md`;
        const p = `/memories/${rel}`;
        if (op !== 'create') fs.writeFileSync(path.join(root, rel), small);
        if (op === 'create') inputs.push({ command: 'create', path: p, file_text: small });
        else if (op === 'insert')
          inputs.push({ command: 'insert', path: p, insert_line: INSERT_LINE, insert_text: INSERT_TEXT });
        else if (op === 'delete') inputs.push({ command: 'delete', path: p });
        else inputs.push({ command: 'rename', old_path: p, new_path: `/memories/${dir}/g${pad6(done + i)}.md` });
      }
      settle(root);
      const skip = done === 0 ? Math.min(warm, n) : 0;
      for (let i = 0; i < n; i++) {
        const us = await timed(tool, inputs[i]);
        if (i >= skip) out.push(us);
      }
      done += n;
    }
    freshDir(path.join(root, dir));
    settle(root);
    return out;
  };

  const strReplace = async () => {
    fs.writeFileSync(path.join(root, 'edit.md'), small);
    settle(root);
    const inputs = [
      { command: 'str_replace', path: '/memories/edit.md', old_str: TOKEN_A, new_str: TOKEN_B },
      { command: 'str_replace', path: '/memories/edit.md', old_str: TOKEN_B, new_str: TOKEN_A },
    ];
    const warm = warmupOf(a.iters);
    const n = a.iters + warm;
    const out = [];
    for (let i = 0; i < n + (n & 1); i++) {
      const us = await timed(tool, inputs[i & 1]);
      if (i >= warm) out.push(us);
    }
    return out;
  };

  for (const [op, dir] of [
    ['create', 'c'],
    ['str_replace', ''],
    ['insert', 'ins'],
    ['delete', 'del'],
    ['rename', 'ren'],
  ]) {
    row('inproc', op, 'file', 'small file', op === 'str_replace' ? await strReplace() : await batched(op, dir));
  }
}

async function cmdListing(a) {
  const { tool } = await open(a.base);
  row('scale', 'view_root', '-', a.param, await repeat(tool, { command: 'view', path: '/memories' }, a.iters, 1));
  if (a.rssOut) {
    // maxRSS is in kilobytes, like getrusage's ru_maxrss.
    fs.appendFileSync(a.rssOut, `memory,view_root,sdk,${a.param},${process.resourceUsage().maxRSS}\n`);
  }
}

async function cmdBigfile(a) {
  const { tool, root } = await open(a.base);
  const big = path.join(root, 'big.txt');
  let lines = 0;
  const data = fs.readFileSync(big);
  for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, i + 1)) lines++;
  const mid = Math.floor(lines / 2);
  if (a.ops.includes('view_range')) {
    const input = { command: 'view', path: '/memories/big.txt', view_range: [mid, mid + 19] };
    row('scale', 'view_range', '-', a.param, await repeat(tool, input, a.iters, 1));
  }
  if (a.ops.includes('str_replace')) {
    const inputs = [
      { command: 'str_replace', path: '/memories/big.txt', old_str: TOKEN_A, new_str: TOKEN_B },
      { command: 'str_replace', path: '/memories/big.txt', old_str: TOKEN_B, new_str: TOKEN_A },
    ];
    settle(root);
    const n = a.iters + 2 + (a.iters & 1);
    const out = [];
    for (let i = 0; i < n; i++) {
      const us = await timed(tool, inputs[i & 1]);
      if (i >= 2) out.push(us);
    }
    row('scale', 'str_replace', 'file', a.param, out);
  }
}

const [cmd, ...rest] = process.argv.slice(2);
const commands = { ops: cmdOps, listing: cmdListing, bigfile: cmdBigfile };
if (!commands[cmd]) {
  process.stderr.write('usage: node sdk_bench.mjs ops|listing|bigfile --base DIR ...\n');
  process.exit(2);
}
await commands[cmd](parseArgs(rest));
