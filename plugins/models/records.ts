import type { ModelDef, ModelRoute, PriceKey } from '../../src/sdk.js';

/** The price keys every record shows (spec §2.3), "0" when the model has no such price. */
const RECORD_PRICE_KEYS: readonly PriceKey[] = [
  'prompt', 'completion', 'image', 'request', 'input_cache_read', 'input_cache_write', 'web_search',
  'internal_reasoning', 'video_per_second', 'audio_music_per_generation',
];
/** The price keys of each `providers[]` entry (spec §2.3). */
const PROVIDER_PRICE_KEYS: readonly PriceKey[] = ['prompt', 'completion', 'image', 'audio_music_per_generation'];

export interface ProviderEntry {
  providerId: string;
  modelName: string;
  pricing: Record<string, string>;
  streaming: boolean;
  vision: boolean;
  documents: boolean;
  cancellation: boolean;
  tools: boolean;
  parallelToolCalls: boolean;
  reasoning: boolean;
  stability: string;
}

/** A model record of `GET /v1/models` (spec §2.3), plus OpenAI's `object`/`owned_by` so its SDKs list it. */
export interface ModelRecord {
  id: string;
  object: 'model';
  owned_by: string;
  name: string;
  aliases: string[];
  created: number;
  description: string;
  family: string;
  /** The gateway modality (chat, embeddings, speech, transcription, music): which endpoint serves it. */
  modality: string;
  architecture: { input_modalities: string[]; output_modalities: string[]; tokenizer: string };
  top_provider: { is_moderated: boolean; context_length: number; max_completion_tokens: number | null };
  providers: ProviderEntry[];
  pricing: Record<string, string>;
  context_length: number;
  per_request_limits: Record<string, string>;
  supported_parameters: string[];
  json_output: boolean;
  structured_outputs: boolean;
  free: boolean;
  deprecated_at: string | null;
  deactivated_at: string | null;
  stability: string;
  /** Prices that replace `pricing` above a prompt size (Gemini 2.5 Pro over 200k tokens), when the model has any. */
  pricing_tiers?: Array<{ above_prompt_tokens: number; pricing: Record<string, string> }>;
  /** Named price sets a request selects (images: `quality/size`), when the model has any. */
  pricing_variants?: Record<string, Record<string, string>>;
  /** A model group of gateway.yaml (`models:`): requested by this id, served by its targets, then its fallbacks. */
  group?: { targets: string[]; fallbacks: string[] };
}

export interface CatalogueFilter {
  includeDeactivated: boolean;
  excludeDeprecated: boolean;
  now: number;
}

const reached = (date: string | undefined, now: number): boolean => date !== undefined && Date.parse(date) <= now;

/**
 * Prices as YAML wrote them (USD strings), with the record's fixed keys first and
 * any other priced unit (input_character, audio_second) after them.
 */
function pricing(model: ModelDef, keys: readonly PriceKey[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) out[k] = model.pricing[k] ?? '0';
  for (const [k, v] of Object.entries(model.pricing)) if (!(k in out) && v !== undefined) out[k] = v;
  return out;
}

function providerEntry(r: ModelRoute): ProviderEntry {
  return { providerId: r.provider.id, modelName: r.model.upstreamId, pricing: pricing(r.model, PROVIDER_PRICE_KEYS), ...r.model.capabilities, stability: r.model.stability };
}

/** One record from the routes that serve a model id; the first route (tried first) gives the model's fields. */
function record(routes: readonly ModelRoute[]): ModelRecord {
  const first = routes[0] as ModelRoute;
  const m = first.model;
  const prices = pricing(m, RECORD_PRICE_KEYS);
  return {
    id: m.id, object: 'model', owned_by: first.provider.id, name: m.name,
    aliases: [...new Set(routes.flatMap((r) => r.model.aliases))],
    created: m.created, description: m.description, family: m.family, modality: m.modality,
    architecture: { input_modalities: m.inputModalities, output_modalities: m.outputModalities, tokenizer: m.tokenizer },
    top_provider: { is_moderated: m.isModerated, context_length: m.contextLength, max_completion_tokens: m.maxOutputTokens ?? null },
    providers: routes.map(providerEntry),
    pricing: prices,
    context_length: m.contextLength, per_request_limits: m.perRequestLimits, supported_parameters: m.supportedParameters,
    json_output: m.jsonOutput, structured_outputs: m.structuredOutputs,
    free: Object.values(prices).every((p) => Number(p) === 0),
    deprecated_at: m.deprecatedAt ?? null, deactivated_at: m.deactivatedAt ?? null, stability: m.stability,
    ...(m.pricingTiers.length > 0 ? { pricing_tiers: m.pricingTiers.map((t) => ({ above_prompt_tokens: t.abovePromptTokens, pricing: { ...t.pricing } as Record<string, string> })) } : {}),
    ...(Object.keys(m.pricingVariants).length > 0
      ? { pricing_variants: Object.fromEntries(Object.entries(m.pricingVariants).map(([k, v]) => [k, { ...v.pricing } as Record<string, string>])) } : {}),
  };
}

/**
 * The model list from every provider file, one record per model id in file order.
 * A route past its `deactivated_at` is left out unless `includeDeactivated`; one
 * past its `deprecated_at` is left out when `excludeDeprecated`. A model with no
 * route left is not listed.
 */
export function modelRecords(all: readonly ModelRoute[], f: CatalogueFilter): ModelRecord[] {
  const byId = new Map<string, ModelRoute[]>();
  for (const r of all) {
    if (!f.includeDeactivated && reached(r.model.deactivatedAt, f.now)) continue;
    if (f.excludeDeprecated && reached(r.model.deprecatedAt, f.now)) continue;
    const list = byId.get(r.model.id) ?? [];
    list.push(r);
    byId.set(r.model.id, list);
  }
  return [...byId.values()].map(record);
}

/**
 * The records of the model groups (gateway.yaml `models:`): each as its first target's record
 * (prices, capabilities: what a request is billed when that target serves it) under the group's
 * id, with every target's and fallback's providers, and the group itself named.
 */
export function groupRecords(groups: ReadonlyMap<string, { targets: readonly string[]; fallbacks: readonly string[] }>, models: readonly ModelRecord[]): ModelRecord[] {
  const out: ModelRecord[] = [];
  for (const [id, g] of groups) {
    const members = [...g.targets, ...g.fallbacks].map((m) => models.find((r) => r.id === m || r.aliases.includes(m))).filter((r): r is ModelRecord => r !== undefined);
    const first = members[0];
    if (!first) continue;
    const providers = [...new Map(members.flatMap((r) => r.providers).map((p) => [JSON.stringify(p), p])).values()];
    out.push({
      ...first, id, name: id, aliases: [], providers,
      description: `Model group: served by ${g.targets.join(', ')}${g.fallbacks.length ? `, falling back to ${g.fallbacks.join(', ')}` : ''}; each request is billed at the model that served it.`,
      group: { targets: [...g.targets], fallbacks: [...g.fallbacks] },
    });
  }
  return out;
}
