import { describe, expect, it } from 'vitest';
import {
  NO_DIRECTIVES,
  directivesFromBody,
  extractText,
  hasFault,
  parseDirectives,
  withoutFaults,
} from './directives.js';

describe('parseDirectives', () => {
  it('returns the shared empty value when there is no marker', () => {
    expect(parseDirectives('just a prompt')).toBe(NO_DIRECTIVES);
    expect(hasFault(NO_DIRECTIVES)).toBe(false);
  });

  it('parses every numeric directive', () => {
    const d = parseDirectives(
      'a [[sim:status=429]] b [[sim:delay_ms=3000]] [[sim:tokens=12]] [[sim:size_mb=4.5]] ' +
        '[[sim:chunk_delay_ms=20]] [[sim:fail_times=2]]',
    );
    expect(d).toMatchObject({ status: 429, delayMs: 3000, tokens: 12, sizeMb: 4.5, chunkDelayMs: 20, failTimes: 2 });
  });

  it('keeps usage exactly as written: negative, fractional or huge (a provider reporting garbage)', () => {
    expect(parseDirectives('[[sim:usage=-1000]]').usage).toBe(-1000);
    expect(parseDirectives('[[sim:usage=2.5]]').usage).toBe(2.5);
    expect(parseDirectives('[[sim:usage=1e15]]').usage).toBe(1e15);
    expect(withoutFaults(parseDirectives('[[sim:usage=-1]]')).usage).toBe(-1);
  });

  it('parses every flag directive', () => {
    const d = parseDirectives(
      '[[sim:safety_block]][[sim:safety_finish]][[sim:malformed]][[sim:drop_mid_stream]]' +
        '[[sim:stream_error]][[sim:text_only]][[sim:hang]]',
    );
    expect(d).toMatchObject({
      safetyBlock: true,
      safetyFinish: true,
      malformed: true,
      dropMidStream: true,
      streamError: true,
      textOnly: true,
      hang: true,
    });
  });

  it('accepts several settings in one marker and lets the last value win', () => {
    const d = parseDirectives('[[sim:status=503, fail_times=1;tokens=3 hang]] then [[sim:status=500]]');
    expect(d).toMatchObject({ status: 500, failTimes: 1, tokens: 3, hang: true });
  });

  it('ignores unknown keys, bad numbers and out-of-range values', () => {
    const d = parseDirectives('[[sim:status=abc]] [[sim:status=99]] [[sim:tokens=-1]] [[sim:frobnicate]] [[sim:hang=1]]');
    expect(d.status).toBeUndefined();
    expect(d.tokens).toBeUndefined();
    expect(d.hang).toBe(false);
  });

  it('floors integer settings but keeps fractional size_mb', () => {
    expect(parseDirectives('[[sim:tokens=2.9]] [[sim:size_mb=0.25]]')).toMatchObject({ tokens: 2, sizeMb: 0.25 });
  });

  it('is case-insensitive on keys and accepts dashes', () => {
    expect(parseDirectives('[[sim:Delay-MS=10]] [[sim:DROP_MID_STREAM]]')).toMatchObject({ delayMs: 10, dropMidStream: true });
  });

  it('applies scoped markers only to the matching first path segment', () => {
    const text = '[[sim@openai:status=500]] [[sim@anthropic:status=529]] [[sim:tokens=4]]';
    expect(parseDirectives(text, 'openai')).toMatchObject({ status: 500, tokens: 4 });
    expect(parseDirectives(text, 'anthropic')).toMatchObject({ status: 529, tokens: 4 });
    expect(parseDirectives(text, 'gemini').status).toBeUndefined();
    expect(parseDirectives(text).status).toBeUndefined();
  });
});

describe('directivesFromBody', () => {
  it('finds markers in raw JSON bytes without parsing the JSON', () => {
    const body = Buffer.from(JSON.stringify({ messages: [{ content: 'hi [[sim:status=500]]' }] }));
    expect(directivesFromBody(body).status).toBe(500);
    expect(directivesFromBody(Buffer.from('{"a":"b"}'))).toBe(NO_DIRECTIVES);
  });
});

describe('withoutFaults', () => {
  it('keeps shaping settings and drops faults', () => {
    const d = withoutFaults(parseDirectives('[[sim:status=500,tokens=3,hang,size_mb=2,chunk_delay_ms=5]]'));
    expect(hasFault(d)).toBe(false);
    expect(d).toMatchObject({ tokens: 3, sizeMb: 2, chunkDelayMs: 5 });
  });
});

describe('extractText', () => {
  it('collects nested strings and skips base64 data fields', () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello [[sim:hang]]' }] }],
      contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: 'QUJD[[sim:status=500]]' } }] }],
    };
    const text = extractText(body);
    expect(text).toContain('hello [[sim:hang]]');
    expect(text).not.toContain('QUJD');
    expect(parseDirectives(text)).toMatchObject({ hang: true });
    expect(parseDirectives(text).status).toBeUndefined();
  });
});
