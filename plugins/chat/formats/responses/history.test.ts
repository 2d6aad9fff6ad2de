import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayError, openStore } from '../../../../src/sdk.js';
import { deepFreeze } from '../../chat.testkit.js';
import type { FormatServices } from '../types.js';
import { historyItem, loadResponse, resolveInput, storeResponse } from './history.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-history-'));
const store = openStore(`sqlite:${join(dir, 'h.db')}`);
let now = 1_000_000;
const services = (over: Partial<FormatServices['settings']['responses']> = {}): FormatServices => ({
  store, now: () => now, settings: { responses: { retention_days: 30, max_per_org: 100, max_stored_bytes: 1 << 20, sweep_interval_ms: 60_000, ...over } },
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const stored = (id: string) => ({
  response: { id, output: [{ type: 'reasoning', id: `rs_${id}_0` }, { type: 'function_call', id: `fc_${id.slice(5)}_1`, call_id: 'c1', name: 'w', arguments: '{}', status: 'completed' }] },
  input: [{ role: 'user', content: 'weather?' }],
});

const param = async (p: Promise<unknown>): Promise<string | null | undefined> => {
  const err = await p.catch((e: unknown) => e);
  return err instanceof GatewayError ? err.toBody().error.param : undefined;
};

describe('stored conversations', () => {
  it('previous_response_id puts the stored input and output (ids and reasoning removed) before the new input', async () => {
    expect(await storeResponse(services(), 'org_a', stored('resp_one'))).toBe(true);
    const items = await resolveInput(services(), 'org_a', deepFreeze({ previous_response_id: 'resp_one', input: [{ type: 'function_call_output', call_id: 'c1', output: 'ok' }] }));
    expect(items).toEqual([
      { role: 'user', content: 'weather?' }, { type: 'function_call', call_id: 'c1', name: 'w', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    ]);
  });

  it('an item_reference is replaced by the stored output item it names', async () => {
    await storeResponse(services(), 'org_a', stored('resp_two'));
    const items = await resolveInput(services(), 'org_a', deepFreeze({ input: [{ type: 'item_reference', id: 'fc_two_1' }, { role: 'user', content: 'and?' }] }));
    expect(items[0]).toEqual({ type: 'function_call', call_id: 'c1', name: 'w', arguments: '{}' });
  });

  it.each([
    [{ previous_response_id: 'resp_nope', input: 'x' }, 'previous_response_id'],
    [{ input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id: 'fc_nope_0' }] }, 'input[1].id'],
    [{ input: [{ type: 'item_reference', id: 'fc_two_0' }] }, 'input[0].id'], // a reasoning item: not carried
    [{ input: [{ type: 'item_reference', id: 'not-ours' }] }, 'input[0].id'],
  ])('%j → 400 naming %s', async (body, p) => {
    expect(await param(resolveInput(services(), 'org_a', deepFreeze(body)))).toBe(p);
  });

  it("another org's response is not found; an expired one neither", async () => {
    await storeResponse(services(), 'org_a', stored('resp_three'));
    expect(await param(resolveInput(services(), 'org_b', { previous_response_id: 'resp_three', input: 'x' }))).toBe('previous_response_id');
    now += 30 * 86_400_000;
    expect(await loadResponse(services(), 'org_a', 'resp_three')).toBeUndefined();
  });

  it('a response larger than max_stored_bytes is not stored', async () => {
    expect(await storeResponse(services({ max_stored_bytes: 1024 }), 'org_a', { response: { id: 'resp_big', output: [] }, input: [{ role: 'user', content: 'x'.repeat(2000) }] })).toBe(false);
    expect(await loadResponse(services(), 'org_a', 'resp_big')).toBeUndefined();
  });

  it.each([
    [{ type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [] }, { type: 'message', role: 'assistant', content: [] }],
    [{ type: 'reasoning', id: 'r' }, undefined], [{ type: 'web_search_call', id: 'w' }, undefined],
  ])('historyItem(%j) → %j', (item, expected) => {
    expect(historyItem(deepFreeze(item))).toEqual(expected);
  });
});
