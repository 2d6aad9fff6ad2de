// The `limits` scenario of bench/run.mjs: what the limit check (docs/limits.md) costs a
// request. Engine level, in this process, with the two scopes a request checks (its key
// and its project) limited by rpm, tpm, max_concurrent and a budget: admit + settle per
// request on the in-process driver and on Redis (the machine's, under a key prefix of its
// own), with the Redis round trips counted on the client. End to end: a real gateway
// (in this process, Redis configured) in front of the simulator, sequential requests
// alternating blocks of a key without limits and a key with all four, p50 of each.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deletePrefix, REDIS_URL } from './production.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => import(join(ROOT, 'dist', p));

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const LIMITS = { rpm: 1e9, tpm: 1e12, maxConcurrent: 1e6, budget: { micros: 1e12, period: 'month' } };

/** An ioredis client whose script calls (the engine's only Redis commands) are counted. */
function counted(redis) {
  const count = { calls: 0 };
  const client = new Proxy(redis, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'evalsha' || prop === 'eval') return (...args) => { count.calls++; return v.apply(target, args); };
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { client, count };
}

/** `n` sequential admit + settle of one request over two limited scopes; µs per request and per call. */
async function engine(limiter, n, tag) {
  const scopes = [{ id: `key:${tag}`, limits: LIMITS }, { id: `project:${tag}`, limits: LIMITS }];
  const admitUs = [];
  const totalUs = [];
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    const v = await limiter.admit({ requestId: `req_${i}`, scopes, tokens: 100, costMicros: 50 });
    const b = performance.now();
    if (!v.ok) throw new Error(`refused: ${v.error.message}`);
    await limiter.settle(v.hold, { tokens: 80, costMicros: 40 });
    const c = performance.now();
    admitUs.push((b - a) * 1000);
    totalUs.push((c - a) * 1000);
  }
  return { n, admitP50: pct(admitUs, 50), admitP99: pct(admitUs, 99), totalP50: pct(totalUs, 50), totalP99: pct(totalUs, 99) };
}

/** `n` requests with `inFlight` at a time: throughput of admit + settle. */
async function engineConcurrent(limiter, n, inFlight, tag) {
  const scopes = [{ id: `key:${tag}`, limits: LIMITS }, { id: `project:${tag}`, limits: LIMITS }];
  let next = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    for (let i = next++; i < n; i = next++) {
      const v = await limiter.admit({ requestId: `req_c${i}`, scopes, tokens: 100, costMicros: 50 });
      if (v.ok) await limiter.settle(v.hold, { tokens: 80, costMicros: 40 });
    }
  }));
  const s = (performance.now() - start) / 1000;
  return { n, inFlight, perSecond: n / s, usPerRequest: (s * 1e6) / n };
}

async function endToEnd({ say, redisUrl, prefix, n }) {
  const [{ loadGatewayConfig }, { compileSchemas }, { createGateway }, { selectPlugins }, { startSimulator }, { createOrg, createKey }] = await Promise.all([
    dist('src/config/gateway-config.js'), dist('src/config/schemas.js'), dist('src/gateway.js'), dist('plugins/index.js'), dist('simulator/server.js'), dist('src/tenancy/admin.js'),
  ]);
  const sim = await startSimulator({ port: 0 });
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-limits-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, JSON.stringify({
    server: { host: '127.0.0.1', port: 0 }, database: { url: `sqlite:${join(dir, 'g.db')}` }, providers_dir: join(ROOT, 'providers'),
    providers: { openai: { base_url: `${sim.url}/openai/v1`, api_key: 'sim-key' } }, log: { level: 'silent' },
    redis: { url: redisUrl, key_prefix: prefix },
  }));
  const config = loadGatewayConfig(file, compileSchemas());
  const gateway = await createGateway({ config, plugins: selectPlugins(config) });
  try {
    const url = await gateway.listen(0);
    await createOrg(gateway.store, 'bench', '1000000', 'standard');
    const free = (await createKey(gateway.store, 'bench')).key;
    const limited = (await createKey(gateway.store, 'bench', { limits: LIMITS })).key;
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Write one sentence about toll roads.' }], max_tokens: 64 });
    const once = async (key) => {
      const a = performance.now();
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      return (performance.now() - a) * 1000;
    };
    for (let i = 0; i < 100; i++) await once(i % 2 ? free : limited); // warm-up
    const freeUs = [];
    const limitedUs = [];
    // Alternating blocks of 50, so both keys see the same machine noise, while a limited
    // request's settle (after its response) rarely overlaps a request of the other key.
    for (let i = 0; i < n; i += 50) {
      for (let j = 0; j < 50; j++) freeUs.push(await once(free));
      for (let j = 0; j < 50; j++) limitedUs.push(await once(limited));
    }
    say(`limits end to end: ${n} requests per key`);
    return { n, freeP50: pct(freeUs, 50), limitedP50: pct(limitedUs, 50), freeP99: pct(freeUs, 99), limitedP99: pct(limitedUs, 99) };
  } finally {
    await gateway.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function limitsScenario({ say, results, quick }) {
  const { createLimiter } = await dist('src/limits/index.js');
  const n = quick ? 2_000 : 20_000;
  const tag = `bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const out = { scopes: 2, kinds: ['rpm', 'tpm', 'concurrency', 'budget'] };
  results.limits = out;
  const memory = createLimiter({ seed: async () => 0 });
  await engine(memory, 1_000, `${tag}_warm`);
  out.memory = await engine(memory, n, tag);
  out.memoryConcurrent = await engineConcurrent(memory, n, 32, `${tag}_c`);
  await memory.close();
  say(`limits in-process: admit + settle p50 ${out.memory.totalP50.toFixed(1)} µs`);

  const { Redis } = await import('ioredis');
  const prefix = `tollgate:bench-limits:${tag}:`;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
  } catch (err) {
    out.redis = { reason: `Redis not reachable at ${REDIS_URL}: ${err.message}` };
    redis.disconnect();
    return;
  }
  try {
    const { client, count } = counted(redis);
    const limiter = createLimiter({ redis: client, seed: async () => 0, keyPrefix: prefix });
    await engine(limiter, 500, `${tag}_warm`);
    count.calls = 0;
    out.redis = await engine(limiter, n, tag);
    out.redis.roundTripsPerRequest = count.calls / n;
    count.calls = 0;
    out.redisConcurrent = await engineConcurrent(limiter, n, 32, `${tag}_c`);
    out.redisConcurrent.roundTripsPerRequest = count.calls / n;
    await limiter.close();
    say(`limits on Redis: admit + settle p50 ${out.redis.totalP50.toFixed(1)} µs, ${out.redis.roundTripsPerRequest} round trips per request`);
    out.endToEnd = await endToEnd({ say, redisUrl: REDIS_URL, prefix, n: quick ? 300 : 2_000 });
  } finally {
    // The bench's own keys only (its prefix); never anything else on the shared Redis.
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }
}

export function limitsMarkdown(l) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
  const rows = [
    '| driver | admit p50 | admit p99 | admit + settle p50 | admit + settle p99 | Redis round trips per request | at 32 in flight: µs per request (requests/s) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  const row = (name, r, c) => rows.push(`| ${name} | ${f(r.admitP50)} | ${f(r.admitP99)} | ${f(r.totalP50)} | ${f(r.totalP99)} | ${(r.roundTripsPerRequest ?? 0).toFixed(2)} | ${f(c?.usPerRequest)} (${Math.round(c?.perSecond ?? 0)}) |`);
  if (l.memory) row('in-process', l.memory, l.memoryConcurrent);
  if (l.redis?.totalP50 !== undefined) row('Redis (loopback)', l.redis, l.redisConcurrent);
  const lines = [`Per request: two scopes (key and project), each limited by rpm, tpm, max_concurrent and a budget; microseconds, ${l.memory?.n ?? 0} sequential requests.`, '', ...rows];
  if (l.redis?.reason) lines.push('', `Redis: not measured (${l.redis.reason})`);
  if (l.endToEnd) {
    const e = l.endToEnd;
    lines.push('', `End to end (one gateway with Redis, chat through the simulator, ${e.n} sequential requests per key in alternating blocks of 50): `
      + `p50 ${f(e.freeP50)} µs without limits, ${f(e.limitedP50)} µs with all four on key and project (+${f(e.limitedP50 - e.freeP50)} µs); `
      + `p99 ${f(e.freeP99)} / ${f(e.limitedP99)} µs.`);
  }
  return lines.join('\n');
}
