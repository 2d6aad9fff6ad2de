import { describe, expect, it } from 'vitest';
import { buildMp3, framesForSeconds } from '../../simulator/mp3.js';
import { estimateSeconds, isAudioContentType, looksLikeText, maxSeconds, sniffAudio } from './audio-format.js';

/** A PCM WAV header for `seconds` of 16 kHz mono 16-bit audio, followed by its data. */
function wav(seconds: number): Buffer {
  const data = Buffer.alloc(seconds * 32_000);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(16_000, 24);
  h.writeUInt32LE(32_000, 28); // byte rate
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

const bytes = (...b: number[]): Buffer => Buffer.from([...b, ...new Array<number>(16).fill(0)]);

describe('sniffAudio', () => {
  it.each([
    ['wav', wav(1), 'audio/wav'],
    ['mp3 with ID3', buildMp3(3), 'audio/mpeg'],
    ['bare mp3 frame', bytes(0xff, 0xfb, 0x90, 0xc4), 'audio/mpeg'],
    ['aac adts', bytes(0xff, 0xf1, 0x50, 0x80), 'audio/aac'],
    ['flac', Buffer.from('fLaC\0\0\0\0'), 'audio/flac'],
    ['ogg', Buffer.from('OggS\0\0\0\0'), 'audio/ogg'],
    ['m4a', Buffer.from('\0\0\0\x20ftypM4A '), 'audio/mp4'],
    ['webm', bytes(0x1a, 0x45, 0xdf, 0xa3), 'audio/webm'],
  ])('recognises %s', (_name, head, mime) => {
    expect(sniffAudio(head)?.mime).toBe(mime);
  });

  it.each([
    ['text', Buffer.from('hello, this is not audio')],
    ['png', bytes(0x89, 0x50, 0x4e, 0x47)],
    ['pdf', Buffer.from('%PDF-1.7')],
    ['empty', Buffer.alloc(0)],
  ])('refuses %s', (_name, head) => {
    expect(sniffAudio(head)).toBeUndefined();
  });
});

describe('duration for metering', () => {
  it('reads a WAV header exactly and reserves just above it', () => {
    const w = wav(7);
    expect(estimateSeconds(w.subarray(0, 4096), w.length)).toBe(7);
    expect(maxSeconds(w.subarray(0, 4096), w.length)).toBe(8);
  });

  it('reads the MP3 bitrate after the ID3 tag', () => {
    const m = buildMp3(framesForSeconds(10));
    expect(estimateSeconds(m.subarray(0, 4096), m.length)).toBeCloseTo(9.98, 2);
  });

  it('reserves for the lowest bitrate we accept, so the bound is never short', () => {
    const m = buildMp3(framesForSeconds(10));
    expect(maxSeconds(m.subarray(0, 4096), m.length)).toBe(Math.ceil(m.length / 750));
    expect(maxSeconds(m.subarray(0, 4096), m.length)).toBeGreaterThan(estimateSeconds(m.subarray(0, 4096), m.length));
  });

  it('falls back to 128 kbps for formats without a readable header, at least one second', () => {
    expect(estimateSeconds(Buffer.from('OggS'), 32_000)).toBe(2);
    expect(estimateSeconds(Buffer.from('OggS'), 10)).toBe(1);
  });
});

describe('telling audio from text in a speech reply', () => {
  it.each([
    ['JSON', '{"error":{"message":"quota"}}', true],
    ['JSON after blanks', '\n  [1,2]', true],
    ['HTML', '<!DOCTYPE html><html>', true],
    ['JSON with non-ASCII text', '{"detail":"voix indisponible — réessayez"}', true],
    ['an ID3 tag', 'ID3\u0004\u0000\u0000', false],
    ['plain words', 'hello there', false],
  ])('%s → %s', (_name, text, expected) => {
    expect(looksLikeText(Buffer.from(text))).toBe(expected);
  });

  it('no audio format we pass through starts like text: MP3, WAV, PCM silence', () => {
    expect(looksLikeText(buildMp3(framesForSeconds(1)))).toBe(false);
    expect(looksLikeText(Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(60)]))).toBe(false);
    expect(looksLikeText(Buffer.alloc(64))).toBe(false);
    expect(looksLikeText(Buffer.from([0x7b, 0x00, 0x01, 0x7b]))).toBe(false); // PCM that happens to start with "{"
  });

  it.each([
    ['audio/mpeg', true], ['audio/wav; codecs=1', true], ['application/octet-stream', true], [undefined, true],
    ['application/json', false], ['text/html; charset=utf-8', false], ['text/plain', false], ['application/octet-streamx', false],
  ])('content type %s → %s', (type, expected) => {
    expect(isAudioContentType(type)).toBe(expected);
  });
});
