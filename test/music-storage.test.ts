import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useGateway } from './fixtures.js';
import { postJson, runTask, type TestGateway } from './harness.js';
import { looksLikeMp3, startS3, type TestS3 } from './s3.js';

const musicSweep = (g: Pick<TestGateway, 'gateway'>) => runTask(g, 'music-retention-sweep');

/** Music storage (spec §3, §4.2, §4.3) against a real S3-protocol server. */
const DAY = 86_400_000;
let clock = Date.UTC(2026, 10, 1);
let s3: TestS3;
let alice: { key: string; orgId: string };
let bob: { key: string; orgId: string };
const t = useGateway(async () => {
  s3 = await startS3();
  return { now: () => clock, yaml: { storage: { s3: s3.config } } };
});

type Generation = { id: string; audio: { base64: string; storage: string; url?: string; expires_in_days?: number }; usage: { cost_usd: number } };
type HistoryItem = { id: string; object: string; prompt: string; created: number; audio: null | { url?: string; mime_type: string; storage: string };
  usage: { cost_usd: number }; metadata: Record<string, string>; expired: boolean; error: boolean };

beforeAll(async () => {
  const a = await t.org('alice', '10');
  const b = await t.org('bob', '10');
  alice = { key: a.key, orgId: a.org.id };
  bob = { key: b.key, orgId: b.org.id };
});
afterAll(async () => {
  await s3.close();
});

const generate = async (key: string, prompt = 'a hosted song', model = 'tune-3-clip-preview') => {
  const r = await postJson(`${t.url}/v1/music`, { model, prompt }, key);
  expect(r.status).toBe(200);
  return r.body as Generation;
};
const get = (path: string, key: string, headers: Record<string, string> = {}) =>
  fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers }, redirect: 'manual' });
const history = async (key: string, query = '') => {
  const r = await get(`/v1/music${query}`, key);
  return { status: r.status, headers: r.headers, body: (await r.json()) as { object: string; data: HistoryItem[] } & ErrorBody };
};

describe('hosted tracks (storage: s3)', () => {
  let g: Generation;
  let mp3: Buffer;
  beforeAll(async () => {
    g = await generate(alice.key);
    mp3 = Buffer.from(g.audio.base64, 'base64');
  });

  it('uploads the MP3 under a key naming the org and the request, and says so', async () => {
    expect(g.audio).toMatchObject({ storage: 's3', url: `/v1/music/${g.id}/content`, expires_in_days: 30, mime_type: 'audio/mpeg' });
    const key = `music/${alice.orgId}/${g.id}.mp3`;
    expect(await s3.object(key)).toEqual(mp3);
  });

  it('serves the content as soon as the POST has returned, by request id and by log id', async () => {
    const fresh = await generate(alice.key, 'immediately');
    for (const id of [fresh.id, `log_${fresh.id.slice(4)}`]) {
      const r = await get(`/v1/music/${id}/content`, alice.key);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('audio/mpeg');
      expect(r.headers.get('accept-ranges')).toBe('bytes');
      const body = Buffer.from(await r.arrayBuffer());
      expect(body).toEqual(Buffer.from(fresh.audio.base64, 'base64'));
      expect(looksLikeMp3(body)).toBe(true);
    }
  });

  it.each([
    ['bytes=0-99', 0, 99],
    ['bytes=100-', 100, -1],
    ['bytes=-500', -500, -1],
  ])('answers Range %s with 206 and Content-Range', async (range, start, end) => {
    const r = await get(`/v1/music/${g.id}/content`, alice.key, { range });
    expect(r.status).toBe(206);
    const from = start < 0 ? mp3.length + start : start;
    const to = end < 0 ? mp3.length - 1 : end;
    expect(r.headers.get('content-range')).toBe(`bytes ${from}-${to}/${mp3.length}`);
    expect(Buffer.from(await r.arrayBuffer())).toEqual(mp3.subarray(from, to + 1));
  });

  it.each(['bytes=5-2', 'bytes=0-1,5-6', 'bytes=abc'])('ignores the invalid Range %s (RFC 9110) and sends the whole track with 200', async (range) => {
    const r = await get(`/v1/music/${g.id}/content`, alice.key, { range });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-range')).toBeNull();
    expect(Buffer.from(await r.arrayBuffer())).toEqual(mp3);
  });

  it('answers an unsatisfiable Range with 416', async () => {
    const r = await get(`/v1/music/${g.id}/content`, alice.key, { range: `bytes=${mp3.length + 10}-` });
    expect(r.status).toBe(416);
    expect(r.headers.get('content-range')).toBe(`bytes */${mp3.length}`);
    expect(((await r.json()) as ErrorBody).error.code).toBe('range_not_satisfiable');
  });

  it("gives 404 for another org's track and for an unknown id, and 401 without a key", async () => {
    expect((await get(`/v1/music/${g.id}/content`, bob.key)).status).toBe(404);
    expect((await get('/v1/music/req_doesnotexist/content', alice.key)).status).toBe(404);
    expect((await fetch(`${t.url}/v1/music/${g.id}/content`)).status).toBe(401);
  });
});

describe('GET /v1/music history', () => {
  it("lists the org's generations newest first, exactly per spec §2.1, with no-store", async () => {
    const first = await generate(bob.key, 'first');
    clock += 1000;
    const second = await generate(bob.key, 'second', 'tune-3-pro-preview');
    const h = await history(bob.key);
    expect(h.status).toBe(200);
    expect(h.headers.get('cache-control')).toBe('no-store');
    expect(h.body.object).toBe('list');
    expect(h.body.data.map((i) => i.id).slice(0, 2)).toEqual([second.id, first.id]);
    expect(h.body.data[0]).toEqual({
      id: second.id, object: 'music.generation', model: 'tune-3-pro-preview', prompt: 'second', created: Math.floor(clock / 1000),
      audio: { url: `/v1/music/${second.id}/content`, mime_type: 'audio/mpeg', storage: 's3' },
      usage: { cost_usd: 0.08 }, metadata: { used_model: 'lyria-3-pro-preview', used_provider: 'google', response_format: 'mp3' },
      expired: false, error: false,
    });
  });

  it("never shows another org's tracks", async () => {
    const h = await history(alice.key, '?limit=100');
    const bobs = (await history(bob.key, '?limit=100')).body.data.map((i) => i.id);
    expect(h.body.data.length).toBeGreaterThan(0);
    expect(h.body.data.some((i) => bobs.includes(i.id))).toBe(false);
  });

  it('honours limit and refuses one out of range with 400', async () => {
    expect((await history(bob.key, '?limit=1')).body.data).toHaveLength(1);
    for (const bad of ['0', '101', 'ten', '1.5', '-3']) {
      const h = await history(bob.key, `?limit=${bad}`);
      expect(h.status).toBe(400);
      expect(h.body.error.param).toBe('limit');
    }
  });

  it('lists a failed generation with error: true and no audio', async () => {
    const r = await postJson(`${t.url}/v1/music`, { model: 'tune-3-clip-preview', prompt: 'fails [[sim:status=500]]' }, bob.key);
    expect(r.status).toBe(502);
    await t.gateway.log.flush();
    const item = (await history(bob.key)).body.data.find((i) => i.id === r.headers.get('x-request-id'));
    expect(item).toMatchObject({ audio: null, error: true, expired: false, usage: { cost_usd: 0 } });
  });
});

describe('retention sweep', () => {
  it('deletes tracks older than 30 days, object first, then shows them expired (410 on content)', async () => {
    const old = await generate(alice.key, 'to be swept');
    const key = `music/${alice.orgId}/${old.id}.mp3`;
    clock += 29 * DAY;
    const keep = await generate(alice.key, 'younger');
    expect(await musicSweep(t)).toEqual({ task: 'music-retention-sweep', result: expect.stringMatching(/^deleted 0 /) });
    clock += 1 * DAY + 1;
    const res = await musicSweep(t);
    expect(res?.result).toMatch(/^deleted [1-9]\d* expired track/);
    expect(await s3.exists(key)).toBe(false);
    expect(await s3.exists(`music/${alice.orgId}/${keep.id}.mp3`)).toBe(true);
    const content = await get(`/v1/music/${old.id}/content`, alice.key);
    expect(content.status).toBe(410);
    expect(((await content.json()) as ErrorBody).error.code).toBe('gone');
    const item = (await history(alice.key, '?limit=100')).body.data.find((i) => i.id === old.id);
    expect(item).toMatchObject({ audio: null, expired: true, prompt: 'to be swept', error: false });
  });

  it('retries a failed delete at the next run', async () => {
    const g = await generate(alice.key, 'stubborn');
    const key = `music/${alice.orgId}/${g.id}.mp3`;
    clock += 31 * DAY;
    await s3.close();
    const failed = await musicSweep(t);
    expect(failed?.result).toMatch(/failed \(retried next run\)/);
    expect((await t.gateway.store.media.get(g.id))?.cleanedAt).toBeNull();
    s3 = await restartS3();
    const ok = await musicSweep(t);
    expect(ok?.result).toMatch(/^deleted [1-9]/);
    expect((await t.gateway.store.media.get(g.id))?.cleanedAt).not.toBeNull();
    expect(await s3.exists(key)).toBe(false);
  });
});

/** s3rver on the same port again, so the gateway's configured endpoint answers once more. */
async function restartS3(): Promise<TestS3> {
  const port = Number(new URL(s3.endpoint).port);
  return startS3('tollgate-music', port);
}
