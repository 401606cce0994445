// `memtool call` through the Node.js binding, for tests/golden/run.py --via node: one
// JSON line in per call ({"store": [...], "opts": [...], "input": "..."}), one out
// ({"exit": 0|1|2, "stdout": "..."}), in one long-lived process, each store opened
// once per set of options and kept open across calls, as an application would.
//
//   node golden_shim.mjs PACKAGE_DIR
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const { MemoryStore } = await import(pathToFileURL(path.join(process.argv[2], 'lib', 'index.mjs')).href);

const open = new Map();

// The command's options as MemoryStore options, with the command's rules for values
// (sizes with K, M or G; seconds for the lock timeout).
function size(v) {
  const m = /^([0-9]+)([KMGkmg]?)$/.exec(v);
  if (!m) throw new Error(`not a size: ${v}`);
  return Number(m[1]) * { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2].toLowerCase()];
}

function options(storeArgs, opts) {
  // `memtool call` records its changes as "cli".
  const o = { actor: 'cli' };
  const words = [...storeArgs, ...opts];
  for (let i = 0; i < words.length; i += 2) {
    const [name, v] = [words[i], words[i + 1]];
    switch (name) {
      case '--root': o.store = `file:${v}`; break;
      case '--store': o.store = v; break;
      case '--tenant': o.tenant = v; break;
      case '--actor': o.actor = v; break;
      case '--durability': o.durability = v; break;
      case '--history': o.history = { on: true, off: false }[v]; break;
      case '--history-keep': o.historyKeep = size(v); break;
      case '--history-days': o.historyDays = size(v); break;
      case '--lock-timeout': o.lockTimeoutMs = Math.round(Number(v) * 1000); break;
      case '--max-file-size': o.maxFileSize = size(v); break;
      case '--max-store-size': o.maxStoreSize = size(v); break;
      case '--max-files': o.maxFiles = size(v); break;
      case '--max-dirs': o.maxDirs = size(v); break;
      case '--view-limit': o.viewLimit = size(v); break;
      case '--secrets': o.secrets = v; break;
      case '--secrets-allow': (o.secretsAllow ??= []).push(v); break;
      default: throw new Error(`the shim does not know ${name}`);
    }
  }
  return o;
}

async function call({ store, opts, input }) {
  let request;
  let o;
  try {
    request = JSON.parse(input);
    o = options(store, opts);
  } catch (e) {
    return { exit: 2, stdout: '', why: e.message };
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return { exit: 2, stdout: '' };
  }
  const key = JSON.stringify(o);
  if (!open.has(key)) open.set(key, MemoryStore.open(o));
  let handle;
  try {
    handle = await open.get(key);
  } catch (e) {
    open.delete(key);
    return { exit: 2, stdout: '', why: e.message };
  }
  // A tool_use block gets a tool_result block back, as JSON; a tool input its text.
  if ('type' in request) {
    const block = await handle.toolResult(input);
    return { exit: block.is_error ? 1 : 0, stdout: JSON.stringify(block) };
  }
  const { content, isError } = await handle.call(input);
  return { exit: isError ? 1 : 0, stdout: content };
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  process.stdout.write(JSON.stringify(await call(JSON.parse(line))) + '\n');
}
for (const p of open.values()) await (await p).close();
