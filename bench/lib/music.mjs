// The music scenario of `npm run bench` (bench/run.mjs): a burst of MB-sized songs through the
// bare proxy and through a second gateway (S3 storage when s3rver started), with peak RSS.
// `ctx` is the run's: { root, say, allChildren }.
import { fmt, requestOnce, runBurst, sleep } from './load.mjs';
import { Child, gatewayArgs, RssSampler } from './procs.mjs';
import { validateLyria, validateMusic } from './checks.mjs';
import { MUSIC_COUNT, MUSIC_SIZE_MB } from './options.mjs';

const MUSIC_PROMPT = `An upbeat synth-pop track about a highway at night, with a catchy chorus. [[sim:size_mb=${MUSIC_SIZE_MB}]]`;

export async function musicScenario(ctx, configFile, key, bare, storage, results) {
  const { root, say, allChildren } = ctx;
  const child = await Child.start({ name: 'gateway-music', args: gatewayArgs(root, configFile), cwd: root, ready: /listening on (http:\/\/\S+)/ });
  allChildren.push(child);
  say(`music gateway ${child.url} (pid ${child.pid}; default configuration${storage ? ' + S3 storage on s3rver' : ', no S3 (s3rver did not start)'})`);
  try {
    await sleep(300);
    const idleMb = child.memory().rssMb;
    await musicRuns(say, { name: 'gateway', child, url: child.url, key }, bare, storage, results);
    if (results.music.gateway) results.music.gateway.idleRssMb = idleMb;
  } finally {
    allChildren.splice(allChildren.indexOf(child), 1);
    await child.stop();
  }
}

async function musicRuns(say, gateway, bare, storage, results) {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${gateway.key}` };
  const body = JSON.stringify({ model: 'tune-3-pro-preview', prompt: MUSIC_PROMPT });
  say('music: probing POST /v1/music');
  const probe = await requestOnce({ url: gateway.url, path: '/v1/music', headers, body: JSON.stringify({ model: 'tune-3-pro-preview', prompt: 'probe [[sim:size_mb=1]]' }), timeoutMs: 120_000 });
  if (probe.status === 404 && probe.text.includes('route_not_found')) {
    results.music = { reason: 'not available in this build (POST /v1/music is 404 route_not_found)' };
    say(`music: ${results.music.reason}`);
    return;
  }
  if (probe.status !== 200) {
    results.music = { reason: `probe failed: status ${probe.status}: ${probe.text.slice(0, 200)}` };
    say(`music: ${results.music.reason}`);
    return;
  }
  results.music = { storage: storage ? 's3' : 'inline', count: MUSIC_COUNT, sizeMb: MUSIC_SIZE_MB };
  const lyriaBody = JSON.stringify({ contents: [{ parts: [{ text: MUSIC_PROMPT }] }], generationConfig: { responseModalities: ['AUDIO', 'TEXT'] } });
  const runs = [
    ['bare', bare, { url: bare.url, path: '/v1beta/models/lyria-3-pro-preview:generateContent', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'sim-key' }, body: lyriaBody, validate: validateLyria(MUSIC_SIZE_MB) }],
    ['gateway', gateway, { url: gateway.url, path: '/v1/music', headers, body, validate: validateMusic(storage ? 's3' : undefined, MUSIC_SIZE_MB) }],
  ];
  for (const [name, target, req] of runs) {
    await sleep(500);
    target.child.resetPeak();
    const rssBeforeMb = target.child.memory().rssMb;
    const sampler = new RssSampler([target.child], 50);
    const r = await runBurst({ ...req, count: MUSIC_COUNT, timeoutMs: 240_000 });
    const sampled = sampler.stop().get(target.child.name);
    r.peakRssMb = Math.max(target.child.memory().hwmMb || 0, sampled);
    r.rssBeforeMb = rssBeforeMb;
    results.music[name] = r;
    say(`music ${name.padEnd(7)} ${r.ok}/${r.count} ok, wall ${fmt(r.wallMs / 1000)} s, p50 ${fmt(r.latency.p50 / 1000)} s, peak RSS ${fmt(r.peakRssMb, 0)} MB${r.errors.length ? `  !! ${r.errors.join('; ')}` : ''}`);
  }
}
