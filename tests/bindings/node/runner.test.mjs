// The official TypeScript SDK's tool runner (client.beta.messages.toolRunner) with
// memtool's memory tool, through a whole session against the stand-in Messages API
// (tests/agent/fake_api.py), which checks every request: the client is the package's
// own example, examples/tool-runner.mjs, run as a user would run it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import test from 'node:test';

import { HERE, NODE_SH, PKG, memtool, scratch } from './lib.mjs';

const CASE = path.join(HERE, 'runner_session.json');
const session = JSON.parse(fs.readFileSync(CASE, 'utf8'));

function run(cmd, args, opts) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function fakeApi(t) {
  const server = spawn(process.env.PYTHON3 || 'python3', [path.join(HERE, 'fake_api_session.py'), CASE], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.after(() => server.kill());
  const lines = readline.createInterface({ input: server.stdout })[Symbol.asyncIterator]();
  const { url, api_key: apiKey } = JSON.parse((await lines.next()).value);
  return {
    url,
    apiKey,
    async verdict() {
      server.stdin.end();
      return JSON.parse((await lines.next()).value);
    },
  };
}

for (const kind of ['file', 'sqlite']) {
  test(`a tool-runner session on the ${kind} store: every request as the API expects, the memory as the session left it`, async (t) => {
    const dir = scratch(t);
    const store = kind === 'file' ? `file:${path.join(dir, 'memories')}` : `sqlite:${path.join(dir, 'memories.db')}`;
    const api = await fakeApi(t);
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(ANTHROPIC_|MEMTOOL_)/.test(k) && !/_proxy$/i.test(k)),
    );
    Object.assign(env, { ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: api.apiKey, MEMTOOL_STORE: store, NO_PROXY: '*' });
    const r = await run('sh', [NODE_SH, path.join(PKG, 'examples', 'tool-runner.mjs'), session.prompt], { env, cwd: dir });
    const verdict = await api.verdict();
    assert.deepEqual(verdict.failures, [], r.stderr);
    assert.equal(verdict.requests, session.exchanges.length);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, session.stdout);
    assert.equal(
      r.stderr,
      [
        'memory: view /memories',
        'memory: create /memories/status.md',
        'memory: str_replace /memories/status.md',
        'memory: view /memories/../etc/passwd',
        'memory: view /memories/status.md',
        '',
      ].join('\n'),
    );

    // What the session left, read back through the binding, and its history.
    const mem = await memtool.MemoryStore.open({ store });
    t.after(() => mem.close());
    for (const [rel, content] of Object.entries(session.files)) {
      assert.equal((await mem.read(`/memories/${rel}`)).toString(), content);
    }
    const log = await mem.log();
    assert.deepEqual(log.map((v) => [v.operation, v.path, v.actor]), [
      ['modified', '/memories/status.md', 'example'],
      ['created', '/memories/status.md', 'example'],
    ]);
    if (kind === 'file') {
      assert.deepEqual(fs.readdirSync(path.join(dir, 'memories')).filter((n) => n !== '.memtool'), ['status.md']);
    }
  });
}
