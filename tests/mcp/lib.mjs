// Shared helpers for the serve and MCP tests: where memtool is, scratch
// stores, and a line-oriented conversation with a spawned server.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

// ctest passes the built binary; running by hand, set MEMTOOL.
export const MEMTOOL = process.env.MEMTOOL || process.argv[2];
if (!MEMTOOL) {
  console.error('usage: MEMTOOL=/path/to/memtool node <test>.mjs');
  process.exit(2);
}

// A fresh store root; removed when the test process exits.
const scratch = [];
process.on('exit', () => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});
export function scratchStore() {
  const dir = mkdtempSync(join(tmpdir(), 'memtool-mcp-test-'));
  scratch.push(dir);
  return join(dir, 'memories');
}

// A fresh, empty store of the kind MEMTOOL_TEST_STORE names (file, the default;
// sqlite; or postgresql, the server MEMTOOL_TEST_PG names, with a tenant of its
// own), as the options that select it: the same choice as tests/golden/run.py's
// --store. `name` goes into the tenant, to tell runs apart on a shared server.
export function scratchStoreArgs(name) {
  const kind = process.env.MEMTOOL_TEST_STORE || 'file';
  const root = scratchStore();
  if (kind === 'file') return ['--root', root];
  if (kind === 'sqlite') return ['--store', `sqlite:${root}.db`];
  if (kind === 'postgresql') {
    const url = process.env.MEMTOOL_TEST_PG;
    if (!url) throw new Error('MEMTOOL_TEST_STORE=postgresql needs MEMTOOL_TEST_PG, the URL of a test server');
    const tenant = `mcp-${name}-${process.pid}-${basename(dirname(root))}`;
    return ['--store', url, '--tenant', tenant];
  }
  throw new Error(`MEMTOOL_TEST_STORE must be file, sqlite or postgresql, not '${kind}'`);
}

// Spawn `memtool --root ROOT <args>` (or, when ROOT is an array such as
// scratchStoreArgs gives, `memtool ROOT... <args>`), feed it `input` (a string
// or Buffer, or an array of lines), close its stdin, and collect everything.
export function runWith(root, args, input) {
  return new Promise((resolve, reject) => {
    const where = Array.isArray(root) ? root : ['--root', root];
    const child = spawn(MEMTOOL, [...where, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin.on('error', () => {}); // the server may exit before reading everything
    const data = Array.isArray(input) ? input.map((l) => l + '\n').join('') : input;
    child.stdin.end(data);
  });
}

// The lines a server wrote (each answer is one line ending in "\n").
export function linesOf(stdout) {
  if (stdout === '') return [];
  if (!stdout.endsWith('\n')) throw new Error(`output does not end with a newline: ${JSON.stringify(stdout.slice(-80))}`);
  return stdout.slice(0, -1).split('\n');
}

// A long-lived server: send one line, await exactly one line back.
export class LineServer {
  constructor(root, args) {
    this.child = spawn(MEMTOOL, ['--root', root, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.buffer = '';
    this.waiting = [];
    this.lines = [];
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      this.buffer += d;
      let nl;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        const w = this.waiting.shift();
        if (w) w(line);
        else this.lines.push(line);
      }
    });
    this.closed = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  next() {
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  // A line that gets no answer (a notification, a blank line).
  write(line) {
    this.child.stdin.write(line + '\n');
  }

  async send(line) {
    this.child.stdin.write(line + '\n');
    return this.next();
  }

  async close() {
    this.child.stdin.end();
    return this.closed;
  }
}

// A transport that hands everything to `inner` and keeps a copy of every
// message each way, so a test can check the wire and not only what the SDK
// makes of it. (The v2 client probes in place on a transport that is not
// its own stdio class, so this also covers that path.)
export class RecordingTransport {
  constructor(inner) {
    this.inner = inner;
    this.sent = [];
    this.received = [];
  }

  async start() {
    this.inner.onmessage = (m, extra) => {
      this.received.push(m);
      this.onmessage?.(m, extra);
    };
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (e) => this.onerror?.(e);
    return this.inner.start();
  }

  async send(m, options) {
    this.sent.push(m);
    return this.inner.send(m, options);
  }

  async close() {
    return this.inner.close();
  }

  // The response to the request with this method (the first one sent).
  responseTo(method) {
    const req = this.sent.find((m) => m.method === method && m.id !== undefined);
    return req && this.received.find((m) => m.id === req.id);
  }
}
