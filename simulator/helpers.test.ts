import { describe, expect, it } from 'vitest';
import { NO_DIRECTIVES, parseDirectives } from './directives.js';
import { multipartBoundary, parseMultipart } from './multipart.js';
import { planReply, promptTokens, replyText } from './reply.js';
import { embedText, hash32, toBase64, toFloatList } from './vectors.js';

describe('planReply', () => {
  it('defaults to 8 words cycling the source sentence, one piece per word', () => {
    const plan = planReply(NO_DIRECTIVES, undefined);
    expect(plan.pieces).toHaveLength(8);
    expect(replyText(plan)).toBe('This is a simulated reply. This is a');
    expect(plan.pieces[1]).toBe(' is');
    expect(plan.capped).toBe(false);
  });

  it('honours tokens=N and caps at max tokens', () => {
    expect(planReply(parseDirectives('[[sim:tokens=3]]'), undefined).pieces).toEqual(['This', ' is', ' a']);
    const capped = planReply(parseDirectives('[[sim:tokens=10]]'), 4);
    expect(capped.pieces).toHaveLength(4);
    expect(capped.capped).toBe(true);
    expect(planReply(parseDirectives('[[sim:tokens=2]]'), 4).capped).toBe(false);
    expect(planReply(parseDirectives('[[sim:tokens=0]]'), undefined).pieces).toEqual([]);
  });

  it('counts prompt tokens as ceil(chars / 4) + 3 per message', () => {
    expect(promptTokens(9, 2)).toBe(3 + 6);
    expect(promptTokens(0, 1)).toBe(3);
  });
});

describe('embedText', () => {
  it('is deterministic, unit length, and prefix-consistent across dimensions', () => {
    const a = embedText('hello', 1536);
    expect(embedText('hello', 1536)).toEqual(a);
    expect(embedText('hello!', 1536)).not.toEqual(a);
    const norm = Math.sqrt(a.reduce((s, v) => s + v * v, 0));
    expect(norm).toBeCloseTo(1, 5);
    const short = embedText('hello', 8);
    const ratio = (short[0] ?? 0) / (a[0] ?? 1);
    for (let i = 0; i < 8; i++) expect((short[i] ?? 0) / (a[i] ?? 1)).toBeCloseTo(ratio, 4);
    expect(hash32('')).toBe(0x811c9dc5);
  });

  it('encodes base64 as float32 little-endian', () => {
    const v = embedText('x', 4);
    const bytes = Buffer.from(toBase64(v), 'base64');
    expect(bytes.length).toBe(16);
    for (let i = 0; i < 4; i++) expect(bytes.readFloatLE(i * 4)).toBe(v[i]);
    expect(toFloatList(v)[0]).toBeCloseTo(v[0] ?? 0, 7);
  });
});

describe('parseMultipart', () => {
  it('reads a body produced by the platform FormData encoder', async () => {
    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob([new Uint8Array(32_000)], { type: 'audio/mpeg' }), 'a.mp3');
    const encoded = new Response(form);
    const boundary = multipartBoundary(encoded.headers.get('content-type') ?? undefined);
    expect(boundary).toBeDefined();
    const parts = parseMultipart(Buffer.from(await encoded.arrayBuffer()), boundary ?? '');
    expect(parts?.map((p) => p.name)).toEqual(['model', 'file']);
    expect(parts?.[0]?.data.toString()).toBe('whisper-1');
    expect(parts?.[1]).toMatchObject({ filename: 'a.mp3', contentType: 'audio/mpeg' });
    expect(parts?.[1]?.data.length).toBe(32_000);
  });

  it('rejects bodies that are not multipart', () => {
    expect(multipartBoundary('application/json')).toBeUndefined();
    expect(multipartBoundary('multipart/form-data; boundary="abc"')).toBe('abc');
    expect(parseMultipart(Buffer.from('nothing here'), 'abc')).toBeUndefined();
  });
});
