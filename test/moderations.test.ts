import { describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/** POST /v1/moderations with the official openai SDK: passed through, free (cost 0) and logged. */

const t = useOrgGateway('moderations', '1', {}, { ledger: true });

describe('moderations', () => {
  it('omni-moderation-latest: results as the provider sent them, cost 0, and a log row', async () => {
    const before = await t.balance(t.orgId);
    const { data: r, response } = await t.client.moderations.create({ model: 'omni-moderation-latest', input: 'a calm sentence' }).withResponse();
    expect(r.results).toHaveLength(1);
    expect(r.results[0]).toMatchObject({ flagged: false, categories: { violence: false } });
    expect(r.model).toBe('omni-moderation-latest');
    expect(await t.balance(t.orgId)).toBe(before);
    const row = await logRow(t, response.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ modality: 'moderation', usedProvider: 'openai', status: 200, costMicros: 0, extra: { flagged: false } });
  });

  it('a list of inputs gets a result each; a flagged input is flagged and logged so; the model defaults as OpenAI\'s', async () => {
    const r = await t.client.moderations.create({ input: ['one', 'two [[sim:flagged]]'] });
    expect(r.results.map((x) => x.flagged)).toEqual([true, true]);
    expect(r.results[0]?.categories.violence).toBe(true);
    expect(r.model).toBe('omni-moderation-latest');
  });

  it('text and image parts are one multimodal input', async () => {
    const r = await t.client.moderations.create({ model: 'omni-moderation-latest', input: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] });
    expect(r.results).toHaveLength(1);
    expect(r.results[0]?.category_applied_input_types?.violence).toEqual(['text', 'image']);
  });

  it.each([[{ input: '' }, 'input'], [{ input: [] }, 'input'], [{ input: 'x', model: 'gpt-4o-mini' }, 'model']])('%j → 4xx naming %s', async (body, param) => {
    const r = await postJson(`${t.url}/v1/moderations`, body, t.key);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect((r.body as { error: { param: string } }).error.param).toBe(param);
  });
});
