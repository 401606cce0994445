'use strict';
// MemoryStore and the tool runner's memory tool, over the addon. The ESM and
// CommonJS entry points share this one implementation (so there is one
// MemoryStore class), and differ only in how they load the SDK's ToolError.
const path = require('node:path');
const native = require('./native.cjs');

// A string with a scheme is a URL; any other is a directory, as `memtool --root`
// takes it (the SDK helper's base path was one).
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function storeUrl(store) {
  // Resolved here so that the URL names the directory however it was spelled
  // (a leading '//' would read as a host after 'file:').
  return SCHEME.test(store) ? store : `file:${path.resolve(store)}`;
}

const OPTION_TYPES = {
  tenant: 'string',
  actor: 'string',
  audit: 'string',
  durability: 'string',
  history: 'boolean',
  maxFileSize: 'number',
  maxStoreSize: 'number',
  maxFiles: 'number',
  maxDirs: 'number',
  viewLimit: 'number',
  lockTimeoutMs: 'number',
  historyKeep: 'number',
  historyDays: 'number',
  secrets: 'string',
  secretsAllow: 'object', // an array of strings; the addon checks each
};

/** A tool error from one of the six commands: `content` is the result text. */
class MemoryToolError extends Error {
  constructor(content) {
    super(content);
    this.name = 'MemoryToolError';
    this.content = content;
    this.isError = true;
  }
}

function checkOptions(options, what) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(
      `memtool: ${what} needs an options object: { store: './dir' | 'file:/path' | 'sqlite:/path' | 'postgresql://...' }`,
    );
  }
  if (typeof options.store !== 'string' || options.store === '') {
    throw new TypeError(
      `memtool: ${what}: options.store must name the store, as a directory ('./memory'), ` +
        `'file:/path', 'sqlite:/path' or 'postgresql://user@host/db' (got ${describe(options.store)})`,
    );
  }
  for (const [key, type] of Object.entries(OPTION_TYPES)) {
    const v = options[key];
    if (v !== undefined && typeof v !== type) {
      throw new TypeError(`memtool: ${what}: options.${key} must be a ${type} (got ${describe(v)})`);
    }
    if (type === 'object' && v !== undefined && !(Array.isArray(v) && v.every((s) => typeof s === 'string'))) {
      throw new TypeError(`memtool: ${what}: options.${key} must be an array of strings (got ${describe(v)})`);
    }
    if (type === 'number' && v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) {
      throw new RangeError(`memtool: ${what}: options.${key} must be a whole number >= 0 (got ${v})`);
    }
  }
  for (const key of Object.keys(options)) {
    if (key !== 'store' && !(key in OPTION_TYPES)) {
      throw new TypeError(
        `memtool: ${what}: unknown option '${key}' (known: store, ${Object.keys(OPTION_TYPES).join(', ')})`,
      );
    }
  }
}

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'string' ? `'${v}'` : typeof v;
}

function checkString(v, name) {
  if (typeof v !== 'string') throw new TypeError(`memtool: ${name} must be a string (got ${describe(v)})`);
}

function checkId(v, name = 'the version id') {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(`memtool: ${name} must be a positive whole number (got ${describe(v)})`);
  }
}

function toJson(input, what) {
  if (typeof input === 'string') return input;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new TypeError(`memtool: ${what} must be an object (or its JSON text), got ${describe(input)}`);
  }
  return JSON.stringify(input);
}

/**
 * One memtool store, open in this process. Every method returns a promise and
 * runs on libuv's thread pool; the handle may be used by many calls at once.
 */
class MemoryStore {
  #handle;
  #closed = false;
  #remote;

  /** Use MemoryStore.open(). */
  constructor(handle, url) {
    if (!(handle instanceof native.Handle)) {
      throw new TypeError('memtool: a MemoryStore comes from `await MemoryStore.open({ store })`');
    }
    this.#handle = handle;
    this.#remote = !/^(file|sqlite):/.test(url);
  }

  /** Open the store options.store names (a directory, file:DIR, sqlite:PATH or a PostgreSQL URL). */
  static async open(options) {
    checkOptions(options, 'MemoryStore.open');
    const { store, ...rest } = options;
    const url = storeUrl(store);
    return new MemoryStore(await native.open(url, rest), url);
  }

  get closed() {
    return this.#closed;
  }

  #live() {
    if (this.#closed) {
      const e = new Error('memtool: the store is closed; open it again to use it');
      e.code = 'ERR_MEMTOOL_CLOSED';
      throw e;
    }
    return this.#handle;
  }

  /** Run one tool input (an object, or its JSON text): the result text and its flag. */
  async call(input) {
    const json = toJson(input, 'the tool input');
    const [content, isError] = await this.#live().call(json);
    return { content, isError };
  }

  /** Answer a Messages API tool_use block with a tool_result block. */
  async toolResult(block) {
    const json = toJson(block, 'the tool_use block');
    return JSON.parse(await this.#live().toolResult(json));
  }

  async #command(input) {
    const { content, isError } = await this.call(input);
    if (isError) throw new MemoryToolError(content);
    return content;
  }

  /**
   * view on the calling thread, for the file and SQLite stores: a view never
   * syncs, so it blocks about as long as its reads (like fs.readFileSync), but
   * once a minute per memory, recording its access, it may wait for the
   * store's lock (at most 1 s on a file store, 5 s on SQLite); the thread pool's hand-over is saved. Not for PostgreSQL,
   * whose every read is a round trip to the server.
   */
  viewSync(path, viewRange) {
    checkString(path, 'path');
    if (this.#remote) throw new Error('memtool: viewSync is for the file and SQLite stores; use view()');
    const input = { command: 'view', path };
    if (viewRange !== undefined) input.view_range = viewRange;
    const [content, isError] = this.#live().viewSync(JSON.stringify(input));
    if (isError) throw new MemoryToolError(content);
    return content;
  }

  async view(path, viewRange) {
    checkString(path, 'path');
    const input = { command: 'view', path };
    if (viewRange !== undefined) input.view_range = viewRange;
    return this.#command(input);
  }

  async create(path, fileText) {
    checkString(path, 'path');
    checkString(fileText, 'fileText');
    return this.#command({ command: 'create', path, file_text: fileText });
  }

  async strReplace(path, oldStr, newStr) {
    checkString(path, 'path');
    checkString(oldStr, 'oldStr');
    checkString(newStr, 'newStr');
    return this.#command({ command: 'str_replace', path, old_str: oldStr, new_str: newStr });
  }

  async insert(path, insertLine, insertText) {
    checkString(path, 'path');
    if (!Number.isSafeInteger(insertLine)) {
      throw new TypeError(`memtool: insertLine must be a whole number (got ${describe(insertLine)})`);
    }
    checkString(insertText, 'insertText');
    return this.#command({ command: 'insert', path, insert_line: insertLine, insert_text: insertText });
  }

  async delete(path) {
    checkString(path, 'path');
    return this.#command({ command: 'delete', path });
  }

  async rename(oldPath, newPath) {
    checkString(oldPath, 'oldPath');
    checkString(newPath, 'newPath');
    return this.#command({ command: 'rename', old_path: oldPath, new_path: newPath });
  }

  /** Versions, newest first: { path, memoryId, operation, actor, since, until, beforeId, limit }. */
  async log(query = {}) {
    if (query === null || typeof query !== 'object' || Array.isArray(query)) {
      throw new TypeError(`memtool: the log query must be an object (got ${describe(query)})`);
    }
    const q = { ...query };
    for (const k of ['since', 'until']) if (q[k] instanceof Date) q[k] = q[k].getTime();
    return this.#live().log(q);
  }

  /** A version's exact content. */
  async versionContent(id) {
    checkId(id);
    return this.#live().versionContent(id);
  }

  /** Make version id's content current again, as a new version; its id (0 when the
   * memory held that content already: nothing changed, no version). */
  async restore(id) {
    checkId(id);
    return this.#live().restore(id);
  }

  /** Restore the memory at path to its latest earlier content that differs from its
   * current one: { versionId, restored }. */
  async undo(path) {
    checkString(path, 'path');
    return this.#live().undo(path);
  }

  /** Erase a version's content, path and indexed words (PostgreSQL: then `memtool store vacuum`). */
  async redact(id) {
    checkId(id);
    await this.#live().redact(id);
  }

  /** A memory's exact content now. */
  async read(path) {
    checkString(path, 'path');
    return this.#live().read(path);
  }

  /**
   * Memories holding every term of `query` (words, "phrases", prefix*), best first:
   * [{ path, score, lines, moreLines, matches, snippet: { line, before, match, after } }].
   * options: { path: a directory to search beneath, limit: 1 to 100 (default 10) }.
   */
  async search(query, options = {}) {
    checkString(query, 'query');
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError(`memtool: search options must be an object (got ${describe(options)})`);
    }
    const { path, limit } = options;
    if (path !== undefined) checkString(path, 'options.path');
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1 && limit <= 100)) {
      throw new RangeError(`memtool: options.limit must be a whole number from 1 to 100 (got ${limit})`);
    }
    return JSON.parse(await this.#live().search(JSON.stringify({ query, path, limit })));
  }

  /** What the store holds, as its limits count it: { bytes, files, dirs }. */
  async usage() {
    return this.#live().usage();
  }

  /** Close the store once the calls already made have settled. */
  async close() {
    this.#closed = true;
    await this.#handle.close();
  }
}

/**
 * The error a tool run throws for a tool error: the SDK's ToolError with the
 * exact result text as its content (the runner sends that text with
 * is_error: true). Its message is the text without the "Error: " the runner
 * puts before a plain error's message, so a runner that sees it as a plain
 * Error (another copy of the SDK) sends the same text.
 */
async function toolError(content, loadToolError) {
  let ToolError = null;
  try {
    ToolError = await loadToolError();
  } catch {
    ToolError = null;
  }
  const message = content.startsWith('Error: ') ? content.slice('Error: '.length) : content;
  const err = typeof ToolError === 'function' ? new ToolError(content) : new MemoryToolError(content);
  err.message = message;
  return err;
}

/**
 * The memory tool for client.beta.messages.toolRunner: what betaMemoryTool()
 * returns, backed by a memtool store. options: { store, tenant, ...limits },
 * or { store: aMemoryStore } to share one that is open.
 */
function memoryTool(options, extraProps, loadToolError) {
  let storePromise;
  let owned = true;
  if (options !== null && typeof options === 'object' && options.store instanceof MemoryStore) {
    if (Object.keys(options).length !== 1) {
      throw new TypeError('memtool: memtoolMemoryTool: with an open MemoryStore, give no other options');
    }
    storePromise = Promise.resolve(options.store);
    owned = false;
  } else {
    checkOptions(options, 'memtoolMemoryTool');
    storePromise = MemoryStore.open(options);
    // Seen by the first run, which rejects with it: not an unhandled rejection.
    storePromise.catch(() => {});
  }
  if (extraProps !== undefined && (extraProps === null || typeof extraProps !== 'object')) {
    throw new TypeError(`memtool: memtoolMemoryTool: extraProps must be an object (got ${describe(extraProps)})`);
  }
  return {
    ...extraProps,
    type: 'memory_20250818',
    name: 'memory',
    parse: (content) => content,
    run: async (input) => {
      const store = await storePromise;
      let content;
      let isError;
      if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
        ({ content, isError } = await store.call(JSON.stringify(input)));
      } else {
        // Not a tool input at all: memtool's words for a tool_use block holding it.
        const block = { type: 'tool_use', name: 'memory', input: input === undefined ? null : input };
        ({ content, is_error: isError } = await store.toolResult(JSON.stringify(block)));
      }
      if (isError) throw await toolError(content, loadToolError);
      return content;
    },
    close: async () => {
      if (owned) await (await storePromise).close();
    },
  };
}

module.exports = { MemoryStore, MemoryToolError, memoryTool, version: native.version };
