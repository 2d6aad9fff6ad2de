import { describe, expect, it } from 'vitest';
import { renderTranscript, timestamp } from './transcript-format.js';

const t = { text: 'Hello there.', seconds: 3725.5, language: 'en' };

describe('renderTranscript', () => {
  it.each([
    ['json', 'application/json', JSON.stringify({ text: 'Hello there.', usage: { type: 'duration', seconds: 3726, cost: 0.5 } })],
    ['text', 'text/plain; charset=utf-8', 'Hello there.\n'],
    ['srt', 'text/plain; charset=utf-8', '1\n00:00:00,000 --> 01:02:05,500\nHello there.\n\n'],
    ['vtt', 'text/plain; charset=utf-8', 'WEBVTT\n\n00:00:00.000 --> 01:02:05.500\nHello there.\n\n'],
  ] as const)('%s', (format, contentType, body) => {
    expect(renderTranscript(t, format, 0.5)).toEqual({ contentType, body });
  });

  it('verbose_json has the duration, language and one segment spanning the audio', () => {
    const r = renderTranscript(t, 'verbose_json', 0.5);
    expect(JSON.parse(r.body)).toMatchObject({
      task: 'transcribe', language: 'en', duration: 3725.5, text: 'Hello there.',
      segments: [{ id: 0, start: 0, end: 3725.5, text: 'Hello there.' }], usage: { type: 'duration', seconds: 3726, cost: 0.5 },
    });
  });

  it('writes times as SRT and WebVTT want them', () => {
    expect(timestamp(0, ',')).toBe('00:00:00,000');
    expect(timestamp(61.0405, '.')).toBe('00:01:01.041');
  });
});
