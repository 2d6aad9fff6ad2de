// The profile scenario of `npm run bench` (bench/run.mjs, --only profile or profile-stream): the
// gateway, then the bare proxy, under `node --cpu-prof`, summarised by area and self time; the
// gateway's profile is kept under bench/results/. `ctx` is the run's: { root, bench, say }.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { summariseProfile } from './cpuprofile.mjs';
import { fmt, runAutocannon, runStreams } from './load.mjs';
import { Child, gatewayArgs } from './procs.mjs';
import { QUICK, WARMUP_S } from './options.mjs';
import { CHAT_JSON, STREAM_JSON } from './chat.mjs';

/** Starts `args` under `node --cpu-prof`, loads it at 32 connections, and summarises the samples taken under load. */
async function profileOne(root, { name, args, path, headers, dir, durationS, streamed }) {
  const child = await Child.start({
    name, args, cwd: root, ready: /listening on (http:\/\/\S+)/,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`],
  });
  const load = (seconds) => (streamed
    ? runStreams({ url: child.url, path, headers, body: STREAM_JSON, concurrency: 32, durationS: seconds })
    : runAutocannon({ url: child.url + path, headers, body: CHAT_JSON, connections: 32, durationS: seconds, collectLatencies: false }));
  // Boot, module loading and the JIT warm-up are not the hot path: their samples are left out.
  await load(WARMUP_S);
  const skipMs = performance.now() - child.spawnedAt;
  const r = await load(durationS);
  await child.stop(30_000);
  const file = join(dir, `${name}.cpuprofile`);
  if (!existsSync(file)) throw new Error(`no profile was written for ${name}:\n${child.tail()}`);
  return { file, rps: r.rps, requests: r.requests, summary: summariseProfile(JSON.parse(readFileSync(file, 'utf8')), { root, top: 40, skipMs }) };
}

/** Profiles the gateway of `configFile` (its key `key`) and the bare proxy in front of the simulator at `simUrl`. */
export async function profileScenario({ root, bench, say }, configFile, key, simUrl, tmp, date, results, streamed) {
  const dir = join(tmp, 'cpuprofile');
  mkdirSync(dir, { recursive: true });
  const durationS = QUICK ? 4 : 12;
  say(`profile: the gateway, then the bare proxy, under --cpu-prof at 32 ${streamed ? 'streams' : 'connections'} for ${durationS} s each`);
  try {
    const gw = await profileOne(root, {
      name: 'gateway', args: gatewayArgs(root, configFile), path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, dir, durationS, streamed,
    });
    const bare = await profileOne(root, {
      name: 'bare', args: [join(bench, 'bare-proxy.mjs'), '--upstream', `${simUrl}/openai`], path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sim-key' }, dir, durationS, streamed,
    });
    const kept = join(bench, 'results', `${date}-gateway${streamed ? '-stream' : ''}.cpuprofile`);
    copyFileSync(gw.file, kept);
    results.profile = {
      connections: 32, streamed: Boolean(streamed), durationS, rps: gw.rps, requests: gw.requests, file: kept.slice(root.length + 1), summary: gw.summary,
      bare: { rps: bare.rps, requests: bare.requests, summary: { busyMs: bare.summary.busyMs, byArea: bare.summary.byArea, bySelf: bare.summary.bySelf.slice(0, 15), allAreas: bare.summary.allAreas } },
    };
    say(`profile: gateway ${fmt(gw.rps, 0)} req/s, ${fmt((gw.summary.busyMs * 1000) / gw.requests, 0)} µs CPU/req while profiled; bare ${fmt(bare.rps, 0)} req/s, ${fmt((bare.summary.busyMs * 1000) / bare.requests, 0)} µs CPU/req. Gateway top self time:`);
    for (const f of gw.summary.bySelf.slice(0, 12)) say(`  ${fmt(f.selfPct, 1).padStart(5)} %  ${f.name}  ${f.location}`);
    say(`  saved ${results.profile.file} (open in Chrome DevTools › Performance)`);
  } catch (err) {
    results.profile = { error: err.message };
    say(`profile failed: ${err.message}`);
  }
}
