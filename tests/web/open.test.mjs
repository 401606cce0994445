// memtool web --open: the desktop's browser (xdg-open, here a stand-in that
// notes its arguments) gets the address when DISPLAY or WAYLAND_DISPLAY is
// set, and stdout still holds exactly the one line; without a desktop,
// nothing is started and stderr says why. No browser is needed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MEMTOOL = process.env.MEMTOOL;
const dir = mkdtempSync(join(tmpdir(), 'memtool-open-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const bin = join(dir, 'bin');
const noted = join(dir, 'xdg-open.args');
mkdirSync(bin);
writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${noted}'\necho 'a browser writing on stdout'\n`);
chmodSync(join(bin, 'xdg-open'), 0o755);

async function run(env) {
  const child = spawn(MEMTOOL, ['--root', join(dir, 'store'), 'web', '--open'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: `${bin}:${process.env.PATH}`, HOME: dir, ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no address: ' + err)), 10000);
    child.stdout.on('data', () => { if (out.includes('\n')) { clearTimeout(timer); resolve(); } });
  });
  // Time for xdg-open to run (or not).
  for (let i = 0; i < 50 && env.DISPLAY && !existsSync(noted); i++) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 300));
  await new Promise((resolve) => { child.on('exit', resolve); child.kill('SIGTERM'); });
  return { out, err };
}

test('memtool web --open', async () => {
  const withDesktop = await run({ DISPLAY: ':99' });
  assert.match(withDesktop.out, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}\n$/, 'one line on stdout, whatever xdg-open prints');
  assert.equal(readFileSync(noted, 'utf8'), withDesktop.out, 'xdg-open got the address');
  rmSync(noted);

  const without = await run({});
  assert.match(without.out, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}\n$/);
  assert.ok(!existsSync(noted), 'no desktop: nothing started');
  assert.match(without.err, /no desktop here/);
});
