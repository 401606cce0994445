// A whole tool-runner conversation with Claude, its memory in a memtool store.
//
//   ANTHROPIC_API_KEY=sk-ant-... node examples/tool-runner.mjs "The parser rewrite is done."
//
// MEMTOOL_STORE names the store (default: the file store memtool itself uses);
// ANTHROPIC_BASE_URL, as for every SDK client, another endpoint.
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { memtoolMemoryTool } from 'memtool';

const store =
  process.env.MEMTOOL_STORE ?? `file:${path.join(os.homedir(), '.local/share/memtool/memories')}`;
const prompt = process.argv[2] ?? 'What do you remember about this project?';

const client = new Anthropic();
const memory = memtoolMemoryTool({ store, actor: 'example' });
try {
  const runner = client.beta.messages.toolRunner({
    model: 'claude-sonnet-4-6',
    max_tokens: 4096,
    // Every request carries the whole conversation (the default, a message thread,
    // sends only what is new).
    thread: false,
    betas: ['context-management-2025-06-27'],
    tools: [memory],
    messages: [{ role: 'user', content: prompt }],
  });
  // Each message Claude sends; the runner answers its memory calls in between.
  for await (const message of runner) {
    for (const block of message.content) {
      if (block.type === 'text') console.log(block.text);
      if (block.type === 'tool_use') {
        const { command, path: p, old_path: from } = block.input;
        console.error(`memory: ${command} ${p ?? from}`);
      }
    }
  }
} finally {
  await memory.close();
}
