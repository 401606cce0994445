'use strict';
// memtool for Node.js (CommonJS): require('memtool').
const { MemoryStore, MemoryToolError, memoryTool, version } = require('./core.cjs');

function loadToolError() {
  return require('@anthropic-ai/sdk/resources/beta/messages').ToolError;
}

/** The memory tool for client.beta.messages.toolRunner, on a memtool store. */
function memtoolMemoryTool(options, extraProps) {
  return memoryTool(options, extraProps, loadToolError);
}

module.exports = { MemoryStore, MemoryToolError, memtoolMemoryTool, version };
