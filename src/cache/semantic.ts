import { GatewayError } from '../lib/errors.js';
import { costPicos } from '../providers/pricing.js';
import { picosToMicros } from '../lib/money.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import type { UpstreamClient } from '../pipeline/upstream.js';
import { canonicalHash } from './canonical.js';
import type { CacheStorage } from './storage.js';

/*
 * The semantic index (docs/cache.md "Semantic"): each project keeps, per model, a capped
 * list of the last user turns it stored, as embedding vectors with the hash of everything
 * before that turn (earlier turns and parameters). A lookup embeds the new last turn and
 * looks only at entries with the same prefix hash: a paraphrase hits, the same question
 * after different earlier turns never does.
 */

/** One embedding call: the vector, and what it cost (billed to the org as a cost line of the request). */
export interface Embedding {
  vector: number[];
  tokens: number;
  costMicros: number;
  model: string;
}

/** Embeds text with gateway.yaml's `response_cache.semantic.embedding_model` through the core's upstream client. */
export class Embedder {
  constructor(
    private readonly catalog: ProviderCatalog, private readonly upstream: UpstreamClient,
    private readonly model: string, private readonly dimensions: number | undefined,
  ) {}

  async embed(text: string, signal: AbortSignal): Promise<Embedding> {
    const route = this.catalog.routesForModality(this.model, 'embeddings')[0];
    if (!route) throw new GatewayError('model_not_found', [this.model]);
    const body = { model: route.model.upstreamId, input: text, ...(this.dimensions ? { dimensions: this.dimensions } : {}) };
    const res = await this.upstream.send(route, { path: route.endpoint.path.replace('{model}', route.model.upstreamId), body: JSON.stringify(body), contentType: 'application/json' },
      route.provider.apiKey, signal, { timeoutMs: route.endpoint.timeoutMs });
    const text2 = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`embedding model ${this.model} answered ${res.statusCode}`);
    const json = JSON.parse(text2) as { data?: Array<{ embedding?: unknown }>; usage?: { prompt_tokens?: unknown } };
    const vector = json.data?.[0]?.embedding;
    if (!Array.isArray(vector) || !vector.every((x) => typeof x === 'number')) throw new Error(`embedding model ${this.model} sent no vector`);
    const tokens = typeof json.usage?.prompt_tokens === 'number' ? json.usage.prompt_tokens : Math.ceil(text.length / 4);
    return { vector: vector as number[], tokens, costMicros: picosToMicros(costPicos(route.model, { prompt: tokens })), model: route.model.id };
  }
}

interface IndexItem {
  /** Hash of the conversation before the last user turn, and of the parameters. */
  p: string;
  /** The exact key of the stored reply. */
  k: string;
  v: number[];
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** The index of one project and model. */
export class SemanticIndex {
  constructor(private readonly storage: CacheStorage, private readonly cap: number, private readonly maxTtlS: number) {}

  static listKey(orgId: string, projectId: string, modality: string, model: string): string {
    return `cache:v1:sem:${orgId}:${projectId}:${modality}:${canonicalHash(model).slice(0, 16)}`;
  }

  static prefixHash(prefix: unknown): string {
    return canonicalHash(prefix);
  }

  /** The exact key of the closest entry with the same prefix at or above the threshold, with its similarity. */
  async nearest(list: string, prefix: string, vector: readonly number[], threshold: number): Promise<{ key: string; similarity: number } | undefined> {
    let best: { key: string; similarity: number } | undefined;
    for (const raw of await this.storage.items(list)) {
      const item = JSON.parse(raw) as IndexItem;
      if (item.p !== prefix) continue;
      const similarity = cosine(vector, item.v);
      if (similarity >= threshold && (!best || similarity > best.similarity)) best = { key: item.k, similarity };
    }
    return best;
  }

  async add(list: string, prefix: string, key: string, vector: readonly number[]): Promise<void> {
    // Rounded to 6 decimals: a tenth of the size, and no similarity moves past the third decimal.
    const item: IndexItem = { p: prefix, k: key, v: vector.map((x) => Math.round(x * 1e6) / 1e6) };
    await this.storage.push(list, JSON.stringify(item), this.cap, this.maxTtlS);
  }
}
