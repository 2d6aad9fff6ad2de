import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, postJson } from './harness.js';
import { looksLikeMp3 } from './s3.js';

/** Music generation against the simulator's Lyria, without object storage (storage: inline). */
const t = useOrgGateway('music-org', '10', { yaml: { settings: { music: { timeout_ms: 500 } } } });
let balance: number;
const CLIP_CALL = 'POST /gemini/v1beta/models/lyria-3-clip-preview:generateContent';
const PRO_CALL = 'POST /gemini/v1beta/models/lyria-3-pro-preview:generateContent';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const JPEG = Buffer.from('ffd8ffe000104a46494600010100000100010000ffd9', 'hex');
const dataUrl = (bytes: Buffer, mime = 'image/png') => `data:${mime};base64,${bytes.toString('base64')}`;

afterAll(async () => expectLedgerMatchesLog(t, t.orgId));
beforeEach(async () => {
  t.sim.resetCalls();
  balance = await t.balance(t.orgId);
});

const music = (body: unknown) => postJson(`${t.url}/v1/music`, body, t.key);
const charged = async () => balance - (await t.balance(t.orgId));
type Generation = { id: string; object: string; model: string; used_model: string; used_provider: string; text: string; created: number;
  audio: { base64: string; mime_type: string; storage: string; url?: string; expires_in_days?: number }; usage: { cost_usd: number } };

describe('POST /v1/music', () => {
  it('returns a clip generation exactly per spec §2.1, charged $0.05, with one upstream call', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await music({ model: 'tune-3-clip-preview', prompt: 'Warm lofi beat with vinyl crackle', response_format: 'mp3' });
    expect(r.status).toBe(200);
    const g = r.body as Generation;
    expect(Object.keys(g).sort()).toEqual(['audio', 'created', 'id', 'model', 'object', 'text', 'usage', 'used_model', 'used_provider']);
    expect(g).toMatchObject({ object: 'music.generation', model: 'tune-3-clip-preview', used_model: 'lyria-3-clip-preview', used_provider: 'google', usage: { cost_usd: 0.05 } });
    expect(g.id).toMatch(/^req_/);
    expect(r.headers.get('x-request-id')).toBe(g.id);
    expect(g.created).toBeGreaterThanOrEqual(before);
    expect(g.audio).toEqual({ base64: g.audio.base64, mime_type: 'audio/mpeg', storage: 'inline' });
    const mp3 = Buffer.from(g.audio.base64, 'base64');
    expect(looksLikeMp3(mp3)).toBe(true);
    expect(g.text).toMatch(/<intro>/);
    expect(t.sim.calls()[CLIP_CALL]).toBe(1);
    expect(await charged()).toBe(50_000);
  });

  it('charges $0.08 for pro, whose track is longer than a clip', async () => {
    const clip = (await music({ model: 'tune-3-clip-preview', prompt: 'short' })).body as Generation;
    balance = await t.balance(t.orgId);
    const r = await music({ model: 'tune-3-pro-preview', prompt: 'An epic orchestral piece' });
    expect(r.status).toBe(200);
    const pro = r.body as Generation;
    expect(pro.usage.cost_usd).toBe(0.08);
    expect(Buffer.from(pro.audio.base64, 'base64').length).toBeGreaterThan(3 * Buffer.from(clip.audio.base64, 'base64').length);
    expect(await charged()).toBe(80_000);
  });

  it('appends the instrumental instruction and drops the lyrics when instrumental is true', async () => {
    const g = (await music({ model: 'tune-3-clip-preview', prompt: 'calm piano', instrumental: true, lyrics: '[Verse] never sung' })).body as Generation;
    expect(g.text).not.toContain('never sung');
    expect(g.text).not.toMatch(/sung lyrics/);
  });

  it('sends lyrics as a Lyrics: block', async () => {
    const g = (await music({ model: 'tune-3-clip-preview', prompt: 'pop song', lyrics: '[Chorus] hello gateway' })).body as Generation;
    expect(g.text).toContain('(sung lyrics)\n[Chorus] hello gateway');
  });

  it('sends reference images inline to the pro model', async () => {
    const r = await music({ model: 'tune-3-pro-preview', prompt: 'inspired', reference_images: [dataUrl(PNG), { url: dataUrl(JPEG, 'image/jpeg') }] });
    expect(r.status).toBe(200);
    expect((r.body as Generation).text).toContain('inspired by 2 reference images');
  });
});

describe('POST /v1/music refuses bad input with 400, nothing charged, nothing sent upstream', () => {
  const big = Buffer.concat([PNG, Buffer.alloc(8 * 1024 * 1024)]);
  it.each([
    ['missing model', { prompt: 'x' }, 'model'],
    ['unknown model', { model: 'tune-9', prompt: 'x' }, 'model'],
    ['a chat model', { model: 'gpt-4o-mini', prompt: 'x' }, 'model'],
    ['missing prompt', { model: 'tune-3-clip-preview' }, 'prompt'],
    ['empty prompt', { model: 'tune-3-clip-preview', prompt: '  ' }, 'prompt'],
    ['prompt over 4096 characters', { model: 'tune-3-clip-preview', prompt: 'x'.repeat(4097) }, 'prompt'],
    ['wav', { model: 'tune-3-clip-preview', prompt: 'x', response_format: 'wav' }, 'response_format'],
    ['non-boolean instrumental', { model: 'tune-3-clip-preview', prompt: 'x', instrumental: 'yes' }, 'instrumental'],
    ['non-string lyrics', { model: 'tune-3-clip-preview', prompt: 'x', lyrics: 5 }, 'lyrics'],
    ['numeric prompt', { model: 'tune-3-clip-preview', prompt: 42 }, 'prompt'],
    ['images on the clip model', { model: 'tune-3-clip-preview', prompt: 'x', reference_images: [dataUrl(PNG)] }, 'reference_images'],
    ['eleven images', { model: 'tune-3-pro-preview', prompt: 'x', reference_images: Array(11).fill(dataUrl(PNG)) }, 'reference_images'],
    ['an image over 8 MB', { model: 'tune-3-pro-preview', prompt: 'x', reference_images: [dataUrl(big)] }, 'reference_images[0]'],
    ['a GIF labelled PNG', { model: 'tune-3-pro-preview', prompt: 'x', reference_images: [dataUrl(Buffer.from('GIF89a....'))] }, 'reference_images[0]'],
    ['a text data URL', { model: 'tune-3-pro-preview', prompt: 'x', reference_images: ['data:text/plain;base64,aGk='] }, 'reference_images[0]'],
    ['a non-URL image', { model: 'tune-3-pro-preview', prompt: 'x', reference_images: ['ftp://x/y.png'] }, 'reference_images[0]'],
    ['images not an array', { model: 'tune-3-pro-preview', prompt: 'x', reference_images: 'a' }, 'reference_images'],
    ['an unknown field', { model: 'tune-3-clip-preview', prompt: 'x', duration: 30 }, 'duration'],
  ])('%s', async (_n, body, param) => {
    const r = await music(body);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error.param).toBe(param);
    expect(await charged()).toBe(0);
    expect(t.sim.calls()).toEqual({});
  });

  it('refuses a body that is not JSON', async () => {
    expect((await postJson(`${t.url}/v1/music`, '{"model":', t.key)).status).toBe(400);
  });

  it('402 when credits cannot cover the flat price, nothing sent upstream', async () => {
    const poor = await t.org('music-poor', '0.04');
    const r = await postJson(`${t.url}/v1/music`, { model: 'tune-3-clip-preview', prompt: 'x' }, poor.key);
    expect(r.status).toBe(402);
    expect((r.body as ErrorBody).error.code).toBe('insufficient_credits');
    expect(await t.balance(poor.org.id)).toBe(40_000);
    expect(t.sim.calls()).toEqual({});
  });
});

describe('POST /v1/music upstream outcomes: exactly one call, nothing charged', () => {
  it.each([
    ['a prompt safety block', '[[sim:safety_block]]', 422, 'content_blocked'],
    ['a SAFETY finish reason', '[[sim:safety_finish]]', 422, 'content_blocked'],
    ['a 429', '[[sim:status=429]]', 429, 'upstream_rate_limited'],
    ['a 500', '[[sim:status=500]]', 502, 'upstream_error'],
    ['a 503', '[[sim:status=503]]', 502, 'upstream_error'],
    ['a 200 without audio', '[[sim:text_only]]', 502, 'upstream_error'],
    ['malformed JSON', '[[sim:malformed]]', 502, 'upstream_error'],
    ['no answer within the upstream wait', '[[sim:delay_ms=2000]]', 504, 'upstream_timeout'],
  ])('%s → %i %s', async (_n, directive, status, code) => {
    const r = await music({ model: 'tune-3-pro-preview', prompt: `a song ${directive}` });
    expect(r.status).toBe(status);
    expect((r.body as ErrorBody).error).toMatchObject({ code, usedProvider: 'google', requestedModel: 'tune-3-pro-preview' });
    expect(t.sim.calls()).toEqual({ [PRO_CALL]: 1 });
    expect(await charged()).toBe(0);
  });
});
