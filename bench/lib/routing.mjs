// The `routing` scenario of bench/run.mjs: what choosing the deployment (provider key) costs a
// request (docs/routing.md). Engine level, in this process, on the built dist/: a Router with
// 1 and with 10 deployments of one provider, each strategy; per request one `acquire` (pick a
// healthy deployment, take its in-flight slot) and the lease's `end`, as the pipeline does.
// Deployments carry no rpm/tpm here (a capacity check is a limits-engine call: see `limits`).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => import(join(ROOT, 'dist', p));

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

function deployments(n) {
  return Array.from({ length: n }, (_, i) => ({
    provider: 'openai', name: `k${i}`, apiKey: `sk-${i}`, baseUrl: 'http://127.0.0.1:9', weight: 1 + (i % 3), rpm: undefined, tpm: undefined,
    id: `openai/k${i}`, fingerprint: `f${i}`,
  }));
}

/** µs per request of acquire + end over `n` requests (after a warm-up), p50/p99 of batches of 100. */
async function measure(router, all, strategy, n) {
  const batchUs = [];
  const run = async (count, keep) => {
    for (let b = 0; b < count / 100; b++) {
      const a = performance.now();
      for (let i = 0; i < 100; i++) {
        const lease = await router.acquire(all, strategy, new Set(), 'req_bench', 100);
        lease.answered(5);
        await lease.end(100);
      }
      if (keep) batchUs.push(((performance.now() - a) * 1000) / 100);
    }
  };
  await run(Math.min(n, 10_000), false);
  await run(n, true);
  return { p50: pct(batchUs, 50), p99: pct(batchUs, 99) };
}

export async function routingScenario({ say, results, quick }) {
  const { Router } = await dist('src/routing/router.js');
  const { CooldownBook } = await dist('src/routing/cooldown.js');
  const n = quick ? 20_000 : 200_000;
  const out = { n, rows: [] };
  for (const size of [1, 10]) {
    const all = deployments(size);
    // One of the ten cooling down, as in a fleet moving traffic off a rate-limited key.
    const cooldowns = new CooldownBook({ now: Date.now });
    if (size > 1) cooldowns.cool(all[3], 3_600_000, '429');
    for (const strategy of ['weighted', 'least_busy', 'lowest_latency']) {
      const router = new Router({ settings: { strategy, cooldownMs: 10_000, groups: new Map() }, cooldowns, now: Date.now });
      const r = await measure(router, all, strategy, n);
      out.rows.push({ deployments: size, strategy, ...r });
      say(`routing: ${size} deployment(s), ${strategy}: ${r.p50.toFixed(2)} µs per request (p99 of batches ${r.p99.toFixed(2)})`);
    }
  }
  results.routing = out;
}

export function routingMarkdown(r) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
  return [
    `Choosing the deployment (provider key) of a request and releasing it: \`Router.acquire\` + the lease's \`end\`, as the pipeline calls them, in one process on the built code; `
      + `${r.n} requests per row, µs per request (median and p99 of batches of 100). With 10 deployments one is cooling down. No rpm/tpm capacity set (that is a limits-engine call: see "Limits check").`,
    '',
    '| deployments | strategy | µs per request (p50) | p99 |',
    '|---:|---|---:|---:|',
    ...r.rows.map((x) => `| ${x.deployments} | ${x.strategy} | ${f(x.p50)} | ${f(x.p99)} |`),
  ].join('\n');
}
