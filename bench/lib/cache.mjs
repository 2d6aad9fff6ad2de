// The `cache` scenario of bench/run.mjs (docs/cache.md, docs/benchmarks.md): what a response
// cache hit costs against a miss and against the bare proxy's round trip. One gateway in this
// process (the exact cache on for its project, in memory; then on Redis when reachable), the
// simulator and the bare proxy as child processes. Sequential non-streamed chat requests:
// misses each ask a new prompt (one upstream call each), hits repeat a stored one. Latency is
// client side; CPU is this process's (gateway and client, not the simulator's) per request.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Child } from './procs.mjs';
import { deletePrefix, REDIS_URL } from './production.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => import(join(ROOT, 'dist', p));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const PROMPT = 'Write three sentences about toll roads and how caches save money. '.repeat(20);

async function measure(n, send) {
  const us = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    await send(i);
    us.push((performance.now() - a) * 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  return { n, p50: pct(us, 50), p99: pct(us, 99), cpuUsPerRequest: (cpu.user + cpu.system) / n };
}

async function onGateway({ simUrl, redis, n }) {
  const [{ loadGatewayConfig }, { compileSchemas }, { createGateway }, { selectPlugins }, { createOrg, createKey }] = await Promise.all([
    dist('src/config/gateway-config.js'), dist('src/config/schemas.js'), dist('src/gateway.js'), dist('plugins/index.js'), dist('src/tenancy/admin.js'),
  ]);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-cache-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, JSON.stringify({
    server: { host: '127.0.0.1', port: 0 }, database: { url: `sqlite:${join(dir, 'g.db')}` }, providers_dir: join(ROOT, 'providers'),
    providers: { openai: { base_url: `${simUrl}/openai/v1`, api_key: 'sim-key' } }, log: { level: 'silent' },
    ...(redis ? { redis: { url: REDIS_URL, key_prefix: redis.prefix } } : {}),
  }));
  const config = loadGatewayConfig(file, compileSchemas());
  const gateway = await createGateway({ config, plugins: selectPlugins(config) });
  try {
    const url = await gateway.listen(0);
    const org = await createOrg(gateway.store, 'bench', '1000000', 'standard');
    const { key, project } = await createKey(gateway.store, 'bench');
    await gateway.store.tenancy.setCacheSetting(org.id, 'project', project.id, { mode: 'exact' });
    const plain = (await createKey(gateway.store, 'bench', { project: 'default' })).key;
    await gateway.store.tenancy.setCacheSetting(org.id, 'key', (await gateway.store.findApiKey(plain.slice(0, 11))).id, { mode: 'off' });
    const once = async (content, as = key) => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${as}` },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 64 }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      return res.headers.get('x-tollgate-cache');
    };
    const tag = randomBytes(4).toString('hex');
    for (let i = 0; i < 50; i++) await once(`${tag} warm ${i} ${PROMPT}`);
    await once(`${tag} stored ${PROMPT}`);
    if ((await once(`${tag} stored ${PROMPT}`)) !== 'hit') throw new Error('the cache did not hit');
    for (let i = 0; i < 50; i++) await once(`${tag} warm off ${i} ${PROMPT}`, plain);
    const off = await measure(n, (i) => once(`${tag} off ${i} ${PROMPT}`, plain));
    const miss = await measure(n, (i) => once(`${tag} miss ${i} ${PROMPT}`));
    const hit = await measure(n, () => once(`${tag} stored ${PROMPT}`));
    return { off, miss, hit };
  } finally {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function cacheScenario({ say, results, quick }) {
  const n = quick ? 300 : 2_000;
  const out = { n };
  results.cache = out;
  const sim = await Child.start({ name: 'simulator', args: [join(ROOT, 'bin', 'gateway.js'), 'simulate', '--port', '0'], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
  const bare = await Child.start({ name: 'bare', args: [join(ROOT, 'bench', 'bare-proxy.mjs'), '--upstream', `${sim.url}/openai`], cwd: ROOT, ready: /listening on (http:\/\/\S+)/ });
  try {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }], max_tokens: 64 });
    const viaBare = async () => {
      const res = await fetch(`${bare.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sim-key' }, body });
      await res.arrayBuffer();
    };
    for (let i = 0; i < 50; i++) await viaBare();
    out.bare = await measure(n, viaBare);
    out.memory = await onGateway({ simUrl: sim.url, n });
    say(`cache in memory: hit p50 ${out.memory.hit.p50.toFixed(0)} µs, miss ${out.memory.miss.p50.toFixed(0)} µs, bare proxy ${out.bare.p50.toFixed(0)} µs`);
    const { Redis } = await import('ioredis');
    const prefix = `tollgate:bench-cache:${process.pid}_${randomBytes(3).toString('hex')}:`;
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
    try {
      await redis.connect();
      out.redis = await onGateway({ simUrl: sim.url, redis: { prefix }, n });
      say(`cache on Redis: hit p50 ${out.redis.hit.p50.toFixed(0)} µs, miss ${out.redis.miss.p50.toFixed(0)} µs`);
    } catch (err) {
      out.redisReason = `Redis not reachable at ${REDIS_URL}: ${err.message}`;
    } finally {
      await deletePrefix(redis, prefix).catch(() => undefined);
      redis.disconnect();
    }
  } finally {
    await bare.stop();
    await sim.stop();
  }
}

export function cacheMarkdown(c) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(0) : '—');
  const rows = ['| path | p50 µs | p99 µs | CPU µs per request (gateway + client) |', '|---|---:|---:|---:|'];
  const row = (name, r) => rows.push(`| ${name} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.cpuUsPerRequest)} |`);
  row('bare proxy round trip', c.bare);
  if (c.memory) { row('Tollgate, cache off', c.memory.off); row('Tollgate miss (in-memory cache)', c.memory.miss); row('Tollgate hit (in-memory cache)', c.memory.hit); }
  if (c.redis) { row('Tollgate miss (Redis cache)', c.redis.miss); row('Tollgate hit (Redis cache)', c.redis.hit); }
  const lines = [`Sequential non-streamed chat (${c.n} requests each, a ~1,300-character prompt, 64 max tokens) through the simulator.`, '', ...rows];
  if (c.redisReason) lines.push('', `Redis: not measured (${c.redisReason})`);
  return lines.join('\n');
}
