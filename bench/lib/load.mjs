// Load generators: autocannon for the closed-loop non-streamed runs (with float
// latencies taken from its `response` events, since its own histogram is whole
// milliseconds), and small undici clients for streams (first byte / end) and music.
import autocannon from 'autocannon';
import { Pool } from 'undici';

/** A pause between runs, so one run's closing connections do not weigh on the next. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A figure for the progress lines, `—` when it is not a number (no requests, say). */
export const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');

/** The median of a list of numbers (of an even count, the upper of the two middle ones). */
export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function summary(values) {
  const sorted = Float64Array.from(values).sort();
  const mean = sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1);
  return { count: sorted.length, mean, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
}

/**
 * Non-streamed load at a fixed number of connections for `durationS` seconds.
 * Returns throughput of 2xx replies and their latency percentiles in ms.
 */
export function runAutocannon({ url, headers, body, connections, durationS, collectLatencies = true }) {
  const latencies = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon({
      url, method: 'POST', headers, body, connections, duration: durationS, pipelining: 1, timeout: 30,
    }, (err, result) => {
      if (err) return reject(err);
      const ok = result['2xx'];
      const seconds = result.duration || durationS;
      resolve({
        connections, durationS: seconds, requests: ok, rps: ok / seconds,
        non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts,
        statusCodes: result.statusCodeStats,
        latency: collectLatencies ? summary(latencies) : { p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.mean },
      });
    });
    if (collectLatencies) {
      instance.on('response', (_client, statusCode, _bytes, responseTime) => {
        if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
      });
    }
  });
}

/**
 * Streamed requests at a fixed concurrency for `durationS` seconds: time to the first
 * body byte and to the end of the body, per request, in ms. A stream counts as ok
 * when the status is 200 and the body ends with the `[DONE]` event.
 */
export async function runStreams({ url, path, headers, body, concurrency, durationS, maxRequests = Infinity }) {
  const pool = new Pool(url, { connections: concurrency, pipelining: 1 });
  const ttfb = [];
  const total = [];
  let failed = 0;
  let started = 0;
  const firstFailure = [];
  const deadline = performance.now() + durationS * 1000;
  const t0 = performance.now();
  const worker = async () => {
    while (performance.now() < deadline && started < maxRequests) {
      started++;
      const begin = performance.now();
      try {
        const res = await pool.request({ path, method: 'POST', headers, body });
        let first;
        let tail = '';
        for await (const chunk of res.body) {
          first ??= performance.now();
          tail = (tail + chunk.toString('utf8')).slice(-64);
        }
        const end = performance.now();
        if (res.statusCode !== 200 || !tail.includes('[DONE]')) {
          failed++;
          if (firstFailure.length === 0) firstFailure.push(`status ${res.statusCode}: …${tail}`);
          continue;
        }
        ttfb.push(first - begin);
        total.push(end - begin);
      } catch (err) {
        failed++;
        if (firstFailure.length === 0) firstFailure.push(err.message);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  await pool.close();
  return { concurrency, durationS: seconds, requests: ttfb.length, rps: ttfb.length / seconds, failed, firstFailure: firstFailure[0], ttfb: summary(ttfb), total: summary(total) };
}

/**
 * `count` identical requests all at once (one connection each); every body is read
 * whole and checked by `validate(status, bodyBuffer)`, which returns an error string
 * or undefined. Wall time is from the first send to the last byte.
 */
export async function runBurst({ url, path, headers, body, count, timeoutMs, validate }) {
  const pool = new Pool(url, { connections: count, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: count }, async () => {
    const begin = performance.now();
    try {
      const res = await pool.request({ path, method: 'POST', headers, body });
      const buf = Buffer.from(await res.body.arrayBuffer());
      const error = validate(res.statusCode, buf);
      return { ms: performance.now() - begin, bytes: buf.length, error };
    } catch (err) {
      return { ms: performance.now() - begin, bytes: 0, error: err.message };
    }
  }));
  const wallMs = performance.now() - t0;
  await pool.close();
  const ok = results.filter((r) => !r.error);
  return {
    count, ok: ok.length, failed: count - ok.length, wallMs,
    errors: [...new Set(results.filter((r) => r.error).map((r) => r.error))].slice(0, 3),
    latency: summary(ok.map((r) => r.ms)), meanBytes: ok.reduce((a, r) => a + r.bytes, 0) / (ok.length || 1),
  };
}

/** One request, body read whole: for sanity checks and probes. */
export async function requestOnce({ url, path, headers, body, method = 'POST', timeoutMs = 30_000 }) {
  const pool = new Pool(url, { connections: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  try {
    const res = await pool.request({ path, method, headers, body });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  } finally {
    await pool.close();
  }
}
