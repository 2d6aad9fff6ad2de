import { readdirSync } from 'node:fs';
import type OpenAI from 'openai';
import { toFile } from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { buildMp3, framesForSeconds } from '../simulator/mp3.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, tempDir } from './harness.js';

let uploads: string;
const t = useOrgGateway('listener', '5', () => {
  uploads = tempDir('tollgate-upload-test-');
  return { yaml: { settings: { audio: { upload_dir: uploads } } } };
});

/** About 10 s of 128 kbps MP3: the simulator and the gateway's estimate both bill 10 s. */
const AUDIO = buildMp3(framesForSeconds(10));
const TRANSCRIPT = 'Simulated transcript.';

afterEach(async () => {
  await expectLedgerMatchesLog(t, t.orgId);
  expect(await spooledFiles()).toEqual([]);
});
afterAll(async () => {
  await t.close();
  expect(readdirSync(uploads)).toEqual([]); // the gateway's spool folder goes with it
});

/** Temp files left in the gateway's spool folder, once the post-reply cleanup had its turn (bounded wait). */
async function spooledFiles(): Promise<string[]> {
  const [spool] = readdirSync(uploads);
  if (spool === undefined) return [];
  let left = readdirSync(`${uploads}/${spool}`);
  for (let i = 0; i < 200 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 10));
    left = readdirSync(`${uploads}/${spool}`);
  }
  return left;
}

const audioFile = (bytes: Buffer = AUDIO, name = 'speech.mp3') => toFile(bytes, name, { type: 'audio/mpeg' });

async function charged<T>(fn: () => Promise<T>): Promise<{ result: T; cost: number }> {
  const before = await t.balance(t.orgId);
  const result = await fn();
  return { result, cost: before - (await t.balance(t.orgId)) };
}

async function postForm(form: FormData | string, headers: Record<string, string> = {}, url = '/v1/audio/transcriptions') {
  const res = await fetch(`${t.url}${url}`, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, ...headers }, body: form });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as ErrorBody };
}

describe('POST /v1/audio/transcriptions with OpenAI models and the official openai client', () => {
  it('json: the transcript with the upstream\'s duration usage and the cost, billed per second', async () => {
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'whisper-1' }).withResponse());
    expect(result.data.text).toBe(TRANSCRIPT);
    expect(result.data.usage).toEqual({ type: 'duration', seconds: 10, cost: 0.001 });
    expect(cost).toBe(1000); // 10 s × $0.006/min
    const row = await logRow(t, result.response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ modality: 'transcription', usedProvider: 'openai', usedModel: 'whisper-1', costMicros: 1000, costEstimated: false });
  });

  it('verbose_json: passes the upstream object through', async () => {
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'whisper-1', response_format: 'verbose_json', language: 'en' }));
    expect(result).toMatchObject({ task: 'transcribe', text: TRANSCRIPT, segments: [expect.objectContaining({ start: 0 })] });
    expect(result.duration).toBeCloseTo(9.99, 1);
    expect(cost).toBe(1000);
  });

  it.each([
    ['text', `${TRANSCRIPT}\n`],
    ['srt', /^1\n00:00:00,000 --> 00:00:09,9\d\d\nSimulated transcript\.\n/],
    ['vtt', /^WEBVTT\n\n00:00:00\.000 --> 00:00:09\.9\d\d\nSimulated transcript\.\n/],
  ] as const)('%s: the upstream\'s plain text, billed by the gateway\'s own duration estimate', async (format, expected) => {
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'whisper-1', response_format: format }).withResponse());
    expect(typeof result.data).toBe('string');
    if (typeof expected === 'string') expect(result.data).toBe(expected);
    else expect(result.data).toMatch(expected);
    expect(result.response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(cost).toBe(1000);
    expect((await logRow(t, result.response.headers.get('x-request-id') ?? '')).costEstimated).toBe(true);
  });

  it('gpt-4o-transcribe reports tokens, so the seconds are estimated from the file', async () => {
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'gpt-4o-transcribe' }));
    expect(result.text).toBe(TRANSCRIPT);
    expect(result.usage).toMatchObject({ type: 'tokens', cost: 0.001 });
    expect(cost).toBe(1000);
  });

  it('accepts a file of exactly 25 MB, streamed to the upstream', async () => {
    const big = buildMp3(Math.floor((25 * 1024 * 1024 - 74) / 417));
    expect(big.length).toBeLessThanOrEqual(25 * 1024 * 1024);
    t.sim.resetCalls();
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(big), model: 'whisper-1' }));
    expect(result.usage).toMatchObject({ type: 'duration', seconds: Math.ceil(big.length / 16_000) });
    expect(cost).toBe(Math.ceil(big.length / 16_000) * 100);
    expect(t.sim.calls()).toEqual({ 'POST /openai/v1/audio/transcriptions': 1 });
  });
});

describe('POST /v1/audio/transcriptions with Deepgram nova-3, mapped by its YAML (raw audio body)', () => {
  it('json: the transcript from results, billed per second of metadata.duration', async () => {
    t.sim.resetCalls();
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'nova-3', language: 'en' }));
    expect(result.text).toBe(TRANSCRIPT);
    expect(result.usage).toEqual({ type: 'duration', seconds: 10, cost: 0.000717 });
    expect(cost).toBe(717); // ceil(9.987 s) × $0.0043/min
    expect(t.sim.calls()).toEqual({ 'POST /deepgram/v1/listen': 1 });
  });

  it.each([
    ['text', /^Simulated transcript\.\n$/],
    ['srt', /^1\n00:00:00,000 --> 00:00:09,987\nSimulated transcript\.\n\n$/],
    ['vtt', /^WEBVTT\n\n00:00:00\.000 --> 00:00:09\.987\nSimulated transcript\.\n\n$/],
  ] as const)('%s: rendered by the gateway', async (format, expected) => {
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'nova-3', response_format: format }));
    expect(result).toMatch(expected);
    expect(cost).toBe(717);
  });

  it('verbose_json: rendered by the gateway with the duration and one segment', async () => {
    const result = await t.client.audio.transcriptions.create({ file: await audioFile(), model: 'nova-3', response_format: 'verbose_json', language: 'de' });
    expect(result).toMatchObject({ task: 'transcribe', language: 'de', duration: 9.987, text: TRANSCRIPT, segments: [{ id: 0, start: 0, end: 9.987, text: TRANSCRIPT }] });
  });

  it('maps an upstream failure (a directive inside the audio) to 502 and charges nothing', async () => {
    t.sim.resetCalls();
    const faulty = Buffer.concat([AUDIO, Buffer.from('[[sim:status=500]]')]);
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(faulty), model: 'nova-3' }).catch((e: unknown) => e));
    expect((result as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect(cost).toBe(0);
    expect(t.sim.calls()).toEqual({ 'POST /deepgram/v1/listen': 2 }); // the YAML retries 5xx once
  });
});

describe('POST /v1/audio/transcriptions refuses bad input with a clear 4xx and charges nothing', () => {
  const form = (parts: Record<string, string | Blob>): FormData => {
    const f = new FormData();
    for (const [k, v] of Object.entries(parts)) {
      if (typeof v === 'string') f.append(k, v);
      else f.append(k, v, 'speech.mp3');
    }
    return f;
  };
  const audioBlob = new Blob([new Uint8Array(AUDIO)], { type: 'audio/mpeg' });
  const cases: Array<[string, () => FormData | string, Record<string, string>, number, string, string | null]> = [
    ['a missing file part', () => form({ model: 'whisper-1' }), {}, 400, 'invalid_request', 'file'],
    ['a missing model', () => form({ file: audioBlob }), {}, 400, 'invalid_request', 'model'],
    ['a file that is not audio', () => form({ model: 'whisper-1', file: new Blob(['just some text, not audio'], { type: 'audio/mpeg' }) }), {}, 400, 'invalid_request', 'file'],
    ['an empty file', () => form({ model: 'whisper-1', file: new Blob([]) }), {}, 400, 'invalid_request', 'file'],
    ['an unknown response_format', () => form({ model: 'whisper-1', response_format: 'xml', file: audioBlob }), {}, 400, 'invalid_request', 'response_format'],
    ['a bad language code', () => form({ model: 'whisper-1', language: 'English please', file: audioBlob }), {}, 400, 'invalid_request', 'language'],
    ['a streamed transcription', () => form({ model: 'gpt-4o-transcribe', stream: 'true', file: audioBlob }), {}, 400, 'invalid_request', 'stream'],
    ['a second file part', () => { const f = form({ model: 'whisper-1', file: audioBlob }); f.append('other', audioBlob, 'b.mp3'); return f; }, {}, 400, 'invalid_request', null],
    ['a broken multipart body', () => '--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1', { 'content-type': 'multipart/form-data; boundary=xyz' }, 400, 'invalid_request', null],
    ['a multipart type without boundary', () => 'model=whisper-1', { 'content-type': 'multipart/form-data' }, 400, 'invalid_request', null],
    ['a JSON body', () => JSON.stringify({ model: 'whisper-1' }), { 'content-type': 'application/json' }, 400, 'invalid_request', null],
    ['a chat model', () => form({ model: 'gpt-4o-mini', file: audioBlob }), {}, 404, 'model_not_found', 'model'],
  ];
  it.each(cases)('%s', async (_name, body, headers, status, code, param) => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const r = await postForm(body(), headers);
    expect(r.status).toBe(status);
    expect(r.body.error).toMatchObject({ code, param });
    expect(t.sim.calls()).toEqual({});
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('refuses a file over 25 MB with 413 when Content-Length says so, before reading it', async () => {
    const before = await t.balance(t.orgId);
    const r = await postForm(form({ model: 'whisper-1', file: new Blob([new Uint8Array(26 * 1024 * 1024).fill(0xff)]) }));
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('body_too_large');
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('refuses a chunked upload (no Content-Length) with 413 once the file passes 25 MB', async () => {
    const head = Buffer.from('--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n');
    const chunk = Buffer.alloc(1024 * 1024, 0xff);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent < 30) controller.enqueue(chunk);
        else {
          controller.enqueue(Buffer.from('\r\n--b--\r\n'));
          controller.close();
        }
        sent++;
      },
    });
    const before = await t.balance(t.orgId);
    const res = await fetch(`${t.url}/v1/audio/transcriptions`, {
      method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'multipart/form-data; boundary=b' }, body, duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    expect(res.status).toBe(413);
    expect(((await res.json()) as ErrorBody).error.code).toBe('body_too_large');
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('maps an OpenAI failure to 502 and charges nothing', async () => {
    const { result, cost } = await charged(async () => t.client.audio.transcriptions.create({ file: await audioFile(), model: 'whisper-1', prompt: '[[sim:status=500]]' }).catch((e: unknown) => e));
    expect((result as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect(cost).toBe(0);
  });

  it('takes forms on the transcription route only', async () => {
    const r = await postForm(form({ model: 'text-embedding-3-small', input: 'x' }), {}, '/v1/embeddings');
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe('unsupported_media_type');
    const nowhere = await postForm(form({ model: 'whisper-1', file: audioBlob }), {}, '/v1/audio/nowhere');
    expect([nowhere.status, nowhere.body.error.code]).toEqual([404, 'route_not_found']);
  });

  it('refuses a form without a key before reading it', async () => {
    const res = await fetch(`${t.url}/v1/audio/transcriptions`, { method: 'POST', body: form({ model: 'whisper-1', file: audioBlob }) });
    expect(res.status).toBe(401);
  });
});
