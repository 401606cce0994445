// One tool input on stdin, one SDK memory tool call, the result on stdout:
// the SDK's counterpart of `memtool call`, for the per-process suite.
//
//   node sdk_call.mjs BASE < input.json     (the files live in BASE/memories)
//
// Exits 1 when the tool fails (the SDK throws), as `memtool call` does.
import { BetaLocalFilesystemMemoryTool, betaMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const tool = betaMemoryTool(await BetaLocalFilesystemMemoryTool.init(process.argv[2]));
try {
  process.stdout.write(await tool.run(input));
} catch (err) {
  process.stdout.write(`Error: ${err.message}`);
  process.exitCode = 1;
}
