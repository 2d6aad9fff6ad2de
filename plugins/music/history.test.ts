import { describe, expect, it } from 'vitest';
import { GatewayError, type MediaRecord } from '../../src/sdk.js';
import { historyItem, parseLimit } from './history.js';

const RECORD: MediaRecord = {
  id: 'log_abc', requestId: 'req_abc', orgId: 'org_1', modality: 'music', model: 'tune-3-clip-preview',
  usedModel: 'lyria-3-clip-preview', usedProvider: 'google', prompt: 'Warm lofi', text: '[Verse] la', storage: 's3',
  objectKey: 'music/org_1/req_abc.mp3', bytes: 480_000, mimeType: 'audio/mpeg', costMicros: 50_000, error: false, errorCode: null,
  createdAt: Date.UTC(2026, 0, 2, 3, 4, 5, 678), expiresAt: Date.UTC(2026, 1, 1), cleanedAt: null, meta: { response_format: 'mp3' },
};

describe('parseLimit', () => {
  it('defaults to 30 and accepts 1 to 100', () => {
    expect(parseLimit(undefined)).toBe(30);
    expect(parseLimit('')).toBe(30);
    expect(parseLimit('1')).toBe(1);
    expect(parseLimit('100')).toBe(100);
  });

  it.each(['0', '101', '-1', '2.5', 'ten', ' 5', ['5', '6']])('refuses %j with 400 on limit (not clamped)', (raw) => {
    expect(() => parseLimit(raw)).toThrow(GatewayError);
    try {
      parseLimit(raw);
    } catch (err) {
      expect((err as GatewayError).extras.param).toBe('limit');
    }
  });
});

describe('historyItem', () => {
  it('a hosted track: its content URL, cost in USD, seconds since the epoch', () => {
    expect(historyItem(RECORD)).toEqual({
      id: 'req_abc', object: 'music.generation', model: 'tune-3-clip-preview', prompt: 'Warm lofi', created: Math.floor(RECORD.createdAt / 1000),
      audio: { mime_type: 'audio/mpeg', storage: 's3', url: '/v1/music/req_abc/content' },
      usage: { cost_usd: 0.05 },
      metadata: { used_model: 'lyria-3-clip-preview', used_provider: 'google', response_format: 'mp3' },
      expired: false, error: false,
    });
  });

  it('an inline track has audio without a URL', () => {
    expect(historyItem({ ...RECORD, storage: 'inline', objectKey: null }).audio).toEqual({ mime_type: 'audio/mpeg', storage: 'inline' });
  });

  it('a swept track: no audio, expired', () => {
    expect(historyItem({ ...RECORD, cleanedAt: RECORD.expiresAt })).toMatchObject({ audio: null, expired: true });
  });

  it('a failed generation: no audio, error, empty strings where nothing is known', () => {
    const failed = { ...RECORD, error: true, storage: 'none' as const, usedModel: null, usedProvider: null, prompt: null, costMicros: 0, meta: null };
    expect(historyItem(failed)).toMatchObject({
      prompt: '', audio: null, error: true, usage: { cost_usd: 0 },
      metadata: { used_model: '', used_provider: '', response_format: 'mp3' },
    });
  });
});
