import { createServer, request, type Server as HttpServer } from 'node:http';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { logIdOf } from '../src/store/media.js';
import { openStore } from '../src/store/index.js';
import { startSimulator, type Simulator } from '../simulator/server.js';
import { killAll, sleep } from './cli-helpers.js';
import { pgQuery, sharedPostgresSchema, startFleet, type Fleet } from './fleet.js';
import { tempDir } from './harness.js';
import { startS3, type TestS3 } from './s3.js';

/*
 * The retention sweep on three instances sharing one PostgreSQL (issue 14, finding 4):
 * object storage answers each DELETE only after DELETE_DELAY_MS, so one run over the
 * expired tracks lasts longer than the sweep lease's TTL (2 × the 1 s interval) and
 * spans several ticks. Each object must still be DELETEd exactly once (counted at the
 * storage side), and each run logged once.
 */

const TRACKS = 8;
const DELETE_DELAY_MS = 400;
const INTERVAL_MS = 1000;

/** A proxy in front of s3rver that holds every DELETE for `delayMs` and counts them per object path. */
async function slowS3Proxy(target: string, delayMs: number): Promise<{ url: string; deletes: Map<string, number>; close(): Promise<void> }> {
  const deletes = new Map<string, number>();
  const t = new URL(target);
  const server: HttpServer = createServer((req, res) => {
    const forward = (): void => {
      const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (req.method !== 'DELETE') return forward();
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    deletes.set(path, (deletes.get(path) ?? 0) + 1);
    setTimeout(forward, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    deletes,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('retention sweep across instances with slow object storage', () => {
  let sim: Simulator;
  let s3: TestS3;
  let proxy: Awaited<ReturnType<typeof slowS3Proxy>>;
  let fleet: Fleet;
  const schema = sharedPostgresSchema('sweep');
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    s3 = await startS3();
    proxy = await slowS3Proxy(s3.endpoint, DELETE_DELAY_MS);
    fleet = await startFleet({
      n: 3, dir: tempDir(), simUrl: sim.url, databaseUrl: schema.url,
      yaml: {
        storage: { s3: { ...s3.config, endpoint: proxy.url } },
        settings: { music: { sweep_interval_ms: INTERVAL_MS } },
        log: { level: 'info', flush_interval_ms: 50 },
      },
    });
  }, 120_000); // the first fleet file after a source change builds dist/
  afterAll(async () => {
    await fleet?.stop();
    await killAll();
    await proxy?.close();
    await s3?.close();
    await schema.drop();
    await sim?.close();
  });

  it('deletes each expired track exactly once, and logs each run once', async () => {
    const store = openStore(schema.url);
    const keys: string[] = [];
    try {
      const orgId = newId('org');
      const now = Date.now();
      for (let i = 0; i < TRACKS; i++) {
        const requestId = newId('req');
        const key = `music/${orgId}/${requestId}.mp3`;
        keys.push(key);
        await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: Buffer.from('ID3 test'), ContentType: 'audio/mpeg' }));
        await store.media.put({
          id: logIdOf(requestId), requestId, orgId, modality: 'music', model: 'tune-3-clip-preview', usedModel: null, usedProvider: null,
          prompt: 'p', text: null, storage: 's3', objectKey: key, bytes: 8, mimeType: 'audio/mpeg', costMicros: 0, error: false,
          errorCode: null, createdAt: now - 31 * 86_400_000, expiresAt: now + 86_400_000, cleanedAt: null, meta: null,
        });
      }
    } finally {
      await store.close();
    }
    // All due at once (one statement), so that one run finds them all and lasts TRACKS × DELETE_DELAY_MS, past the lease's TTL.
    await pgQuery(schema.url, 'UPDATE media SET expires_at = $1', [Date.now() - 1000]);

    // Bounded wait for every record to be cleaned (a run takes TRACKS × DELETE_DELAY_MS ≈ 3.2 s).
    for (let i = 0; i < 150; i++) {
      const [row] = await pgQuery<{ n: number }>(schema.url, 'SELECT COUNT(*)::int AS n FROM media WHERE cleaned_at IS NULL');
      if (row!.n === 0) break;
      await sleep(200);
    }
    // Stopping waits for the runs under way: every run has then been logged.
    await fleet.stop();

    expect(await pgQuery<{ n: number }>(schema.url, 'SELECT COUNT(*)::int AS n FROM media WHERE cleaned_at IS NULL')).toEqual([{ n: 0 }]);
    expect(await s3.keys()).toEqual([]);
    expect(Object.fromEntries(keys.map((k) => [k, proxy.deletes.get(`/${s3.bucket}/${k}`) ?? 0]))).toEqual(Object.fromEntries(keys.map((k) => [k, 1])));
    expect([...proxy.deletes.values()].reduce((a, b) => a + b, 0)).toBe(TRACKS);

    // One line per run: the deletions the lines report add up to the tracks (a line repeated per tick would count a run twice).
    const lines = fleet.instances.flatMap((s) => s.stdout().split('\n')).filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; task?: string; result?: string })
      .filter((l) => l.task === 'music-retention-sweep');
    const reported = lines.filter((l) => l.msg === 'maintenance task ran').map((l) => Number(/^deleted (\d+) /.exec(l.result ?? '')?.[1]));
    expect(reported.every((n) => Number.isInteger(n))).toBe(true);
    // One run deleted them all: it outlived the lease's TTL and kept the lease by renewing it (no other instance took over mid-run).
    expect(reported.filter((n) => n > 0)).toEqual([TRACKS]);
    // Another instance's turn is not logged at info.
    expect(lines.filter((l) => /lease/.test(l.result ?? ''))).toEqual([]);
  }, 60_000);
});
