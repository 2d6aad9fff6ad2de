#!/usr/bin/env node
// What each part of the gateway costs per request: the real gateway (dist/) with features
// added or parts switched off, next to two floors, each in its own process, at 32 connections.
//   floor: bare proxy      node:http + undici, bytes piped (bench/bare-proxy.mjs)
//   floor: fastify         fastify + undici Agent + JSON parse/stringify both ways, nothing else
//   gateway +limits        production as the bench runs it: metrics listener on, every limit
//                          kind on the key, counted on Redis (when one answers; see lib/production.mjs)
//   gateway +metrics       the metrics listener on, no limits
//   gateway                the embedded defaults (SQLite ledger, request log)
//   gateway -ledger        reserve/settle answered in memory (no SQLite write per request)
//   gateway -ledger -log   … and request-log rows dropped instead of written
// Usage: node bench/ablation.mjs [--duration 6] [--rounds 3]
// Reports the lowest server CPU µs per request over the rounds (noise only adds), and the
// Redis server's CPU per request in that round (the limit checks run there).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' }, rounds: { type: 'string', default: '3' },
    serve: { type: 'string' }, off: { type: 'string', default: '' }, 'fastify-floor': { type: 'string' },
  },
});

if (args.serve) await serveGateway(args.serve, args.off.split(',').filter(Boolean));
else if (args['fastify-floor']) await serveFastifyFloor(args['fastify-floor']);
else await main();

/** The gateway from dist/, with the named parts replaced by no-ops on its store. */
async function serveGateway(configFile, off) {
  const { loadGatewayConfig } = await import(join(ROOT, 'dist/src/config/gateway-config.js'));
  const { compileSchemas } = await import(join(ROOT, 'dist/src/config/schemas.js'));
  const { createGateway } = await import(join(ROOT, 'dist/src/gateway.js'));
  const { selectPlugins } = await import(join(ROOT, 'dist/plugins/index.js'));
  const config = loadGatewayConfig(configFile, compileSchemas());
  const gateway = await createGateway({ config, plugins: selectPlugins(config) });
  if (off.includes('ledger')) {
    gateway.store.reserve = async () => true;
    gateway.store.settle = async (_id, cost) => cost;
  }
  if (off.includes('log')) gateway.store.insertLogs = async () => undefined;
  console.log(`gateway (${off.map((o) => `-${o}`).join(' ') || 'as is'}) listening on ${await gateway.listen(0)}`);
  process.on('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
}

/** The framework floor: what fastify, an undici Agent and JSON both ways cost, with no gateway logic. */
async function serveFastifyFloor(simUrl) {
  const { default: Fastify } = await import('fastify');
  const { Agent } = await import('undici');
  const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, pipelining: 1 });
  const app = Fastify({ logger: false });
  app.post('/v1/chat/completions', async (request, reply) => {
    const up = await agent.request({
      origin: simUrl, path: '/openai/v1/chat/completions', method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sim-key' }, body: JSON.stringify(request.body),
    });
    const completion = JSON.parse(await up.body.text());
    return reply.code(up.statusCode).type('application/json').send(JSON.stringify({ ...completion, model: request.body.model }));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  console.log(`fastify floor listening on http://127.0.0.1:${app.server.address().port}`);
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

async function main() {
  const { Child, CpuMeter, cpuMsOfCommand, gatewayNodeFlags, killAll } = await import('./lib/procs.mjs');
  const { forgetRedisKeys, LIMIT_FLAGS, REDIS_PREFIX, REDIS_URL, redisAnswers } = await import('./lib/production.mjs');
  const flags = gatewayNodeFlags(ROOT); // the gateway variants run with the V8 flags of `npm start`
  const { runAutocannon } = await import('./lib/load.mjs');
  process.on('exit', killAll);
  const tmp = mkdtempSync(join(tmpdir(), 'tollgate-ablation-'));
  const self = fileURLToPath(import.meta.url);
  const ready = /listening on (http:\/\/\S+)/;
  const children = [];
  try {
    const sim = await Child.start({ name: 'simulator', args: [join(ROOT, 'bin/gateway.js'), 'simulate', '--port', '0'], cwd: ROOT, ready });
    // One SQLite file per gateway variant: a SQLite database serves one gateway process.
    const gatewayConfig = (name, extra = {}, limitFlags = []) => {
      const file = join(tmp, `gateway-${name}.yaml`);
      writeFileSync(file, JSON.stringify({
        server: { host: '127.0.0.1', port: 0 }, database: { url: `sqlite:${join(tmp, `gateway-${name}.db`)}` }, providers_dir: join(ROOT, 'providers'),
        log: { level: 'warn' }, providers: { openai: { base_url: `${sim.url}/openai/v1`, api_key: 'sim-key' } }, ...extra,
      }));
      const cli = (...a) => execFileSync(process.execPath, [join(ROOT, 'bin/gateway.js'), ...a, '--config', file], { encoding: 'utf8' });
      cli('orgs', 'create', 'bench', '--credits', '1000000');
      return { file, key: cli('keys', 'create', '--org', 'bench', ...limitFlags).trim().split('\n').pop() };
    };
    const metrics = { metrics: { host: '127.0.0.1', port: 0 } };
    const redis = await redisAnswers();
    const production = gatewayConfig('production', { ...metrics, ...(redis ? { redis: { url: REDIS_URL, key_prefix: REDIS_PREFIX } } : {}) }, LIMIT_FLAGS);
    const withMetrics = gatewayConfig('metrics', metrics);
    const plain = gatewayConfig('plain');
    const noLedger = gatewayConfig('no-ledger');
    const noLog = gatewayConfig('no-log');
    console.log(`limits counted ${redis ? `on Redis (${REDIS_URL})` : 'in process (no Redis answered)'}`);
    const variants = [
      ['floor: bare proxy', [join(ROOT, 'bench/bare-proxy.mjs'), '--upstream', `${sim.url}/openai`], 'sim-key'],
      ['floor: fastify', [self, '--fastify-floor', sim.url], 'sim-key'],
      ['gateway +limits', [...flags, self, '--serve', production.file], production.key],
      ['gateway +metrics', [...flags, self, '--serve', withMetrics.file], withMetrics.key],
      ['gateway', [...flags, self, '--serve', plain.file], plain.key],
      ['gateway -ledger', [...flags, self, '--serve', noLedger.file, '--off', 'ledger'], noLedger.key],
      ['gateway -ledger -log', [...flags, self, '--serve', noLog.file, '--off', 'ledger,log'], noLog.key],
    ];
    for (const [name, childArgs, bearer] of variants) {
      const child = await Child.start({ name, args: childArgs, cwd: ROOT, ready });
      children.push({ child, headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` } });
    }
    const body = JSON.stringify({
      model: 'gpt-4o-mini', max_tokens: 64,
      messages: [{ role: 'system', content: 'You are a concise assistant.' }, { role: 'user', content: 'Write one sentence about toll roads.' }],
    });
    const load = (t, durationS, collectLatencies = true) => runAutocannon({ url: `${t.child.url}/v1/chat/completions`, headers: t.headers, body, connections: 32, durationS, collectLatencies });
    for (const t of children) await load(t, 3, false);
    const best = new Map();
    for (let round = 1; round <= Number(args.rounds); round++) {
      for (const t of children) {
        const meter = new CpuMeter([sim, ...children.map((c) => c.child)], t.child);
        const redisMs = cpuMsOfCommand('redis-server');
        const r = await load(t, Number(args.duration));
        const cpu = meter.stop();
        const us = (cpu.cpuMsByChild[t.child.name] * 1000) / r.requests;
        const redisUs = ((cpuMsOfCommand('redis-server') - redisMs) * 1000) / r.requests;
        console.log(`round ${round}  ${t.child.name.padEnd(22)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.latency.p50.toFixed(2)} ms  ${us.toFixed(0).padStart(4)} µs CPU/req  Redis ${redisUs.toFixed(0)} µs/req  (others on the machine ${cpu.others} %)`);
        if (!best.has(t.child.name) || us < best.get(t.child.name).us) best.set(t.child.name, { us, rps: r.rps, redisUs });
      }
    }
    console.log('\n| server | CPU µs per request (best round) | req/s in that round | Redis CPU µs per request in that round |\n|---|---:|---:|---:|');
    for (const [name, b] of best) console.log(`| ${name} | ${b.us.toFixed(0)} | ${b.rps.toFixed(0)} | ${b.redisUs.toFixed(0)} |`);
    children.push({ child: sim });
  } finally {
    for (const { child } of children.reverse()) await child.stop();
    await forgetRedisKeys();
    rmSync(tmp, { recursive: true, force: true });
  }
}
