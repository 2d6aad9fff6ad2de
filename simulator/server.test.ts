import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FRAME_BYTES } from './mp3.js';
import { startSimulator, type Simulator } from './server.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.resetCalls());

const OPENAI = { authorization: 'Bearer sk-test' };
const GOOGLE = { 'x-goog-api-key': 'g-test' };

function post(path: string, body: unknown, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> {
  const raw = typeof body === 'string' || body instanceof Blob ? body : JSON.stringify(body);
  return fetch(`${sim.url}${path}`, {
    method: 'POST',
    body: raw,
    headers: { 'content-type': 'application/json', ...headers },
    ...init,
  });
}

interface SseEvent {
  event?: string;
  data: string;
}
function parseSse(text: string): SseEvent[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split(/\r?\n/);
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return event === undefined ? { data } : { event, data };
    });
}

/** ID3 tag then whole 417-byte frames starting with the MPEG-1 Layer III sync. */
function expectMp3(bytes: Buffer): number {
  expect(bytes.toString('latin1', 0, 3)).toBe('ID3');
  const tag = 10 + ((bytes[6]! << 21) | (bytes[7]! << 14) | (bytes[8]! << 7) | bytes[9]!);
  expect([bytes[tag], bytes[tag + 1]]).toEqual([0xff, 0xfb]);
  expect((bytes.length - tag) % FRAME_BYTES).toBe(0);
  return (bytes.length - tag) / FRAME_BYTES;
}

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content }],
  ...extra,
});

describe('admin and routing', () => {
  it('serves health, counts calls per route key, resets, and 404s unknown routes', async () => {
    expect((await fetch(`${sim.url}/__sim/health`)).status).toBe(200);
    await post('/openai/v1/chat/completions?x=1', chat('hi'), OPENAI);
    await post('/v1/chat/completions', chat('hi'), OPENAI);
    const unknown = await post('/nowhere', {});
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'unknown_route' } });
    const calls = await (await fetch(`${sim.url}/__sim/calls`)).json();
    expect(calls).toEqual({ 'POST /openai/v1/chat/completions': 1, 'POST /v1/chat/completions': 1, 'POST /nowhere': 1 });
    expect(sim.calls()).toEqual(calls);
    await post('/__sim/reset', {});
    expect(sim.calls()).toEqual({});
  });
});

describe('OpenAI chat', () => {
  it('answers deterministically with usage under any /…/v1 prefix', async () => {
    for (const prefix of ['/openai/v1', '/v1', '/groq/openai/v1', '/compat/v1']) {
      const res = await post(`${prefix}/chat/completions`, chat('12345678'), OPENAI);
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body).toMatchObject({
        object: 'chat.completion',
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'This is a simulated reply. This is a' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 2 + 3, completion_tokens: 8, total_tokens: 13 },
      });
    }
  });

  it('caps at max_completion_tokens with finish_reason length', async () => {
    const body = await (await post('/v1/chat/completions', chat('[[sim:tokens=20]]', { max_completion_tokens: 5 }), OPENAI)).json();
    expect(body.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'This is a simulated reply.' } });
    expect(body.usage.completion_tokens).toBe(5);
  });

  it('answers n choices, billing the completion tokens of every one and the prompt once', async () => {
    const body = await (await post('/v1/chat/completions', chat('12345678[[sim:tokens=3]]', { n: 3 }), OPENAI)).json();
    expect(body.choices.map((c: { index: number; message: { content: string } }) => [c.index, c.message.content])).toEqual([[0, 'This is a'], [1, 'This is a'], [2, 'This is a']]);
    expect(body.usage).toMatchObject({ completion_tokens: 9 });
    const events = parseSse(await (await post('/v1/chat/completions', chat('[[sim:tokens=2]]', { n: 2, stream: true, stream_options: { include_usage: true } }), OPENAI)).text());
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    const byChoice = [0, 1].map((i) => chunks.flatMap((c) => c.choices).filter((c: { index: number }) => c.index === i).map((c: { delta: { content?: string } }) => c.delta.content ?? '').join(''));
    expect(byChoice).toEqual(['This is', 'This is']);
    expect(chunks.at(-1).usage.completion_tokens).toBe(4);
  });

  it('streams one word per chunk with include_usage and [DONE]', async () => {
    const res = await post('/v1/chat/completions', chat('[[sim:tokens=3]]', { stream: true, stream_options: { include_usage: true } }), OPENAI);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    const usageChunk = chunks.at(-1);
    expect(usageChunk).toMatchObject({ object: 'chat.completion.chunk', choices: [], usage: { completion_tokens: 3 } });
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    const text = chunks.flatMap((c) => c.choices).map((c) => c.delta.content ?? '').join('');
    expect(text).toBe('This is a');
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
  });

  it('rejects missing and bad keys and unknown models in OpenAI error shape', async () => {
    const missing = await post('/v1/chat/completions', chat('hi'));
    expect(missing.status).toBe(401);
    const missingBody = await missing.json();
    expect(missingBody.error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect(missingBody.error.message).toMatch(/^You didn't provide an API key/);
    for (const key of ['invalid', 'bad-key']) {
      const res = await post('/v1/chat/completions', chat('hi'), { authorization: `Bearer ${key}` });
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe('invalid_api_key');
    }
    const unknown = await post('/v1/chat/completions', { ...chat('hi'), model: 'unknown-x' }, OPENAI);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('model_not_found');
  });

  it('applies status, malformed, delay, drop and fail_times directives', async () => {
    const limited = await post('/v1/chat/completions', chat('[[sim:status=429]]'), OPENAI);
    expect(limited.status).toBe(429);
    expect((await limited.json()).error.code).toBe('rate_limit_exceeded');
    const failed = await post('/v1/chat/completions', chat('[[sim:status=503]]'), OPENAI);
    expect((await failed.json()).error.type).toBe('server_error');
    const malformed = await post('/v1/chat/completions', chat('[[sim:malformed]]'), OPENAI);
    expect(malformed.status).toBe(200);
    await expect(malformed.json()).rejects.toThrow();
    const started = Date.now();
    expect((await post('/v1/chat/completions', chat('[[sim:delay_ms=150]]'), OPENAI)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    await expect(post('/v1/chat/completions', chat('[[sim:drop_mid_stream]]'), OPENAI)).rejects.toThrow();
    const dropped = await post('/v1/chat/completions', chat('[[sim:drop_mid_stream]]', { stream: true }), OPENAI);
    expect(dropped.status).toBe(200);
    await expect(dropped.text()).rejects.toThrow();
    const flaky = chat('[[sim:status=500,fail_times=1]] unique-1');
    expect((await post('/v1/chat/completions', flaky, OPENAI)).status).toBe(500);
    expect((await post('/v1/chat/completions', flaky, OPENAI)).status).toBe(200);
  });

  it('scopes [[sim@segment:…]] to one provider and sends mid-stream errors as data', async () => {
    const prompt = '[[sim@openai:status=500]]';
    expect((await post('/openai/v1/chat/completions', chat(prompt), OPENAI)).status).toBe(500);
    expect((await post('/v1/chat/completions', chat(prompt), OPENAI)).status).toBe(200);
    const res = await post('/v1/chat/completions', chat('[[sim:stream_error]]', { stream: true }), OPENAI);
    const last = parseSse(await res.text()).at(-1);
    expect(JSON.parse(last?.data ?? '{}').error.type).toBe('server_error');
  });

  it('paces stream events with chunk_delay_ms so the first chunk arrives early', async () => {
    const started = Date.now();
    const res = await post('/v1/chat/completions', chat('[[sim:tokens=4,chunk_delay_ms=40]]', { stream: true }), OPENAI);
    const reader = res.body!.getReader();
    await reader.read();
    const firstAt = Date.now() - started;
    while (!(await reader.read()).done);
    const doneAt = Date.now() - started;
    expect(doneAt - firstAt).toBeGreaterThanOrEqual(150); // 7 events → 6 pauses of 40 ms
  });

  it('hangs until the client aborts and keeps serving afterwards', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expect(post('/v1/chat/completions', chat('[[sim:hang]]'), OPENAI, { signal: controller.signal })).rejects.toThrow();
    expect((await post('/v1/chat/completions', chat('hi'), OPENAI)).status).toBe(200);
  });
});

describe('official openai client', () => {
  const client = (): OpenAI => new OpenAI({ apiKey: 'sk-test', baseURL: `${sim.url}/v1`, maxRetries: 0 });

  it('reads buffered and streamed chat completions', async () => {
    const done = await client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(done.choices[0]?.message.content).toBe('This is a simulated reply. This is a');
    expect(done.usage?.completion_tokens).toBe(8);
    const stream = await client().chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi [[sim:tokens=4]]' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: number | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    expect(text).toBe('This is a simulated');
    expect(usage).toBe(4);
  });

  it('surfaces directive errors as typed API errors', async () => {
    const call = client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: '[[sim:status=429]]' }] });
    await expect(call).rejects.toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
  });

  it('decodes base64 embeddings, speech and transcriptions', async () => {
    const emb = await client().embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 64 });
    expect(emb.data).toHaveLength(2);
    expect(emb.data[0]?.embedding).toHaveLength(64);
    expect(emb.usage.prompt_tokens).toBe(2);
    const speech = await client().audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello there' });
    expectMp3(Buffer.from(await speech.arrayBuffer()));
    const file = await toFile(new Uint8Array(48_000), 'a.mp3', { type: 'audio/mpeg' });
    const tr = await client().audio.transcriptions.create({ model: 'whisper-1', file });
    expect(tr).toMatchObject({ text: 'Simulated transcript.', usage: { type: 'duration', seconds: 3 } });
  });
});

describe('OpenAI embeddings and audio over fetch', () => {
  it('returns float vectors for every input shape', async () => {
    const res = await post('/openai/v1/embeddings', { model: 'text-embedding-3-large', input: [[1, 2, 3], [4]] }, OPENAI);
    const body = await res.json();
    expect(body).toMatchObject({ object: 'list', usage: { prompt_tokens: 4, total_tokens: 4 } });
    expect(body.data[0].embedding).toHaveLength(3072);
    const single = await (await post('/v1/embeddings', { model: 'text-embedding-3-small', input: 'hi' }, OPENAI)).json();
    expect(single.data[0].embedding).toHaveLength(1536);
  });

  it('speech faults: text with the audio type, a JSON 200, and half the audio before a dropped connection', async () => {
    const speech = (directive: string) => post('/v1/audio/speech', { model: 'tts-1', voice: 'alloy', input: `hello there ${directive}` }, OPENAI);
    const malformed = await speech('[[sim:malformed]]');
    expect([malformed.status, malformed.headers.get('content-type')]).toEqual([200, 'audio/mpeg']);
    expect(await malformed.text()).toMatch(/^\{"error"/);
    const json = await speech('[[sim:text_only]]');
    expect([json.status, json.headers.get('content-type')]).toEqual([200, 'application/json']);
    await json.json();
    const cut = await speech('[[sim:drop_mid_stream]]');
    expect(cut.status).toBe(200);
    await expect(cut.arrayBuffer()).rejects.toThrow();
  });

  it('serves speech with the requested content type and transcripts in every format', async () => {
    const wav = await post('/v1/audio/speech', { model: 'tts-1', voice: 'alloy', input: 'x', response_format: 'wav' }, OPENAI);
    expect(wav.headers.get('content-type')).toBe('audio/wav');
    const send = (format: string): Promise<Response> => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(16_000)]), 'a.mp3');
      form.append('model', 'whisper-1');
      form.append('response_format', format);
      return fetch(`${sim.url}/openai/v1/audio/transcriptions`, { method: 'POST', body: form, headers: OPENAI });
    };
    expect(await (await send('text')).text()).toBe('Simulated transcript.\n');
    expect(await (await send('srt')).text()).toContain('00:00:00,000 --> 00:00:01,000');
    expect(await (await send('vtt')).text()).toMatch(/^WEBVTT/);
    expect(await (await send('verbose_json')).json()).toMatchObject({ duration: 1, usage: { seconds: 1 } });
  });
});

describe('Anthropic messages', () => {
  const msg = (content: string, extra: Record<string, unknown> = {}) => ({
    model: 'claude-sonnet-4-5',
    max_tokens: 100,
    messages: [{ role: 'user', content }],
    ...extra,
  });
  const KEY = { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' };

  it('answers buffered with usage, via x-api-key or Bearer', async () => {
    for (const auth of [KEY, { authorization: 'Bearer sk-ant-test', 'anthropic-version': '2026-10-21' }]) {
      const body = await (await post('/anthropic/v1/messages', msg('12345678', { system: 'abcd' }), auth)).json();
      expect(body).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: 'This is a simulated reply. This is a' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 3 + 3, output_tokens: 8 },
      });
    }
  });

  it('streams named events whose name equals the data type', async () => {
    const res = await post('/anthropic/v1/messages', msg('[[sim:tokens=3]]', { stream: true, max_tokens: 2 }), KEY);
    const events = parseSse(await res.text());
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
    expect(events.map((e) => e.event)).toEqual([
      'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta',
      'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(JSON.parse(events[0]!.data).message.usage.input_tokens).toBeGreaterThan(0);
    expect(JSON.parse(events[6]!.data)).toMatchObject({ delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 2 } });
  });

  it('returns Anthropic-shaped auth, validation and directive errors', async () => {
    const unauth = await post('/anthropic/v1/messages', msg('hi'), { 'x-api-key': 'bad-1' });
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
    const noMax = await post('/anthropic/v1/messages', { model: 'claude', messages: [] }, KEY);
    expect(noMax.status).toBe(400);
    const noMaxBody = await noMax.json();
    expect(noMaxBody).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    expect(noMaxBody.request_id).toMatch(/^req_sim/);
    const strict = await post('/anthropic/v1/messages', msg('hi', { temperature: 0.5 }), { ...KEY, 'anthropic-version': '2026-10-21' });
    expect(strict.status).toBe(400);
    for (const [status, type] of [[429, 'rate_limit_error'], [500, 'api_error'], [529, 'overloaded_error']] as const) {
      const res = await post('/anthropic/v1/messages', msg(`[[sim:status=${status}]]`), KEY);
      expect(res.status).toBe(status);
      expect((await res.json()).error.type).toBe(type);
    }
  });
});

describe('Gemini', () => {
  const gen = (text: string, extra: Record<string, unknown> = {}) => ({ contents: [{ role: 'user', parts: [{ text }] }], ...extra });
  const base = '/gemini/v1beta/models';

  it('generates content with usage metadata and MAX_TOKENS capping', async () => {
    const body = await (await post(`${base}/gemini-2.5-flash:generateContent`, gen('12345678'), GOOGLE)).json();
    expect(body).toMatchObject({
      candidates: [{ content: { role: 'model', parts: [{ text: 'This is a simulated reply. This is a' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 8, totalTokenCount: 13 },
      modelVersion: 'gemini-2.5-flash',
    });
    const capped = await (await post(`${base}/gemini-2.5-flash:generateContent`, gen('x', { generationConfig: { maxOutputTokens: 2 } }), GOOGLE)).json();
    expect(capped.candidates[0].finishReason).toBe('MAX_TOKENS');
  });

  it('streams full responses as SSE without [DONE], or as a JSON array', async () => {
    const res = await post(`${base}/gemini-2.5-flash:streamGenerateContent?alt=sse`, gen('[[sim:tokens=3]]'), GOOGLE);
    const events = parseSse(await res.text()).map((e) => JSON.parse(e.data));
    expect(events).toHaveLength(3);
    expect(events.map((e) => e.candidates[0].content.parts[0].text).join('')).toBe('This is a');
    expect(events.map((e) => e.usageMetadata.candidatesTokenCount)).toEqual([1, 2, 3]);
    expect(events[2].candidates[0].finishReason).toBe('STOP');
    const array = await (await post(`${base}/gemini-2.5-flash:streamGenerateContent`, gen('[[sim:tokens=2]]'), GOOGLE)).json();
    expect(array).toHaveLength(2);
  });

  it('rejects bad keys with 400 and shapes directive errors and safety blocks', async () => {
    const bad = await post(`${base}/gemini-2.5-flash:generateContent`, gen('hi'));
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('API key not valid') });
    for (const [status, name] of [[429, 'RESOURCE_EXHAUSTED'], [500, 'INTERNAL'], [503, 'UNAVAILABLE']] as const) {
      const res = await post(`${base}/gemini-2.5-flash:generateContent`, gen(`[[sim:status=${status}]]`), GOOGLE);
      expect(res.status).toBe(status);
      expect((await res.json()).error.status).toBe(name);
    }
    const blocked = await (await post(`${base}/gemini-2.5-flash:generateContent`, gen('[[sim:safety_block]]'), GOOGLE)).json();
    expect(blocked.promptFeedback.blockReason).toBe('SAFETY');
    expect(blocked.candidates).toBeUndefined();
  });

  it('embeds with 3072 default dimensions and honours outputDimensionality', async () => {
    const one = await (await post(`${base}/gemini-embedding-001:embedContent`, { content: { parts: [{ text: 'hi' }] } }, GOOGLE)).json();
    expect(one.embedding.values).toHaveLength(3072);
    const batch = await (
      await post(`${base}/gemini-embedding-001:batchEmbedContents`, {
        requests: [1, 2].map((i) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text: `t${i}` }] }, outputDimensionality: 256 })),
      }, GOOGLE)
    ).json();
    expect(batch.embeddings.map((e: { values: number[] }) => e.values.length)).toEqual([256, 256]);
  });
});

describe('Lyria music', () => {
  const base = '/gemini/v1beta/models';
  const song = (text: string, image = false) => ({
    contents: [{ parts: [{ text }, ...(image ? [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] : [])] }],
    generationConfig: { responseModalities: ['AUDIO', 'TEXT'] },
  });
  const audioOf = (body: { candidates: { content: { parts: { inlineData?: { data: string } }[] } }[] }): Buffer =>
    Buffer.from(body.candidates[0]!.content.parts.find((p) => p.inlineData)!.inlineData!.data, 'base64');

  it('returns lyrics text plus a playable ~30 s clip and ~150 s pro track', async () => {
    const clip = await (await post(`${base}/lyria-3-clip-preview:generateContent`, song('calm piano'), GOOGLE)).json();
    expect(clip.candidates[0].content.parts[0].text).toMatch(/^\[0\.0:\] <intro>/);
    expect(expectMp3(audioOf(clip)) / 38.28).toBeCloseTo(30, 0);
    const pro = await (await post(`${base}/lyria-3-pro-preview:generateContent`, song('rock', true), GOOGLE)).json();
    expect(expectMp3(audioOf(pro)) / 38.28).toBeCloseTo(150, 0);
    expect(pro.candidates[0].content.parts[0].text).toContain('1 reference image');
  });

  it('supports size_mb, text_only, safety directives and rejects images on clip', async () => {
    const big = await (await post(`${base}/lyria-3-pro-preview:generateContent`, song('[[sim:size_mb=4]]'), GOOGLE)).json();
    expect(Math.abs(audioOf(big).length - 4_000_000)).toBeLessThan(FRAME_BYTES);
    const textOnly = await (await post(`${base}/lyria-3-clip-preview:generateContent`, song('[[sim:text_only]]'), GOOGLE)).json();
    expect(textOnly.candidates[0].content.parts).toHaveLength(1);
    const finish = await (await post(`${base}/lyria-3-clip-preview:generateContent`, song('[[sim:safety_finish]]'), GOOGLE)).json();
    expect(finish.candidates[0]).toMatchObject({ finishReason: 'SAFETY' });
    expect(finish.candidates[0].content).toBeUndefined();
    const clipImage = await post(`${base}/lyria-3-clip-preview:generateContent`, song('x', true), GOOGLE);
    expect(clipImage.status).toBe(400);
    expect((await clipImage.json()).error.status).toBe('INVALID_ARGUMENT');
    expect(sim.calls()['POST /gemini/v1beta/models/lyria-3-clip-preview:generateContent']).toBe(3);
  });
});

describe('ElevenLabs and Deepgram', () => {
  it('synthesizes MP3 and rejects bad keys and unknown voices', async () => {
    const path = '/elevenlabs/v1/text-to-speech/voice123?output_format=mp3_44100_128';
    const ok = await post(path, { text: 'Hello', model_id: 'eleven_multilingual_v2' }, { 'xi-api-key': 'xi-test' });
    expect(ok.headers.get('content-type')).toBe('audio/mpeg');
    expectMp3(Buffer.from(await ok.arrayBuffer()));
    const bad = await post(path, { text: 'x' }, { 'xi-api-key': 'invalid' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    const voice = await post('/elevenlabs/v1/text-to-speech/unknown-voice', { text: 'x' }, { 'xi-api-key': 'xi-test' });
    expect(voice.status).toBe(404);
    expect((await voice.json()).detail.status).toBe('voice_not_found');
    const opus = await post('/elevenlabs/v1/text-to-speech/voice123?output_format=opus_48000_128', { text: 'x' }, { 'xi-api-key': 'xi-test' });
    expect(opus.headers.get('content-type')).toBe('audio/opus');
    const format = await post('/elevenlabs/v1/text-to-speech/voice123?output_format=flac_44100', { text: 'x' }, { 'xi-api-key': 'xi-test' });
    expect(format.status).toBe(400);
  });

  it('transcribes raw audio with a size-based duration and rejects bad tokens', async () => {
    const audio = new Blob([new Uint8Array(32_000)]);
    const ok = await post('/deepgram/v1/listen?model=nova-3&smart_format=true', audio, { 'content-type': 'audio/mpeg', authorization: 'Token dg-test' });
    expect(await ok.json()).toMatchObject({
      metadata: { duration: 2, channels: 1 },
      results: { channels: [{ alternatives: [{ transcript: 'Simulated transcript.', confidence: 0.99, words: [] }] }] },
    });
    const bad = await post('/deepgram/v1/listen', audio, { 'content-type': 'audio/mpeg', authorization: 'Token bad-x' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.' });
  });
});

describe('simulator lifecycle', () => {
  it('adds latencyMs to every response and closes despite hanging requests', async () => {
    const slow = await startSimulator({ latencyMs: 100 });
    const started = Date.now();
    const res = await fetch(`${slow.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat('hi')), headers: OPENAI });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    const hanging = fetch(`${slow.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat('[[sim:hang]]')), headers: OPENAI });
    await new Promise((r) => setTimeout(r, 150));
    await slow.close();
    await expect(hanging).rejects.toThrow();
  });
});
