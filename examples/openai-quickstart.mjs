// Tollgate with the official OpenAI client: streams a reply and prints what it cost.
//
//   npm start                                          # in one terminal: prints the demo key once
//   TOLLGATE_KEY=tg_… node examples/openai-quickstart.mjs "Write a haiku about tolls"
//
// No key at hand (the database already existed)? `npx gateway keys create --org demo`.
// TOLLGATE_URL points elsewhere than http://127.0.0.1:8787/v1; TOLLGATE_MODEL picks the model.
import OpenAI from 'openai';

const apiKey = process.env.TOLLGATE_KEY;
if (!apiKey) {
  console.error('Set TOLLGATE_KEY to the key `npm start` printed, or to a new one from `npx gateway keys create --org demo`.');
  process.exit(2);
}
const client = new OpenAI({ baseURL: process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8787/v1', apiKey, maxRetries: 0 });
const model = process.env.TOLLGATE_MODEL ?? 'gpt-4o-mini';

const stream = await client.chat.completions.create({
  model,
  stream: true,
  // The last chunk then carries the usage, with Tollgate's cost fields.
  stream_options: { include_usage: true },
  messages: [{ role: 'user', content: process.argv[2] ?? 'Hello! Who are you?' }],
});
let usage;
for await (const chunk of stream) {
  process.stdout.write(chunk.choices[0]?.delta?.content ?? '');
  if (chunk.usage) usage = chunk.usage;
}
process.stdout.write('\n');
if (!usage) throw new Error('the stream ended without usage');
console.log(`${model}: ${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens, cost $${usage.cost_usd_total.toFixed(6)} (input $${usage.cost_usd_input.toFixed(6)}, output $${usage.cost_usd_output.toFixed(6)})`);
