import { describe, expect, it } from 'vitest';
import { GatewayError, type MediaRecord } from '../../src/sdk.js';
import { hostedTrack } from './content.js';

const HOSTED: MediaRecord = {
  id: 'log_abc', requestId: 'req_abc', orgId: 'org_1', modality: 'music', model: 'm', usedModel: 'u', usedProvider: 'google',
  prompt: 'p', text: null, storage: 's3', objectKey: 'music/org_1/req_abc.mp3', bytes: 1000, mimeType: 'audio/mpeg',
  costMicros: 50_000, error: false, errorCode: null, createdAt: 1, expiresAt: 2, cleanedAt: null, meta: null,
};
/** The object store is only handed through: any value stands for "configured". */
const STORE = 'the configured object store';

function refusal(record: MediaRecord | undefined, orgId: string | undefined, store: string | undefined): { code: string; status: number; message: string } {
  try {
    hostedTrack(record, 'req_abc', orgId, 30, store);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as GatewayError;
    return { code: e.code, status: e.status, message: e.message };
  }
  throw new Error('expected an error');
}

describe('hostedTrack', () => {
  it("gives the org's hosted track, its object key and the store", () => {
    expect(hostedTrack(HOSTED, 'req_abc', 'org_1', 30, STORE)).toEqual({ record: HOSTED, objectKey: HOSTED.objectKey, objects: STORE });
  });

  it.each([
    ['unknown', undefined, 'org_1'],
    ["another org's", HOSTED, 'org_2'],
    ['asked without an org', HOSTED, undefined],
    ['not music', { ...HOSTED, modality: 'speech' }, 'org_1'],
  ])('an %s track is 404 not_found (never 403)', (_name, record, orgId) => {
    expect(refusal(record, orgId, STORE)).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('a swept track is 410 gone, naming the retention', () => {
    const r = refusal({ ...HOSTED, cleanedAt: 3 }, 'org_1', STORE);
    expect(r).toMatchObject({ code: 'gone', status: 410 });
    expect(r.message).toContain('30-day');
  });

  it.each([
    ['inline', { ...HOSTED, storage: 'inline' as const, objectKey: null }, STORE],
    ['failed', { ...HOSTED, error: true }, STORE],
    ['without object storage configured', HOSTED, undefined],
  ])('a track that is not hosted (%s) is 404, pointing at audio.base64', (_name, record, store) => {
    const r = refusal(record, 'org_1', store);
    expect(r).toMatchObject({ code: 'not_found', status: 404 });
    expect(r.message).toContain('audio.base64');
  });
});
