import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../simulator/server.js';
import { logRow, postJson, startTestGateway, type TestGateway, runTask } from './harness.js';
import { startS3, type TestS3 } from './s3.js';

const musicSweep = (g: Pick<TestGateway, 'gateway'>) => runTask(g, 'music-retention-sweep');

/** Storage modes and settings of the music plugin, each gateway with its own configuration. */
const DAY = 86_400_000;
let s3: TestS3;
const opened: TestGateway[] = [];

beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  for (const t of opened) await t.close();
  await s3.close();
});

async function gateway(yaml: Record<string, unknown>, now?: () => number): Promise<TestGateway> {
  const t = await startTestGateway({ yaml, now });
  opened.push(t);
  return t;
}
const generate = (t: TestGateway, key: string, prompt = 'a song') => postJson(`${t.url}/v1/music`, { model: 'tune-3-clip-preview', prompt }, key);
type Generation = { id: string; audio: { base64: string; storage: string; url?: string; expires_in_days?: number } };

describe('storage modes', () => {
  it('never uploads for an org whose retention is none (storage: none)', async () => {
    const t = await gateway({ storage: { s3: s3.config } });
    const { key, org } = await t.org('private', '1', 'none');
    const r = await generate(t, key);
    const g = r.body as Generation;
    expect(g.audio).toEqual({ base64: g.audio.base64, mime_type: 'audio/mpeg', storage: 'none' });
    expect(g.audio.base64.length).toBeGreaterThan(1000);
    expect((await s3.keys()).some((k) => k.includes(org.id))).toBe(false);
    expect((await fetch(`${t.url}/v1/music/${g.id}/content`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
  });

  it('returns the track inline, still charged, and logs the failure when the upload fails', async () => {
    const t = await gateway({ storage: { s3: { ...s3.config, bucket: 'no-such-bucket' } } });
    const { key, org } = await t.org('unlucky', '1');
    const r = await generate(t, key);
    expect(r.status).toBe(200);
    const g = r.body as Generation;
    expect(g.audio.storage).toBe('inline');
    expect(g.audio.url).toBeUndefined();
    expect(await t.balance(org.id)).toBe(950_000);
    const row = await logRow(t, g.id);
    expect(row.extra).toMatchObject({ storage: 'inline' });
    expect(String(row.extra?.storage_error)).not.toBe('');
  });

  it('redirects /content to a short-lived presigned URL that serves the bytes and Range', async () => {
    const t = await gateway({ storage: { s3: s3.config }, settings: { music: { delivery: 'redirect', presign_ttl_seconds: 60 } } });
    const { key } = await t.org('redirected', '1');
    const g = (await generate(t, key)).body as Generation;
    const r = await fetch(`${t.url}/v1/music/${g.id}/content`, { headers: { authorization: `Bearer ${key}` }, redirect: 'manual' });
    expect(r.status).toBe(302);
    const location = r.headers.get('location') ?? '';
    expect(location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tollgate-music\/music\/.*X-Amz-Signature=/);
    const full = await fetch(location);
    expect(Buffer.from(await full.arrayBuffer())).toEqual(Buffer.from(g.audio.base64, 'base64'));
    const part = await fetch(location, { headers: { range: 'bytes=0-9' } });
    expect(part.status).toBe(206);
    expect((await part.arrayBuffer()).byteLength).toBe(10);
  });
});

describe('retention settings', () => {
  it('keeps prompt text by default and blanks it when log-text retention is switched on', async () => {
    let clock = Date.UTC(2026, 0, 1);
    const t = await gateway({ storage: { s3: s3.config }, settings: { music: { log_text_retention_days: 7 } } }, () => clock);
    const { key } = await t.org('forgetful', '1');
    const g = (await generate(t, key, 'secret words')).body as Generation;
    await t.gateway.log.flush();
    clock += 8 * DAY;
    await t.gateway.runTasks();
    expect(await t.gateway.store.media.get(g.id)).toMatchObject({ prompt: null, text: null, cleanedAt: null });
    expect((await logRow(t, g.id)).prompt).toBeNull();
  });

  it('lets only one instance sweep at a time when several share the database', async () => {
    let clock = Date.UTC(2026, 0, 1);
    const a = await gateway({ storage: { s3: s3.config } }, () => clock);
    const { key } = await a.org('shared', '1');
    const g = (await generate(a, key)).body as Generation;
    clock += 31 * DAY;
    // A second instance on the same database takes the lease first and holds it.
    await a.gateway.store.leases.tryAcquire('music-retention-sweep', 'other-instance', 60_000, clock);
    const skipped = await musicSweep(a);
    expect(skipped?.result).toMatch(/another instance holds the sweep lease/);
    expect((await a.gateway.store.media.get(g.id))?.cleanedAt).toBeNull();
    clock += 60_001;
    const ran = await musicSweep(a);
    expect(ran?.result).toMatch(/^deleted [1-9]/);
  });

  it('refuses a bad settings block at boot with its line', async () => {
    const sim = await startSimulator({ port: 0 });
    await expect(startTestGateway({ sim, yaml: { settings: { music: { timeout_ms: 'soon' } } } })).rejects.toThrow(/\/settings\/music\/timeout_ms: must be integer/);
    await sim.close();
  });
});
