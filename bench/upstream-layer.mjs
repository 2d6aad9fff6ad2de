#!/usr/bin/env node
// The upstream layer alone, in process, checkout against checkout: `UpstreamClient.send`
// plus reading the body (a chat reply whole, a 1,000-token stream chunk by chunk) against
// `gateway simulate`, and `StreamedReply` writing a stream of many small chunks to a
// client through fastify. CPU from process.cpuUsage() (this process: the client side of
// the StreamedReply case is the same code for every checkout), best of --runs alternating
// runs. The rest of the gateway (auth, ledger, log, GC of its allocations) is not in it, so
// differences of a few µs show here that the whole-gateway runs (bench/cpu-per-request.mjs)
// cannot resolve.
//
//   node bench/upstream-layer.mjs --checkout /path/to/before --checkout . --runs 7
//
// Instructions instead of CPU time (exact under any load): one checkout and one case per
// process under callgrind, at two counts; the difference of the totals over the difference
// of the counts is the case's instructions per call, start-up and warm-up cancelled out:
//   valgrind --tool=callgrind --smc-check=all-non-file node bench/upstream-layer.mjs \
//     --checkout DIR --only chat --runs 1 --requests 1000   (then --requests 2000)
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { Pool } from 'undici';
import { median } from './lib/load.mjs';
import { Child, killAll } from './lib/procs.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const { values: opt } = parseArgs({
  options: {
    checkout: { type: 'string', multiple: true },
    requests: { type: 'string', default: '2000' },
    streams: { type: 'string', default: '100' },
    chunks: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '7' },
    only: { type: 'string' },
  },
});
/** `--only chat|stream|reply`: one case alone (e.g. under callgrind, where two counts of it, N and 2N, give its instructions per call). */
const ONLY = opt.only;
const checkouts = (opt.checkout ?? [ROOT]).map((d) => resolve(d));
const N = Number(opt.requests);
const STREAMS = Number(opt.streams);
const CHUNKS = Number(opt.chunks);
const RUNS = Number(opt.runs);

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Write one sentence about toll roads.' }], max_tokens: 64 });
const STREAM = JSON.stringify({
  model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, max_tokens: 1100,
  messages: [{ role: 'user', content: 'Write about toll roads. [[sim:tokens=1000]]' }],
});

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function measure(count, fn) {
  const before = cpuUs();
  for (let i = 0; i < count; i++) await fn();
  return (cpuUs() - before) / count;
}

/** A fastify app whose one route writes CHUNKS small chunks through the checkout's StreamedReply. */
async function streamServer(StreamedReply) {
  const app = Fastify({ logger: false });
  const chunk = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'word ' } }] })}\n\n`;
  app.get('/s', async (_request, reply) => {
    const ex = { abort: new AbortController() };
    const out = new StreamedReply(ex, reply, 30_000).start({ 'content-type': 'text/event-stream' });
    for (let i = 0; i < CHUNKS; i++) if (!(await out.write(chunk))) break;
    await out.end('data: [DONE]\n\n');
    return reply;
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address();
  return { app, pool: new Pool(`http://127.0.0.1:${port}`, { connections: 1 }) };
}

async function main() {
  process.on('exit', killAll);
  const sim = await Child.start({ name: 'simulator', args: [join(checkouts[0], 'bin', 'gateway.js'), 'simulate', '--port', '0'], cwd: checkouts[0], ready: /listening on (http:\/\/\S+)/ });
  const subjects = [];
  for (const root of checkouts) {
    const { UpstreamClient } = await import(pathToFileURL(join(root, 'dist', 'src', 'pipeline', 'upstream.js')).href);
    const { StreamedReply } = await import(pathToFileURL(join(root, 'dist', 'src', 'pipeline', 'streamed-reply.js')).href);
    const client = new UpstreamClient();
    const route = {
      provider: { id: 'openai', baseUrl: `${sim.url}/openai/v1`, headers: {}, auth: { header: 'authorization', format: 'Bearer {key}' } },
      endpoint: { method: 'POST', timeoutMs: 30_000 },
    };
    const signal = new AbortController().signal;
    const send = (body) => client.send(route, { path: '/chat/completions', body, contentType: 'application/json' }, 'sim-key', signal);
    /** A reply other than a 200 would time the wrong thing: refused at once. */
    const ok = (res) => {
      if (res.statusCode !== 200) throw new Error(`${root}: the simulator answered ${res.statusCode}`);
      return res;
    };
    const chat = async () => {
      const res = ok(await send(CHAT));
      await res.body.text();
    };
    const stream = async () => {
      const res = ok(await send(STREAM));
      for await (const _chunk of res.body);
    };
    const server = await streamServer(StreamedReply);
    const reply = async () => {
      const res = await server.pool.request({ path: '/s', method: 'GET' });
      await res.body.dump({ limit: Number.MAX_SAFE_INTEGER });
    };
    subjects.push({ root, client, server, chat, stream, reply, results: { chat: [], stream: [], reply: [] } });
  }
  const on = (name) => ONLY === undefined || ONLY === name;
  const skip = () => NaN;
  for (const s of subjects) {
    if (on('chat')) await measure(500, s.chat);
    if (on('stream')) await measure(50, s.stream);
    if (on('reply')) await measure(50, s.reply);
  }
  for (let run = 1; run <= RUNS; run++) {
    for (const s of subjects) {
      s.results.chat.push(on('chat') ? await measure(N, s.chat) : skip());
      s.results.stream.push(on('stream') ? await measure(STREAMS, s.stream) : skip());
      s.results.reply.push(on('reply') ? await measure(STREAMS, s.reply) : skip());
      console.error(`run ${run} ${s.root}: send+text ${s.results.chat.at(-1).toFixed(1)} µs, send+stream ${s.results.stream.at(-1).toFixed(1)} µs, StreamedReply ${s.results.reply.at(-1).toFixed(1)} µs`);
    }
  }
  const best = (xs) => Math.min(...xs).toFixed(1);
  const mid = (xs) => median(xs).toFixed(1);
  console.log(`\nCPU µs (process.cpuUsage), best (median) of ${RUNS} alternating runs`);
  console.log(`\n| checkout | send + text(), chat reply | send + for await, 1,000-token stream | StreamedReply, ${CHUNKS} chunks to a client |\n|---|---:|---:|---:|`);
  for (const s of subjects) {
    const r = s.results;
    console.log(`| ${s.root} | ${best(r.chat)} (${mid(r.chat)}) | ${best(r.stream)} (${mid(r.stream)}) | ${best(r.reply)} (${mid(r.reply)}) |`);
  }
  for (const s of subjects) {
    await s.client.close();
    await s.server.pool.close();
    await s.server.app.close();
  }
  await sim.stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
