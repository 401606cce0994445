// Golden transcripts: golden/NAME.in holds the lines sent to one fresh
// server (`memtool mcp` for mcp-*, `memtool serve` for serve-*), NAME.out
// the exact lines it must write back. @VERSION@ in a .out file stands for
// memtool's version. UPDATE_GOLDEN=1 rewrites the .out files from what
// the server says (review the diff before committing it). The transcripts
// hold nothing of one store: MEMTOOL_TEST_STORE=sqlite or postgresql (with
// MEMTOOL_TEST_PG) runs them on another, with the same expected lines.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { runWith, scratchStoreArgs } from './lib.mjs';

const here = join(dirname(fileURLToPath(import.meta.url)), 'golden');
const version = process.env.MEMTOOL_VERSION;

for (const file of readdirSync(here).filter((f) => f.endsWith('.in')).sort()) {
  const name = file.slice(0, -3);
  const mode = name.startsWith('serve-') ? 'serve' : 'mcp';
  test(`golden ${name}`, async () => {
    const input = readFileSync(join(here, file));
    const r = await runWith(scratchStoreArgs(name), [mode], input);
    assert.equal(r.code, 0, `exit status; stderr: ${r.stderr}`);
    let actual = r.stdout;
    if (version) actual = actual.split(`"version":"${version}"`).join('"version":"@VERSION@"');
    const outPath = join(here, `${name}.out`);
    if (process.env.UPDATE_GOLDEN) {
      writeFileSync(outPath, actual);
      return;
    }
    const expected = readFileSync(outPath, 'utf8');
    const a = actual.split('\n');
    const e = expected.split('\n');
    for (let i = 0; i < Math.max(a.length, e.length); i++) {
      assert.equal(a[i], e[i], `${name}.out line ${i + 1}`);
    }
  });
}
