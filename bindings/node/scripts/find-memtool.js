#!/usr/bin/env node
// Where libmemtool is, for binding.gyp: `node scripts/find-memtool.js cflags|libs`.
//
// In this order: MEMTOOL_LIBRARY_DIR (with MEMTOOL_INCLUDE_DIR, default
// LIBDIR/../include), MEMTOOL_PREFIX (PREFIX/include and PREFIX/lib*),
// `pkg-config memtool`, then the standard prefixes /usr/local and /usr. The
// addon is linked with an rpath to the directory found, so it loads the same
// libmemtool at run time without LD_LIBRARY_PATH.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const LIBDIRS = ['lib', 'lib64', 'lib/x86_64-linux-gnu', 'lib/aarch64-linux-gnu'];

function hasLib(dir) {
  return fs.existsSync(path.join(dir, 'libmemtool.so'));
}

function hasHeader(dir) {
  return fs.existsSync(path.join(dir, 'memtool.h'));
}

function pkgConfig(...args) {
  try {
    return execFileSync('pkg-config', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

function fromPrefix(prefix, how) {
  const include = path.join(prefix, 'include');
  const lib = LIBDIRS.map((d) => path.join(prefix, d)).find(hasLib);
  if (!lib || !hasHeader(include)) return null;
  return { cflags: [`-I${include}`], libdir: lib, how };
}

function find() {
  const env = process.env;
  if (env.MEMTOOL_LIBRARY_DIR) {
    const lib = path.resolve(env.MEMTOOL_LIBRARY_DIR);
    const include = path.resolve(env.MEMTOOL_INCLUDE_DIR || path.join(lib, '..', 'include'));
    if (!hasLib(lib)) fail(`MEMTOOL_LIBRARY_DIR=${lib} holds no libmemtool.so`);
    if (!hasHeader(include))
      fail(`${include} holds no memtool.h: set MEMTOOL_INCLUDE_DIR to the directory of memtool.h`);
    return { cflags: [`-I${include}`], libdir: lib, how: 'MEMTOOL_LIBRARY_DIR' };
  }
  if (env.MEMTOOL_PREFIX) {
    const found = fromPrefix(path.resolve(env.MEMTOOL_PREFIX), 'MEMTOOL_PREFIX');
    if (!found) fail(`MEMTOOL_PREFIX=${env.MEMTOOL_PREFIX} holds no include/memtool.h and lib/libmemtool.so`);
    return found;
  }
  const libdir = pkgConfig('--variable=libdir', 'memtool');
  if (libdir && hasLib(libdir)) {
    const cflags = pkgConfig('--cflags', 'memtool') || '';
    return { cflags: cflags.split(/\s+/).filter(Boolean), libdir, how: 'pkg-config' };
  }
  for (const prefix of ['/usr/local', '/usr']) {
    const found = fromPrefix(prefix, prefix);
    if (found) return found;
  }
  fail('libmemtool is not installed where pkg-config, /usr/local or /usr would show it');
  return null;
}

function fail(why) {
  process.stderr.write(
    `memtool: cannot build the Node.js addon: ${why}.\n` +
      'Install memtool first (make install PREFIX=/usr/local, or its package), or point the build at it:\n' +
      '  MEMTOOL_PREFIX=/opt/memtool npm install memtool                (include/ and lib/ below it)\n' +
      '  MEMTOOL_LIBRARY_DIR=/src/memtool/build MEMTOOL_INCLUDE_DIR=/src/memtool/include npm install memtool\n' +
      '  PKG_CONFIG_PATH=/opt/memtool/lib/pkgconfig npm install memtool\n',
  );
  process.exit(1);
}

const found = find();
const jansson = (pkgConfig('--libs', 'jansson') || '-ljansson').split(/\s+/).filter(Boolean);
const janssonCflags = (pkgConfig('--cflags', 'jansson') || '').split(/\s+/).filter(Boolean);
switch (process.argv[2]) {
  case 'cflags':
    console.log([...found.cflags, ...janssonCflags].join(' '));
    break;
  case 'libs':
    console.log([`-L${found.libdir}`, '-lmemtool', ...jansson, `-Wl,-rpath,${found.libdir}`].join(' '));
    break;
  case 'where':
    console.log(`${found.libdir} (from ${found.how})`);
    break;
  default:
    process.stderr.write('usage: find-memtool.js cflags|libs|where\n');
    process.exit(2);
}
