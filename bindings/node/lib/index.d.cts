// memtool for Node.js: the types.
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaMemoryTool20250818Command } from '@anthropic-ai/sdk/resources/beta';

/** Options for a store; limits are as `memtool --help` describes them. */
export interface MemoryStoreOptions {
  /**
   * Where the memories live: a directory ('./memory', as `memtool --root` takes it; a string
   * without a scheme), 'file:/dir', 'sqlite:/path.db' or 'postgresql://user@host/db'.
   */
  store: string;
  /** Whose memories, in a store shared by many (default 'default'). */
  tenant?: string;
  /** Who changes are recorded as in the history (default 'node'). */
  actor?: string;
  /** A file to append one JSON line per call to. */
  audit?: string;
  /** How hard a write works to survive a power cut (default 'full'). */
  durability?: 'full' | 'file' | 'none';
  /** Record a version of every change (default true). */
  history?: boolean;
  /** Bytes one file may hold (default 1 MiB). */
  maxFileSize?: number;
  /** Bytes all files may hold (default 100 MiB). */
  maxStoreSize?: number;
  /** Files the store may hold (default 10,000). */
  maxFiles?: number;
  /** Directories the store may hold (default 1,000). */
  maxDirs?: number;
  /** Characters in a view result (default 16,000). */
  viewLimit?: number;
  /** Longest wait for another process's change, in ms (default 5,000). */
  lockTimeoutMs?: number;
  /** Versions kept per memory (default 100; 0: no cap). */
  historyKeep?: number;
  /** Days a version is kept (default 90; 0: forever). */
  historyDays?: number;
  /** A write that would hold a secret: 'reject' (default), 'redact' or 'off'. */
  secrets?: 'reject' | 'redact' | 'off';
  /** PCRE2 regexes: a secret one of them matches is allowed. */
  secretsAllow?: string[];
}

/** A memory a search found. */
export interface SearchHit {
  path: string;
  score: number;
  lines: number[];
  moreLines: boolean;
  matches: number;
  snippet?: { line: number; before: string; match: string; after: string };
}

/** A tool input, as the memory tool's six commands take it. */
export type MemoryToolInput =
  | { command: 'view'; path: string; view_range?: [number, number] }
  | { command: 'create'; path: string; file_text: string }
  | { command: 'str_replace'; path: string; old_str: string; new_str: string }
  | { command: 'insert'; path: string; insert_line: number; insert_text: string }
  | { command: 'delete'; path: string }
  | { command: 'rename'; old_path: string; new_path: string };

export interface CallResult {
  /** The tool result text, exactly as `memtool call` prints it. */
  content: string;
  /** Whether it is a tool error (sent with is_error: true). */
  isError: boolean;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id?: string;
  content: string;
  is_error: boolean;
}

export interface Version {
  id: number;
  memoryId: string;
  operation: 'created' | 'modified' | 'deleted';
  /** null when redacted */
  path: string | null;
  /** a rename's former path */
  previousPath: string | null;
  actor: string;
  /** milliseconds since the epoch (UTC) */
  createdAt: number;
  /** lowercase hex; null for a deletion or when redacted */
  contentSha256: string | null;
  contentSize: number;
  redacted: boolean;
}

export interface LogQuery {
  /** a memory, or a directory (everything beneath) */
  path?: string;
  memoryId?: string;
  operation?: 'created' | 'modified' | 'deleted';
  actor?: string;
  since?: number | Date;
  until?: number | Date;
  /** only versions older than this one */
  beforeId?: number;
  /** at most this many (default 100) */
  limit?: number;
}

/** A tool error from one of the six command methods: `content` is the result text. */
export declare class MemoryToolError extends Error {
  readonly content: string;
  readonly isError: true;
}

/** One memtool store, open in this process; every call runs on libuv's thread pool. */
export declare class MemoryStore {
  private constructor(handle: never);
  static open(options: MemoryStoreOptions): Promise<MemoryStore>;
  readonly closed: boolean;
  /** Run one tool input (an object, or its JSON text). */
  call(input: MemoryToolInput | Record<string, unknown> | string): Promise<CallResult>;
  /** Answer a Messages API tool_use block with a tool_result block. */
  toolResult(block: Record<string, unknown> | string): Promise<ToolResultBlock>;
  /** view on the calling thread (file and SQLite stores): no thread-pool hand-over. */
  viewSync(path: string, viewRange?: [number, number]): string;
  /** The six commands: the result text, or a MemoryToolError. */
  view(path: string, viewRange?: [number, number]): Promise<string>;
  create(path: string, fileText: string): Promise<string>;
  strReplace(path: string, oldStr: string, newStr: string): Promise<string>;
  insert(path: string, insertLine: number, insertText: string): Promise<string>;
  delete(path: string): Promise<string>;
  rename(oldPath: string, newPath: string): Promise<string>;
  /** History: versions, newest first. */
  log(query?: LogQuery): Promise<Version[]>;
  versionContent(id: number): Promise<Buffer>;
  restore(id: number): Promise<number>;
  undo(path: string): Promise<{ versionId: number; restored: number }>;
  redact(id: number): Promise<void>;
  /** A memory's exact content now. */
  read(path: string): Promise<Buffer>;
  /** Memories holding every term of the query, best first. */
  search(query: string, options?: { path?: string; limit?: number }): Promise<SearchHit[]>;
  usage(): Promise<{ bytes: number; files: number; dirs: number }>;
  /** Close once the calls already made have settled. */
  close(): Promise<void>;
}

/**
 * The memory tool for `client.beta.messages.toolRunner`: what the SDK's
 * `betaMemoryTool(handlers)` returns (type 'memory_20250818', name 'memory',
 * parse, run), backed by a memtool store. Tool errors are thrown as the SDK's
 * ToolError, so the runner sends memtool's exact text with is_error: true.
 */
export declare function memtoolMemoryTool(
  options: MemoryStoreOptions | { store: MemoryStore },
  extraProps?: Record<string, unknown>,
): BetaRunnableTool<BetaMemoryTool20250818Command> & {
  /** Close the store the tool opened (not one it was given). */
  close: () => Promise<void>;
};

/** The libmemtool version the addon was built against. */
export declare const version: string;
