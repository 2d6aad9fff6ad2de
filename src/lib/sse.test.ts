import { describe, expect, it } from 'vitest';
import { formatSse, SseDecoder } from './sse.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('SseDecoder', () => {
  it.each([
    ['one event', ['data: {"a":1}\n\n'], [{ event: undefined, data: '{"a":1}' }]],
    ['named event', ['event: ping\ndata: {}\n\n'], [{ event: 'ping', data: '{}' }]],
    ['split across chunks', ['da', 'ta: x', '\n', '\ndata: y\n\n'], [{ event: undefined, data: 'x' }, { event: undefined, data: 'y' }]],
    ['CRLF', ['data: x\r\n\r\n'], [{ event: undefined, data: 'x' }]],
    ['multi-line data', ['data: a\ndata: b\n\n'], [{ event: undefined, data: 'a\nb' }]],
    ['comments ignored', [': keep-alive\n\ndata: z\n\n'], [{ event: undefined, data: 'z' }]],
  ])('%s', (_name, chunks, expected) => {
    const d = new SseDecoder();
    expect(chunks.flatMap((c) => d.push(enc(c)))).toEqual(expected);
  });

  it('keeps a multi-byte character split across chunks intact', () => {
    const bytes = enc('data: é\n\n');
    const d = new SseDecoder();
    expect([...d.push(bytes.subarray(0, 7)), ...d.push(bytes.subarray(7))]).toEqual([{ event: undefined, data: 'é' }]);
  });

  it('returns an unterminated last event at end', () => {
    const d = new SseDecoder();
    expect(d.push(enc('data: tail'))).toEqual([]);
    expect(d.end()).toEqual([{ event: undefined, data: 'tail' }]);
  });

  it('formats events', () => {
    expect(formatSse('{}')).toBe('data: {}\n\n');
    expect(formatSse('{}', 'error')).toBe('event: error\ndata: {}\n\n');
  });
});
