// Start memtool server on a fresh store, with keys for two tenants.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MEMTOOL = process.env.MEMTOOL;

// Every wait is bounded: a memtool command that hangs fails the test after 30 s.
export function memtool(args, input) {
  return execFileSync(MEMTOOL, args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], timeout: 30000 });
}

// The access log's lines (one JSON object each) a server has written so far.
export function accessLog(srv) {
  return srv
    .log()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

// Scratch directories, removed when the test process exits (MEMTOOL_TEST_KEEP=1 keeps them to look at).
const scratch = [];
process.on('exit', () => {
  if (process.env.MEMTOOL_TEST_KEEP) return;
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});
export function scratchDir(prefix) {
  const d = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(d);
  return d;
}

export async function startServer(globals = []) {
  const dir = scratchDir('memtool-server-');
  const keys = join(dir, 'keys');
  const kind = process.env.MEMTOOL_TEST_STORE || 'file';
  const store =
    kind === 'sqlite' ? `sqlite:${dir}/store.db`
    : kind === 'postgresql' ? process.env.MEMTOOL_TEST_PG
    : `file:${dir}/store`;
  if (!store) throw new Error('MEMTOOL_TEST_STORE=postgresql needs MEMTOOL_TEST_PG, the URL of a test server');
  const key = (tenant, ...flags) =>
    memtool(['server', 'keys', 'add', tenant, '--keys', keys, ...flags]).trim();
  const k = { a: key('alice'), aro: key('alice', '--read-only'), b: key('bob'), admin: key('ops', '--admin') };
  // The keys' ids (apikey_...), as versions name them in created_by.
  const listed = JSON.parse(memtool(['server', 'keys', 'list', '--json', '--keys', keys]));
  const idOf = (tenant, ro, admin) =>
    listed.find((x) => x.tenant === tenant && x.read_only === ro && x.admin === admin)?.id;
  const ids = { a: idOf('alice', false, false), aro: idOf('alice', true, false), b: idOf('bob', false, false) };
  const first = await launch(store, keys, globals);
  return { ...first, keys: k, keyIds: ids, keysFile: keys, store, dir, another: () => launch(store, keys, globals) };
}

// One more server process on a store and keys file.
export async function launch(store, keys, globals = []) {
  const child = spawn(MEMTOOL, ['--store', store, ...globals, 'server', '--listen', '127.0.0.1:0', '--keys', keys], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  const baseURL = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start in 10 s: ' + log)), 10000);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) {
        clearTimeout(timer);
        resolve(out.trim());
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${log}`)));
  });
  const stop = () =>
    new Promise((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(new Error(`the server had already exited (${child.exitCode} ${child.signalCode}): ${log}`));
        return;
      }
      const timer = setTimeout(() => reject(new Error('server did not stop in 15 s')), 15000);
      child.removeAllListeners('exit');
      child.on('exit', (code, sig) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`server exit ${code} ${sig}: ${log}`));
      });
      child.kill('SIGTERM');
    });
  return { baseURL, stop, log: () => log, pid: child.pid };
}
