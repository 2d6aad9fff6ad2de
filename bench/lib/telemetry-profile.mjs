// The share of a gateway's CPU that its telemetry takes, read from a V8 CPU profile: the
// main-thread samples under load whose stack passes through src/telemetry, prom-client or
// @opentelemetry (GC left out, it is shared by everything). Unlike throughput, a share of
// one process's own samples hardly moves when other users load the machine. Removing work
// that takes a share f of the CPU would let the same CPU serve 1 / (1 − f) as many requests,
// so telemetry on ÷ off ≈ 1 − f.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAutocannon } from './load.mjs';
import { Child, gatewayArgs } from './procs.mjs';

const TELEMETRY_CODE = ['/dist/src/telemetry/', '/node_modules/prom-client/', '/node_modules/@opentelemetry/'];

/** Busy (non-idle) milliseconds sampled after `skipMs`, and the part of them in telemetry code. */
function telemetryShare(profile, skipMs) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inTelemetry = new Map();
  const isTelemetry = (id) => {
    if (inTelemetry.has(id)) return inTelemetry.get(id);
    const url = byId.get(id).callFrame.url;
    const p = parent.get(id);
    const v = TELEMETRY_CODE.some((s) => url.includes(s)) || (p !== undefined && isTelemetry(p));
    inTelemetry.set(id, v);
    return v;
  };
  let at = 0;
  let busy = 0;
  let telemetry = 0;
  profile.samples.forEach((id, i) => {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    at += dt;
    if (at < skipMs) return;
    const fn = byId.get(id).callFrame.functionName;
    if (fn === '(idle)' || fn === '(garbage collector)') return;
    busy += dt;
    if (isTelemetry(id)) telemetry += dt;
  });
  return { busyMs: busy, telemetryMs: telemetry, share: busy > 0 ? telemetry / busy : NaN };
}

/**
 * Starts a gateway with `extra` config under --cpu-prof, loads it at 32 connections (its
 * /metrics scraped every `scrapeEveryMs`, as in the side-by-side runs), and measures its
 * telemetry share.
 */
export async function profiledShare(ctx, name, extra, scrapeEveryMs) {
  const dir = join(ctx.tmp, `profile-${name}`);
  const file = join(ctx.tmp, `gateway-profile-${name}.yaml`);
  writeFileSync(file, JSON.stringify({ ...ctx.baseConfig, database: { url: `sqlite:${join(ctx.tmp, `gateway-profile-${name}.db`)}` }, ...extra }, null, 2));
  const key = ctx.keyFor(file);
  const child = await Child.start({
    name: `profile-${name}`, args: gatewayArgs(ctx.root, file), cwd: ctx.root,
    ready: /listening on (http:\/\/\S+)/, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  });
  try {
    const load = { url: `${child.url}/v1/chat/completions`, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: ctx.body, connections: 32, collectLatencies: false };
    await runAutocannon({ ...load, durationS: ctx.warmupS });
    const skipMs = performance.now() - child.spawnedAt; // boot and warm-up are not the steady state
    const metricsUrl = child.output.find((l) => l.startsWith('Prometheus metrics on '))?.slice('Prometheus metrics on '.length).trim();
    const scraping = metricsUrl ? setInterval(() => void fetch(metricsUrl).then((res) => res.text(), () => undefined), scrapeEveryMs) : undefined;
    const r = await runAutocannon({ ...load, durationS: ctx.durationS });
    clearInterval(scraping);
    await child.stop(30_000);
    const profile = JSON.parse(readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))), 'utf8'));
    return { rps: r.rps, ...telemetryShare(profile, skipMs) };
  } finally {
    await child.stop();
  }
}
