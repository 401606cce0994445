// memtool for Node.js (ES module): import { memtoolMemoryTool } from 'memtool'.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const core = require('./core.cjs');

// The SDK's ES module build has its own ToolError class: an ES module user's
// runner recognises that one.
async function loadToolError() {
  return (await import('@anthropic-ai/sdk/resources/beta/messages')).ToolError;
}

export const { MemoryStore, MemoryToolError, version } = core;

/** The memory tool for client.beta.messages.toolRunner, on a memtool store. */
export function memtoolMemoryTool(options, extraProps) {
  return core.memoryTool(options, extraProps, loadToolError);
}
