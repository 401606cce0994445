'use strict';
// The compiled addon (build/Release/memtool.node, made by node-gyp at install),
// loaded once per environment: each worker thread gets its own instance.
const path = require('node:path');

const ADDON = path.join(__dirname, '..', 'build', 'Release', 'memtool.node');

let native;
try {
  native = require(ADDON);
} catch (err) {
  const missingLib = /libmemtool\.so/.test(String(err && err.message));
  const why = missingLib
    ? 'libmemtool.so cannot be found at run time; install memtool, or rebuild the addon with ' +
      'MEMTOOL_LIBRARY_DIR or MEMTOOL_PREFIX naming where it is (the build records that ' +
      'directory), or set LD_LIBRARY_PATH'
    : `the native addon ${ADDON} cannot be loaded; rebuild it with \`npm rebuild memtool\``;
  const e = new Error(`memtool: ${why} (${err && err.message})`);
  e.code = 'ERR_MEMTOOL_ADDON';
  e.cause = err;
  throw e;
}

module.exports = native;
