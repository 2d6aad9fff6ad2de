import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { buildMp3, framesForSeconds } from '../simulator/mp3.js';
import { speechSeconds } from '../simulator/reply.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

const t = useOrgGateway('speaker', '5', {}, { ledger: true });

const RACHEL = '21m00Tcm4TlvDq8ikWAM';
/** 100 characters. */
const TEXT = 'The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun by the old red bar.';

/** The MP3 the simulator synthesises for `text`: what the gateway must pass through byte for byte. */
const simulatedMp3 = (text: string): Buffer => buildMp3(framesForSeconds(speechSeconds(text.length)));

describe('POST /v1/audio/speech with OpenAI models and the official openai client', () => {
  it('returns the upstream\'s MP3 bytes unchanged with audio/mpeg, billed per character', async () => {
    expect(TEXT).toHaveLength(100);
    const before = await t.balance(t.orgId);
    const res = await t.client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: TEXT });
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 3).toString('latin1')).toBe('ID3');
    expect(bytes.equals(simulatedMp3(TEXT))).toBe(true);
    expect(before - (await t.balance(t.orgId))).toBe(1500); // 100 × $15/M
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ modality: 'speech', usedProvider: 'openai', usedModel: 'tts-1', costMicros: 1500, prompt: TEXT, status: 200 });
  });

  it('streams a long text (4,096 characters, several MB) through intact, at the tts-1-hd price', async () => {
    const input = 'a'.repeat(4096);
    const before = await t.balance(t.orgId);
    const res = await t.client.audio.speech.create({ model: 'tts-1-hd', voice: 'nova', input, response_format: 'wav' });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await res.arrayBuffer()).equals(simulatedMp3(input))).toBe(true);
    expect(before - (await t.balance(t.orgId))).toBe(4096 * 30);
  });

  it('counts characters, not UTF-16 units', async () => {
    const before = await t.balance(t.orgId);
    const res = await t.client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: '🎵🎵' });
    await res.arrayBuffer();
    expect(before - (await t.balance(t.orgId))).toBe(30);
  });
});

describe('POST /v1/audio/speech with ElevenLabs, mapped by its YAML', () => {
  it('puts the voice in the path and answers the SDK with the audio bytes', async () => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const res = await t.client.audio.speech.create({ model: 'eleven_multilingual_v2', voice: RACHEL, input: TEXT });
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await res.arrayBuffer()).equals(simulatedMp3(TEXT))).toBe(true);
    expect(t.sim.calls()).toEqual({ [`POST /elevenlabs/v1/text-to-speech/${RACHEL}`]: 1 });
    expect(before - (await t.balance(t.orgId))).toBe(10_000); // 100 × $0.10/1K
  });

  it('maps response_format to output_format (the simulator answers with its content type)', async () => {
    const res = await t.client.audio.speech.create({ model: 'eleven_flash_v2_5', voice: RACHEL, input: TEXT, response_format: 'opus' });
    expect(res.headers.get('content-type')).toBe('audio/opus');
    await res.arrayBuffer();
  });

  it('refuses a format ElevenLabs lacks with the YAML transform\'s 400, before any upstream call', async () => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/audio/speech`, { model: 'eleven_flash_v2_5', voice: RACHEL, input: 'hi', response_format: 'flac' }, t.key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error.message).toMatch(/flac is not available for ElevenLabs/);
    expect(t.sim.calls()).toEqual({});
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it('sends speed within ElevenLabs\' range and refuses it outside, from the YAML', async () => {
    const res = await t.client.audio.speech.create({ model: 'eleven_flash_v2_5', voice: RACHEL, input: 'hi', speed: 1.1 });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const r = await postJson(`${t.url}/v1/audio/speech`, { model: 'eleven_flash_v2_5', voice: RACHEL, input: 'hi', speed: 2 }, t.key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error.message).toMatch(/speed must be from 0.7 to 1.2/);
  });

  it('passes an unknown voice\'s 404 on, charging nothing', async () => {
    const before = await t.balance(t.orgId);
    const err = await t.client.audio.speech.create({ model: 'eleven_multilingual_v2', voice: 'unknown-voice', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toMatch(/voice_id unknown-voice was not found/);
    expect(await t.balance(t.orgId)).toBe(before);
  });
});

describe('POST /v1/audio/speech refuses bad input with a clear 4xx and charges nothing', () => {
  const cases: Array<[string, Record<string, unknown>, number, string | null]> = [
    ['empty input', { model: 'tts-1', voice: 'alloy', input: '' }, 400, 'input'],
    ['blank input', { model: 'tts-1', voice: 'alloy', input: '   ' }, 400, 'input'],
    ['input over 4,096 characters', { model: 'tts-1', voice: 'alloy', input: 'a'.repeat(4097) }, 400, 'input'],
    ['no voice', { model: 'tts-1', input: 'hi' }, 400, 'voice'],
    ['an unknown response_format', { model: 'tts-1', voice: 'alloy', input: 'hi', response_format: 'ogg' }, 400, 'response_format'],
    ['a speed out of range', { model: 'tts-1', voice: 'alloy', input: 'hi', speed: 9 }, 400, 'speed'],
    ['SSE streaming', { model: 'tts-1', voice: 'alloy', input: 'hi', stream_format: 'sse' }, 400, 'stream_format'],
    ['a transcription model', { model: 'whisper-1', voice: 'alloy', input: 'hi' }, 404, 'model'],
  ];
  it.each(cases)('%s', async (_name, body, status, param) => {
    t.sim.resetCalls();
    const before = await t.balance(t.orgId);
    const r = await postJson(`${t.url}/v1/audio/speech`, body, t.key);
    expect(r.status).toBe(status);
    expect((r.body as ErrorBody).error.param).toBe(param);
    expect(t.sim.calls()).toEqual({});
    expect(await t.balance(t.orgId)).toBe(before);
  });

  it.each([
    ['a JSON body with a JSON content type', 'text_only'],
    ['text sent with an audio content type', 'malformed'],
  ])('a 200 carrying %s is an upstream error: 502, not charged, logged', async (_name, directive) => {
    for (const [model, voice] of [['tts-1', 'alloy'], ['eleven_flash_v2_5', RACHEL]] as const) {
      const before = await t.balance(t.orgId);
      const r = await postJson(`${t.url}/v1/audio/speech`, { model, voice, input: `hi [[sim:${directive}]]` }, t.key);
      expect(r.status).toBe(502);
      expect((r.body as ErrorBody).error).toMatchObject({ code: 'upstream_error', message: expect.stringMatching(/instead of audio/) as unknown as string });
      expect(await t.balance(t.orgId)).toBe(before);
      expect(await logRow(t, r.headers.get('x-request-id') ?? '')).toMatchObject({ status: 502, errorCode: 'upstream_error', costMicros: 0 });
    }
  });

  it('an upstream that breaks mid-audio: the client sees the cut, the characters are billed (the audio was generated) and logged', async () => {
    // Micro-USD per character: tts-1 $15/M, eleven_flash_v2_5 $0.05/1K.
    for (const [model, voice, perCharacter] of [['tts-1', 'alloy', 15], ['eleven_flash_v2_5', RACHEL, 50]] as const) {
      const input = 'cut short [[sim:drop_mid_stream]]';
      const before = await t.balance(t.orgId);
      const res = await fetch(`${t.url}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, voice, input }) });
      expect(res.status).toBe(200);
      await expect(res.arrayBuffer()).rejects.toThrow();
      const row = await logRow(t, res.headers.get('x-request-id') ?? '');
      expect(row).toMatchObject({ status: 200, errorCode: 'upstream_error' });
      expect(row.costMicros).toBe(perCharacter * input.length);
      expect(before - (await t.balance(t.orgId))).toBe(row.costMicros);
    }
  });

  it('maps an upstream failure to 502 and charges nothing, for both vendors', async () => {
    for (const [model, voice] of [['tts-1', 'alloy'], ['eleven_flash_v2_5', RACHEL]] as const) {
      const before = await t.balance(t.orgId);
      const err = await t.client.audio.speech.create({ model, voice, input: 'hi [[sim:status=503]]' }).catch((e: unknown) => e);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect(await t.balance(t.orgId)).toBe(before);
    }
  });
});
