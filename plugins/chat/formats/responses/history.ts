import { invalidField, type StoredRecord } from '../../../../src/sdk.js';
import { isObject } from '../../request.js';
import type { FormatServices } from '../types.js';
import { parseItemId } from './ids.js';
import { itemType, type Item } from './parse.js';

/**
 * The state behind `previous_response_id` and `item_reference`: responses the gateway
 * stored (`store: true`, the default, as OpenAI's) in the shared database, per org,
 * for `retention_days`, at most `max_per_org` of them. A stored response keeps the
 * whole conversation that produced it (its resolved input) and its output, so
 * continuing from it is one read, whichever instance stored it and whichever provider
 * served it.
 */

export const RECORD_KIND = 'response';

/** What a stored response holds: the reply as the client got it, and the input items that produced it. */
export interface StoredResponse {
  response: Record<string, unknown> & { output?: Item[] };
  input: Item[];
}

export async function loadResponse(services: FormatServices, orgId: string, id: string): Promise<StoredResponse | undefined> {
  const r = await services.store.records.get(RECORD_KIND, orgId, id, services.now());
  return r && isObject(r.data) ? (r.data as unknown as StoredResponse) : undefined;
}

/**
 * An earlier turn as input for the next: messages and function calls as they were,
 * without the ids (the provider that gets them stores nothing, and ids it did not
 * issue would be refused); reasoning and built-in tool items are left out.
 */
export function historyItem(item: Item): Item | undefined {
  const type = itemType(item);
  if (type !== 'message' && type !== 'function_call' && type !== 'function_call_output') return undefined;
  const { id: _id, status: _status, ...rest } = item;
  return rest;
}

/**
 * The request's input as items, with the conversation of `previous_response_id`
 * before it and every `item_reference` replaced by the stored item it names. An id
 * that is not the org's stored response (never stored, `store: false`, expired,
 * deleted, another org's) is a 400 naming the field, as OpenAI answers.
 */
export async function resolveInput(services: FormatServices, orgId: string, body: Item): Promise<Item[]> {
  const cache = new Map<string, StoredResponse | undefined>();
  const load = async (id: string): Promise<StoredResponse | undefined> => {
    if (!cache.has(id)) cache.set(id, await loadResponse(services, orgId, id));
    return cache.get(id);
  };
  const out: Item[] = [];
  if (typeof body.previous_response_id === 'string') {
    const prev = await load(body.previous_response_id);
    if (!prev) throw invalidField('previous_response_id', `Previous response with id '${body.previous_response_id}' not found.`);
    for (const item of [...prev.input, ...(prev.response.output ?? [])]) {
      const h = historyItem(item);
      if (h) out.push(h);
    }
  }
  const input: Item[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : ((body.input as Item[] | undefined) ?? []);
  for (const [i, item] of input.entries()) {
    if (itemType(item) !== 'item_reference') {
      out.push(item);
      continue;
    }
    const ref = parseItemId(String(item.id));
    const found = ref && (await load(ref.responseId))?.response.output?.[ref.index];
    const h = found && historyItem(found);
    if (!h) throw invalidField(`input[${i}].id`, `Item with id '${String(item.id)}' not found.`);
    out.push(h);
  }
  return out;
}

/**
 * Keeps a response for later turns when the client asked (`store` not false). A
 * record larger than `max_stored_bytes` is not kept, and the reply then says
 * `store: false`. Returns whether it was stored.
 */
export async function storeResponse(services: FormatServices, orgId: string, data: StoredResponse): Promise<boolean> {
  const { retention_days: days, max_per_org: keep, max_stored_bytes: cap } = services.settings.responses;
  const now = services.now();
  const record: StoredRecord = { kind: RECORD_KIND, id: String(data.response.id), orgId, data, createdAt: now, expiresAt: now + days * 86_400_000 };
  if (Buffer.byteLength(JSON.stringify(data)) > cap) return false;
  await services.store.records.put(record, keep);
  return true;
}
