// Turns a results object into the target checks and the markdown tables.
import { telemetryMarkdown, telemetryTarget } from './telemetry.mjs';
import { logsMarkdown } from './logs.mjs';
import { limitsMarkdown } from './limits.mjs';
import { cacheMarkdown } from './cache.mjs';
import { routingMarkdown } from './routing.mjs';
import { guardrailsMarkdown } from './guardrails.mjs';
import { pgMarkdown, pgTargets } from './pg.mjs';

const NAMES = { bare: 'bare proxy', gateway: 'Tollgate (limits + metrics)', metrics: 'Tollgate (metrics, no limits)', plain: 'Tollgate (neither)', baseline: 'Tollgate (--compare baseline)', portkey: 'Portkey' };

const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
const f0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '—');
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN);
const times = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '—');
const diff = (x) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(2)} ms` : '—');

/** The issue's targets, each with the measured figure and whether it is met (null: not measured). */
export function evaluateTargets(r) {
  const c32 = r.chat?.['32'] ?? {};
  const c1 = r.chat?.['1'] ?? {};
  const s1 = r.stream?.['1'] ?? {};
  const checks = [];
  const add = (goal, measured, met) => checks.push({ goal, measured, met });
  const tput = ratio(c32.gateway?.rps, c32.bare?.rps);
  add('chat, 32 conns: throughput ≥ 0.75 × bare', times(tput), Number.isFinite(tput) ? tput >= 0.75 : null);
  const p99 = ratio(c32.gateway?.latency.p99, c32.bare?.latency.p99);
  add('chat, 32 conns: p99 ≤ 1.5 × bare', times(p99), Number.isFinite(p99) ? p99 <= 1.5 : null);
  const p50d = (c1.gateway?.latency.p50 ?? NaN) - (c1.bare?.latency.p50 ?? NaN);
  add('chat, 1 conn: p50 ≤ bare + 0.2 ms', diff(p50d), Number.isFinite(p50d) ? p50d <= 0.2 : null);
  const ttfbd = (s1.gateway?.ttfb.p50 ?? NaN) - (s1.bare?.ttfb.p50 ?? NaN);
  add('streamed chat (1 stream at a time): TTFB p50 ≤ bare + 1 ms', diff(ttfbd), Number.isFinite(ttfbd) ? ttfbd <= 1 : null);
  const s32 = r.stream?.['32'] ?? {};
  const sTput = ratio(s32.gateway?.rps, s32.bare?.rps);
  add('streamed chat, 32 streams at once: streams/s ≥ 0.6 × bare', times(sTput), Number.isFinite(sTput) ? sTput >= 0.6 : null);
  const ttfb32 = (s32.gateway?.ttfb.p50 ?? NaN) - (s32.bare?.ttfb.p50 ?? NaN);
  add('streamed chat, 32 streams at once: TTFB p50 ≤ bare + 1 ms', diff(ttfb32), Number.isFinite(ttfb32) ? ttfb32 <= 1 : null);
  const vsPk = ratio(c32.gateway?.rps, c32.portkey?.rps);
  add('chat, 32 conns: throughput ≥ 10 × Portkey', r.peers ? times(vsPk) : 'not run (--peers)', Number.isFinite(vsPk) ? vsPk >= 10 : null);
  // The worst round counts for memory (the best-throughput round is not the one to judge a ceiling by).
  const rss = Math.max(...(c32.gateway?.rounds ?? [c32.gateway ?? {}]).map((x) => x.peakRssMb ?? NaN));
  add('gateway peak RSS under the 32-conn chat load ≤ 150 MB (worst round)', Number.isFinite(rss) ? `${f0(rss)} MB` : '—', Number.isFinite(rss) ? rss <= 150 : null);
  if (r.soak) {
    add('no RSS growth across the soak beyond noise (≤ 10 % or ≤ 10 MB)', `${f0(r.soak.rssAtRefMb)} → ${f0(r.soak.rssAtEndMb)} MB (${diff(r.soak.growthMb).replace(' ms', ' MB')})`, r.soak.withinNoise);
  } else {
    add('no RSS growth across a 5-minute soak', 'not run (--soak)', null);
  }
  const m = r.music?.gateway;
  if (m) {
    add('music: 20 concurrent pro generations all succeed', `${m.ok}/${m.count}`, m.ok === m.count);
    add('music: gateway peak RSS ≤ 400 MB', `${f0(m.peakRssMb)} MB`, Number.isFinite(m.peakRssMb) ? m.peakRssMb <= 400 : null);
  } else {
    add('music: 20 concurrent pro generations, peak RSS ≤ 400 MB', r.music?.reason ?? 'not run', null);
  }
  if (r.options.scenarios?.includes('telemetry')) checks.push(telemetryTarget(r.telemetry));
  for (const [store, l] of Object.entries(r.logs ?? {})) {
    if (!l.queries) continue;
    const lists = Object.entries(l.queries).filter(([name]) => name.startsWith('list') || name.startsWith('filter:'));
    const worst = Math.max(...lists.map(([, q]) => q.p99));
    add(`logs (${store}, ${f0(l.rows)} rows): list and every filter p99 ≤ 100 ms`, `${f1(worst)} ms`, worst <= 100);
  }
  if (r.pg) pgTargets(r.pg, add);
  if (!r.options.soak) add('whole run (without --soak) < 10 minutes', `${f0(r.elapsedS)} s`, r.elapsedS < 600);
  return checks;
}

function chatTable(r) {
  const levels = Object.keys(r.chat ?? {});
  if (levels.length === 0) return '';
  const pk = r.peers;
  const lines = [
    `| conns | server | req/s | p50 ms | p99 ms | server CPU µs/req | CPU % server / sim / loadgen / others | peak RSS MB | req/s ÷ bare | p50 ÷ bare | p99 ÷ bare |${pk ? ' req/s ÷ Portkey |' : ''}`,
    `|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|${pk ? '---:|' : ''}`,
  ];
  for (const c of levels) {
    const row = r.chat[c];
    for (const t of Object.keys(row)) {
      const x = row[t];
      const b = row.bare;
      const rel = t === 'bare' ? ['1', '1', '1'] : [times(ratio(x.rps, b?.rps)), times(ratio(x.latency.p50, b?.latency.p50)), times(ratio(x.latency.p99, b?.latency.p99))];
      const vsPk = t === 'gateway' ? times(ratio(x.rps, row.portkey?.rps)) : '';
      const bad = x.non2xx + x.errors > 0 ? ` (${x.non2xx} non-2xx, ${x.errors} errors)` : '';
      const cpu = x.cpu ? `${f0(x.cpu[t])} / ${f0(x.cpu.simulator)} / ${f0(x.cpu.loadgen)} / ${f0(x.cpu.others)}` : '—';
      lines.push(`| ${c} | ${NAMES[t]}${bad} | ${f0(x.rps)} | ${f2(x.latency.p50)} | ${f2(x.latency.p99)} | ${f0(x.cpuUsPerReq)} | ${cpu} | ${f0(x.peakRssMb)} | ${rel.join(' | ')} |${pk ? ` ${vsPk} |` : ''}`);
    }
  }
  return lines.join('\n');
}

function streamTable(r) {
  const levels = Object.keys(r.stream ?? {});
  if (levels.length === 0) return '';
  const lines = [
    '| streams at once | server | streams/s | TTFB p50 ms | TTFB p99 ms | total p50 ms | total p99 ms | TTFB p50 − bare | TTFB p99 ÷ bare | total p50 ÷ bare |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of levels) {
    const row = r.stream[c];
    for (const t of Object.keys(row)) {
      const x = row[t];
      const b = row.bare;
      const rel = t === 'bare' ? ['0 ms', '1', '1'] : [diff(x.ttfb.p50 - b?.ttfb.p50), times(ratio(x.ttfb.p99, b?.ttfb.p99)), times(ratio(x.total.p50, b?.total.p50))];
      const bad = x.failed > 0 ? ` (${x.failed} failed)` : '';
      lines.push(`| ${c} | ${NAMES[t]}${bad} | ${f0(x.rps)} | ${f2(x.ttfb.p50)} | ${f2(x.ttfb.p99)} | ${f2(x.total.p50)} | ${f2(x.total.p99)} | ${rel.join(' | ')} |`);
    }
  }
  return lines.join('\n');
}

function musicTable(r) {
  const m = r.music;
  if (!m) return '';
  if (!m.gateway) return `Music: ${m.reason}.`;
  const lines = [
    '| server | succeeded | wall s | p50 s | p99 s | MB per reply | RSS before MB | peak RSS MB | wall ÷ bare | peak RSS ÷ bare |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const t of ['bare', 'gateway']) {
    const x = m[t];
    if (!x) continue;
    const rel = t === 'bare' ? ['1', '1'] : [times(ratio(x.wallMs, m.bare?.wallMs)), times(ratio(x.peakRssMb, m.bare?.peakRssMb))];
    lines.push(`| ${NAMES[t]}${t === 'bare' ? ' (raw Lyria call)' : ` (POST /v1/music, storage ${m.storage})`} | ${x.ok}/${x.count} | ${f2(x.wallMs / 1000)} | ${f2(x.latency.p50 / 1000)} | ${f2(x.latency.p99 / 1000)} | ${f1(x.meanBytes / 1e6)} | ${f0(x.rssBeforeMb)} | ${f0(x.peakRssMb)} | ${rel.join(' | ')} |`);
  }
  if (m.gateway.errors?.length) lines.push('', `Failures: ${m.gateway.errors.join('; ')}`);
  return lines.join('\n');
}

function memoryTable(r) {
  const lines = ['| server | RSS idle after start, MB | peak RSS during chat runs, MB | RSS after chat runs, MB |', '|---|---:|---:|---:|'];
  for (const [t, x] of Object.entries(r.memory ?? {})) lines.push(`| ${NAMES[t] ?? t} | ${f0(x.idleMb)} | ${f0(x.chatPeakMb)} | ${f0(x.afterChatMb)} |`);
  return lines.join('\n');
}

function soakText(r) {
  const s = r.soak;
  if (!s) return '';
  return `Soak: Tollgate under ${s.connections} connections for ${f0(s.durationS)} s (${f0(s.rps)} req/s, ${s.non2xx} non-2xx): RSS ${f0(s.rssAtRefMb)} MB at ${s.refS} s, ${f0(s.rssAtEndMb)} MB at the end, `
    + `growth ${f1(s.growthMb)} MB (${f1(s.growthPct)} %), peak ${f0(s.peakMb)} MB: ${s.withinNoise ? 'no growth beyond noise' : 'GROWTH beyond noise'}.`;
}

function targetsTable(checks) {
  const mark = (m) => (m === true ? 'met' : m === false ? '**not met**' : 'n/a');
  return ['| target | measured | |', '|---|---:|---|', ...checks.map((c) => `| ${c.goal} | ${c.measured} | ${mark(c.met)} |`)].join('\n');
}

/** The whole results section: machine, tables, targets. Sections of scenarios not run are left out. */
export function resultsMarkdown(r) {
  const m = r.machine;
  const skipped = Object.entries(r.skipped ?? {}).map(([k, v]) => `- ${NAMES[k] ?? k} not measured: ${v}`).join('\n');
  const out = [
    `### Run of ${r.date}`,
    '',
    `Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${f0(m.memGb)} GB RAM, ${m.os}; Node ${m.node}. `
      + `Tollgate ${r.tollgate.version} at ${r.tollgate.commit}${r.tollgate.dirty ? ' (plus uncommitted changes in src/, plugins/, simulator/, cli/ or providers/)' : ''}${r.portkeyVersion ? `; Portkey gateway ${r.portkeyVersion}` : ''}. `
      + `Run took ${f0(r.elapsedS)} s; options: \`${r.options.argv || '(defaults)'}\`.`,
  ];
  if (skipped) out.push('', skipped);
  if (r.gatewayConfig) out.push('', ...Object.entries(r.gatewayConfig).map(([name, what]) => `- ${NAMES[name] ?? name}: ${what}.`));
  const section = (title, ...body) => out.push('', `#### ${title}`, '', ...body);
  if (r.chat) {
    section('Non-streamed chat',
      `\`POST /v1/chat/completions\`, model \`gpt-4o-mini\`, closed loop (autocannon), ${r.options.durationS} s per run, ${r.options.rounds} interleaved round(s) per level, the best round of each server shown. `
        + 'Latency percentiles are per request, in ms, from the client\'s side. "server CPU µs/req" is user+system CPU time of the server process alone, divided by the requests it served; '
        + '"CPU %" is where the machine\'s cores went during the run (100 = one core): the server, the simulator, the load generator, and other processes on the shared machine.',
      '', chatTable(r));
  }
  if (r.stream) {
    section('Streamed chat',
      `Same request with \`stream: true\` and \`stream_options.include_usage\`; ${r.options.streamS} s per run, best of ${r.options.rounds} round(s) by TTFB p50. TTFB is the first body byte as the client reads it; total is the end of the stream (\`[DONE]\`).`,
      '', streamTable(r));
  }
  if (r.music) {
    section('Music',
      r.music.gateway ? `${r.music.count} concurrent \`tune-3-pro-preview\` generations of ~${r.music.sizeMb} MB tracks (\`[[sim:size_mb=${r.music.sizeMb}]]\`), each on its own connection, against a second gateway process on the same database with \`storage.s3\` on s3rver; the bare proxy row is the same upstream call (Lyria generateContent) passed straight through, the floor for moving those bytes.` : '',
      '', musicTable(r));
  }
  if (r.telemetry) section('Telemetry cost', telemetryMarkdown(r.telemetry));
  if (r.chat) section('Memory', memoryTable(r));
  if (r.logs) {
    section('Request logs at scale (management API)',
      'The console\'s queries over HTTP against `gateway serve`, signed in as an operator: each store filled in SQL with one org\'s rows spread over 30 days '
        + '(4 % errors, 5 models, 2 projects and keys) plus a tenth as many of another org, then each query timed over sequential requests (client side, warm). '
        + 'Lists are 50 rows, newest first; "next pages" follows `next_cursor` page after page.',
      '', logsMarkdown(r.logs));
  }
  if (r.limits) section('Limits check', limitsMarkdown(r.limits));
  if (r.cache) section('Response cache: hit, miss and the bare proxy', cacheMarkdown(r.cache));
  if (r.routing) section('Deployment choice (routing)', routingMarkdown(r.routing));
  if (r.guardrails) section('Guardrails', guardrailsMarkdown(r.guardrails));
  if (r.pg) {
    section('Credit ledger on PostgreSQL (one busy org)',
      'Non-streamed chat (`gpt-4o-mini`, 16 tokens) from one key of one org — every request reserves and settles on the same balance — '
        + 'through `gateway serve` in front of the simulator, 32 connections in all (split evenly over the instances), in the same run.',
      '', pgMarkdown(r.pg));
  }
  if (r.soak) section('Soak', soakText(r));
  section('Targets', targetsTable(r.checks));
  return out.join('\n');
}

/** The profile section: what dominates, as tables. */
export function profileMarkdown(p) {
  if (!p) return '';
  if (p.error) return `Profile not taken: ${p.error}`;
  const s = p.summary;
  const perReq = (ms, n) => (n > 0 ? (ms * 1000) / n : NaN);
  const lines = [
    `Gateway under ${p.connections} ${p.streamed ? 'concurrent streams of streamed chat' : 'connections of non-streamed chat'} for ${p.durationS} s with \`node --cpu-prof\` (${f0(p.rps)} ${p.streamed ? 'streams' : 'req'}/s while profiled; boot and warm-up left out). `
      + `Event loop busy ${f0(s.busyMs)} ms of ${f0(s.wallMs)} ms wall, ${f0(perReq(s.busyMs, p.requests))} µs per request; percentages are of busy time. `
      + 'Samples are wall time of the main thread: time it sat preempted (on 2 cores, typically right after a socket write woke the simulator or the load generator) '
      + 'is counted in the function it was in, which inflates native `writev` in every server alike.',
  ];
  if (p.bare) {
    lines.push(`The bare proxy, profiled the same way: ${f0(p.bare.rps)} req/s, ${f0(perReq(p.bare.summary.busyMs, p.bare.requests))} µs per request.`, '',
      'CPU µs per request by area, gateway against the bare proxy (the floor):', '',
      '| area | gateway µs/req | % of gateway | bare proxy µs/req |', '|---|---:|---:|---:|');
    for (const a of s.byArea.slice(0, 18)) lines.push(`| ${a.area} | ${f0(perReq(a.selfMs, p.requests))} | ${f1(a.selfPct)} | ${f0(perReq(p.bare.summary.allAreas?.[a.area] ?? 0, p.bare.requests))} |`);
  } else {
    lines.push('', 'Self time by area:', '', '| area | self ms | % |', '|---|---:|---:|', ...s.byArea.slice(0, 15).map((a) => `| ${a.area} | ${f0(a.selfMs)} | ${f1(a.selfPct)} |`));
  }
  lines.push('', 'Top functions by self time (gateway):', '', '| function | where | µs/req | % |', '|---|---|---:|---:|',
    ...s.bySelf.slice(0, 25).map((f) => `| \`${f.name}\` | ${f.location || '(native)'} | ${f0(perReq(f.selfMs, p.requests))} | ${f1(f.selfPct)} |`),
    '', 'Inclusive time of Tollgate, fastify, undici, pino and better-sqlite3 functions (gateway):', '', '| function | where | µs/req | % |', '|---|---|---:|---:|',
    ...s.byInclusive.slice(0, 25).map((f) => `| \`${f.name}\` | ${f.location} | ${f0(perReq(f.totalMs, p.requests))} | ${f1(f.totalPct)} |`));
  return lines.join('\n');
}
