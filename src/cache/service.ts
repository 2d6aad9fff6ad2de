import type { IncomingHttpHeaders } from 'node:http';
import type { Exchange } from '../pipeline/exchange.js';
import type { ShortCircuit, ShortCircuitContext } from '../pipeline/hooks.js';
import { microsToUsd } from '../lib/money.js';
import type { CacheDef, Metered, ModalityHandler, ModelRequest, ResponseCacheApi } from '../pipeline/plugin.js';
import { meteredMicros } from '../pipeline/request-lifecycle.js';
import type { ProviderCatalog } from '../providers/catalog.js';
import { canonicalHash } from './canonical.js';
import { type Embedder, type Embedding, SemanticIndex } from './semantic.js';
import { effectiveSettings, type EffectiveSettings, requestDirective, type RequestDirective } from '../model/cache-settings.js';
import { CacheUnavailable, type CacheStorage } from './storage.js';
import type { CacheEntry, CacheHit, CacheOutcome, CacheResult, ResponseCacheConfig } from '../model/cache.js';



export interface CacheObserver {
  onCacheResult(result: CacheResult, savedMicros: number): void;
  /** The cache's store (Redis) failed: the request went on without it. */
  onCacheDegraded(): void;
}

export interface ResponseCacheDeps {
  config: ResponseCacheConfig;
  storage: CacheStorage;
  catalog: ProviderCatalog;
  embedder: Embedder | undefined;
  now(): number;
  observer: CacheObserver | undefined;
  warn(data: object, msg: string): void;
}

/** One request's cache, from the parse to the stored reply. */
interface Pending {
  settings: EffectiveSettings;
  directive: RequestDirective;
  key: string;
  ttlS: number;
  replay: (ctx: ShortCircuitContext, hit: CacheHit) => Promise<Metered>;
  semantic: { list: string; prefix: string; text: string } | undefined;
  embedding: Embedding | undefined;
  offered: unknown;
  result: CacheResult;
}

const CACHE_HEADER = 'x-tollgate-cache';

/**
 * The response cache (docs/cache.md). Entries are keyed by the org (and the project when
 * its settings say `scope: project`), the modality, the model as resolved and the hash of
 * the canonical request; no key is ever shared across orgs. Lookups run as a pre-upstream
 * hook (after the limits admitted the request and its credit was reserved: a hit counts
 * for rpm and is charged what it replays for); stores run after the reply was billed.
 */
export class ResponseCache implements ResponseCacheApi {
  private readonly pending = new WeakMap<Exchange, Pending>();
  private readonly index: SemanticIndex;
  private lastWarning = Number.NEGATIVE_INFINITY;

  constructor(private readonly d: ResponseCacheDeps) {
    this.index = new SemanticIndex(d.storage, d.config.semantic.maxEntriesPerProject, d.config.maxTtlS);
  }

  cached<P extends ModelRequest, E>(handler: ModalityHandler<P>, def: CacheDef<P, E>): ModalityHandler<P> {
    return {
      ...handler,
      parse: async (body, request) => {
        const parsed = await handler.parse(body, request);
        this.prepare(request.exchange, request.headers, parsed, def);
        return parsed;
      },
      respond: async (ctx) => {
        const p = this.pending.get(ctx.ex);
        if (p) void ctx.reply.header(CACHE_HEADER, p.result);
        const metered = await handler.respond(ctx);
        return p ? this.afterReply(ctx.ex, p, metered) : metered;
      },
    };
  }

  wants(ex: Exchange): boolean {
    const p = this.pending.get(ex);
    return p?.directive.write === true && p.result !== 'bypass';
  }

  offer<E>(ex: Exchange, body: E): void {
    const p = this.pending.get(ex);
    if (p) p.offered = body;
  }

  /**
   * The pre-upstream hook: a stored reply answers the request (ShortCircuit), else it goes
   * upstream as a miss. A request the cache is not on for answers at once (nothing to await).
   */
  lookup(ex: Exchange): Promise<ShortCircuit | undefined> | undefined {
    const p = this.pending.get(ex);
    if (!p || p.result === 'bypass') return undefined;
    return this.lookupPending(ex, p);
  }

  private async lookupPending(ex: Exchange, p: Pending): Promise<ShortCircuit | undefined> {
    if (!p.directive.read) return this.miss(ex, p);
    try {
      let entry = await this.read(p.key, p.directive);
      if (!entry && p.semantic && p.settings.mode === 'semantic' && this.d.embedder) {
        p.embedding = await this.embed(ex, p);
        const near = p.embedding && await this.index.nearest(p.semantic.list, p.semantic.prefix, p.embedding.vector, p.settings.threshold);
        if (near) {
          entry = await this.read(near.key, p.directive);
          if (entry) ex.extra = { ...ex.extra, cache_similarity: Math.round(near.similarity * 10_000) / 10_000 };
        }
      }
      if (!entry) return this.miss(ex, p);
      return this.hit(ex, p, entry);
    } catch (err) {
      if (!(err instanceof CacheUnavailable)) throw err;
      this.degraded(ex, p, err);
      return undefined;
    }
  }

  /** The last turn's embedding; undefined when the embedding model failed (the request goes on as a miss, and is not indexed). */
  private async embed(ex: Exchange, p: Pending): Promise<Embedding | undefined> {
    if (!p.semantic || !this.d.embedder) return undefined;
    try {
      return await this.d.embedder.embed(p.semantic.text, ex.abort.signal);
    } catch (err) {
      ex.extra = { ...ex.extra, cache_semantic_error: (err as Error).message };
      p.semantic = undefined;
      return undefined;
    }
  }

  private prepare<P extends ModelRequest, E>(ex: Exchange, headers: IncomingHttpHeaders, parsed: P, def: CacheDef<P, E>): void {
    const org = ex.org;
    if (!org) return;
    const settings = effectiveSettings(this.d.config, ex.project?.cache, ex.apiKey?.cache);
    if (settings.mode === 'off') return;
    const directive = requestDirective(headers);
    const req = def.request(parsed);
    const ttlS = Math.min(directive.ttlS ?? settings.ttl_s, this.d.config.maxTtlS);
    const model = this.d.catalog.routesForModality(parsed.model, ex.modality)[0]?.model.id ?? parsed.model;
    const scope = settings.scope === 'project' ? ex.project?.id ?? '-' : '*';
    const key = `cache:v1:${org.id}:${scope}:${ex.modality}:${canonicalHash({ model, request: req?.key ?? null })}`;
    const left = req === undefined ? 'not cacheable' : settings.cache_all ? undefined
      : req.uncacheable ?? (req.temperature !== undefined && req.temperature > settings.max_temperature ? `temperature above ${settings.max_temperature}` : undefined);
    const semantic = req?.semantic && ex.project
      ? { list: SemanticIndex.listKey(org.id, ex.project.id, ex.modality, model), prefix: SemanticIndex.prefixHash({ model, prefix: req.semantic.prefix }), text: req.semantic.text }
      : undefined;
    const result: CacheResult = left !== undefined || (!directive.read && !directive.write) ? 'bypass' : 'miss';
    if (left !== undefined) ex.extra = { ...ex.extra, cache_bypass: left };
    this.pending.set(ex, {
      settings, directive, key, ttlS, semantic, embedding: undefined, offered: undefined, result,
      replay: def.replay as unknown as (ctx: ShortCircuitContext, hit: CacheHit) => Promise<Metered>,
    });
    ex.cache = { result, ageMs: null, savedMicros: 0 };
  }

  private async read(key: string, directive: RequestDirective): Promise<CacheEntry | undefined> {
    const raw = await this.d.storage.get(key);
    if (raw === undefined) return undefined;
    const entry = JSON.parse(raw) as CacheEntry;
    // A request's own `ttl=<s>` also bounds what it reads: nothing older.
    const age = this.d.now() - entry.at;
    if (age > entry.ttlS * 1000 || (directive.ttlS !== undefined && age > directive.ttlS * 1000)) return undefined;
    return entry;
  }

  private miss(ex: Exchange, p: Pending): undefined {
    p.result = 'miss';
    ex.cache = { result: 'miss', ageMs: null, savedMicros: 0 };
    return undefined;
  }

  private hit(ex: Exchange, p: Pending, entry: CacheEntry): ShortCircuit {
    const ageMs = Math.max(0, this.d.now() - entry.at);
    const fraction = p.settings.hit_price;
    const hit: CacheHit = { entry, ageMs, price: (micros) => Math.floor(micros * fraction) };
    p.result = 'hit';
    return {
      respond: async (ctx) => {
        void ctx.reply.header(CACHE_HEADER, 'hit');
        const metered = await p.replay(ctx, hit);
        const charged = meteredMicros(metered);
        const outcome: CacheOutcome = { result: 'hit', ageMs, savedMicros: Math.max(0, entry.costMicros - charged) };
        ex.cache = outcome;
        ex.extra = { ...ex.extra, cache_usage: entry.usage };
        return this.withEmbedding(ex, p, metered);
      },
    };
  }

  /** After the upstream's reply was written: stores it (a complete reply, when the request may write), and adds the embedding's cost. */
  private async afterReply(ex: Exchange, p: Pending, metered: Metered): Promise<Metered> {
    if (p.result === 'miss' && p.directive.write && p.offered !== undefined && metered.errorCode === undefined && !ex.abort.signal.aborted) {
      const entry: CacheEntry = { v: 1, at: this.d.now(), ttlS: p.ttlS, costMicros: meteredMicros(metered), usage: metered.usage ?? null, body: p.offered };
      const text = JSON.stringify(entry);
      if (text.length > this.d.config.maxEntryBytes) {
        ex.extra = { ...ex.extra, cache_not_stored: `larger than response_cache.max_entry_bytes (${this.d.config.maxEntryBytes})` };
      } else {
        try {
          await this.d.storage.set(p.key, text, p.ttlS);
          if (p.semantic && p.settings.mode === 'semantic' && this.d.embedder) {
            p.embedding ??= await this.embed(ex, p);
            if (p.semantic && p.embedding) await this.index.add(p.semantic.list, p.semantic.prefix, p.key, p.embedding.vector);
          }
        } catch (err) {
          if (!(err instanceof CacheUnavailable)) throw err;
          // The lookup was made (a miss, as the reply's header said): only the store failed.
          this.degraded(ex, p, err, 'miss');
        }
      }
    }
    p.offered = undefined;
    return this.withEmbedding(ex, p, metered);
  }

  /** The semantic lookup's embedding is the org's to pay: a cost line of the request (`extra.cache_embedding`). */
  private withEmbedding(ex: Exchange, p: Pending, metered: Metered): Metered {
    this.d.observer?.onCacheResult(ex.cache?.result ?? p.result, ex.cache?.savedMicros ?? 0);
    const e = p.embedding;
    if (!e) return metered;
    ex.extra = { ...ex.extra, cache_embedding: { model: e.model, tokens: e.tokens, cost_usd: microsToUsd(e.costMicros) } };
    const { costPicos: _picos, ...facts } = metered;
    return { ...facts, costMicros: meteredMicros(metered) + e.costMicros };
  }

  /** The cache's store failed: a lookup that could not be made is a bypass; a miss whose reply could not be stored stays a miss. */
  private degraded(ex: Exchange, p: Pending, err: Error, result: 'bypass' | 'miss' = 'bypass'): void {
    p.result = result;
    ex.cache = { result, ageMs: null, savedMicros: 0 };
    ex.extra = { ...ex.extra, ...(result === 'bypass' ? { cache_bypass: 'cache store unavailable' } : { cache_not_stored: 'cache store unavailable' }) };
    this.d.observer?.onCacheDegraded();
    if (this.d.now() - this.lastWarning < 10_000) return;
    this.lastWarning = this.d.now();
    this.d.warn({ err: err.message }, 'response cache store (Redis) unavailable: requests are served without the cache (bypass)');
  }
}
