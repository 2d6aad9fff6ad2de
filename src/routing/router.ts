import type { RoutingStrategy } from '../config/gateway-config.js';
import type { Hold, Limiter } from '../model/limits.js';
import type { FailureKind } from '../providers/upstream-failure.js';
import { type CooldownBook, retryAfterMs, type CooldownReason } from './cooldown.js';
import type { Deployment, DeploymentState, RoutingSettings } from '../model/routing.js';

/** What routing tells the metrics (src/telemetry/routing-metrics.ts). */
export interface RoutingObserver {
  cooled(d: Deployment, reason: CooldownReason): void;
  rejected(d: Deployment): void;
  capacitySkipped(d: Deployment): void;
}

/** One deployment taken for one attempt: release it once, with what the attempt turned out to be. */
export interface Lease {
  readonly deployment: Deployment;
  /** The attempt got a usable response after `ttfbMs`: feeds `lowest_latency`. */
  answered(ttfbMs: number): void;
  /** The request is over: frees its in-flight slot, settles its capacity hold to `tokens` (undefined: nothing used). */
  end(tokens: number | undefined): Promise<void>;
}

/** Why no deployment could be taken: all cooling (with the soonest return), or all at capacity. */
export interface NoDeployment {
  readonly none: 'cooling' | 'capacity' | 'rejected';
  /** When the first cooling deployment is back (ms since epoch), for a Retry-After. */
  readonly backAt: number | undefined;
}

export interface RouterOptions {
  settings: RoutingSettings;
  cooldowns: CooldownBook;
  now: () => number;
  /** Counts `rpm` / `tpm` capacity (global with Redis). Absent: capacity is not enforced. */
  limiter?: Limiter | undefined;
  observer?: RoutingObserver | undefined;
  /** Error-level report of a key the provider rejected (never the key itself). */
  onKeyRejected?: (d: Deployment, status: number | null) => void;
  random?: () => number;
}

/** Weight of the newest time to first byte in `lowest_latency`'s moving average. */
const EWMA_ALPHA = 0.3;

/**
 * Picks the deployment of each attempt: among those of the route's provider that are not
 * cooling down, not rejected, not yet tried by this request and under their capacity, by
 * the strategy. Holds the per-process counts the strategies read (in flight, latency);
 * the cooldowns are shared (CooldownBook). Its settings are replaced whole by a reload;
 * the counts are kept across one, by deployment name.
 */
export class Router {
  private current: RoutingSettings;
  private readonly inFlight = new Map<string, number>();
  private readonly latency = new Map<string, number>();
  readonly cooldowns: CooldownBook;
  private readonly random: () => number;

  constructor(private readonly opts: RouterOptions) {
    this.current = opts.settings;
    this.cooldowns = opts.cooldowns;
    this.random = opts.random ?? Math.random;
  }

  get settings(): RoutingSettings {
    return this.current;
  }

  /** A reload's settings, for requests that start from now on. */
  replace(settings: RoutingSettings): void {
    this.current = settings;
  }

  state(d: Deployment): DeploymentState {
    return this.cooldowns.state(d);
  }

  busy(d: Deployment): number {
    return this.inFlight.get(d.id) ?? 0;
  }

  latencyMs(d: Deployment): number | undefined {
    return this.latency.get(d.id);
  }

  /**
   * The deployment the strategy picks among `all` less those in `skip` (ids) and those out
   * of rotation; undefined when none is left. Synchronous and allocation-light: it runs on
   * every request (bench/routing.mjs measures it).
   */
  pick(all: readonly Deployment[], strategy: RoutingStrategy, skip?: ReadonlySet<string>): Deployment | undefined {
    if (all.length === 1) {
      // A provider's only key is never out of rotation (there is nowhere else to send), even
      // when an instance configured with more keys cooled it down: it takes what comes.
      const only = all[0]!;
      return skip?.has(only.id) ? undefined : only;
    }
    let best: Deployment | undefined;
    let bestScore = Infinity;
    let total = 0;
    for (const d of all) {
      if (skip?.has(d.id) || this.cooldowns.state(d) !== 'healthy') continue;
      if (strategy === 'weighted') {
        // Weighted reservoir: each candidate replaces the pick with probability weight / total so far.
        total += d.weight;
        if (this.random() * total < d.weight) best = d;
        continue;
      }
      const score = strategy === 'least_busy' ? this.busy(d) : (this.latency.get(d.id) ?? 0);
      // Ties (the same load, no latency measured yet) go to a random one of them, not always the first.
      if (score < bestScore || (score === bestScore && this.random() < 0.5)) {
        best = d;
        bestScore = score;
      }
    }
    return best;
  }

  /**
   * Takes a deployment for one attempt: the strategy's pick, skipping (and adding to `tried`)
   * any at its rpm/tpm capacity. `tokens` is the request's token bound, reserved against tpm.
   */
  async acquire(all: readonly Deployment[], strategy: RoutingStrategy, tried: Set<string>, requestId: string, tokens: number): Promise<Lease | NoDeployment> {
    let full = 0;
    for (let i = 0; i < all.length; i++) {
      const d = this.pick(all, strategy, tried);
      if (!d) break;
      tried.add(d.id);
      let hold: Hold | undefined;
      if (this.opts.limiter && (d.rpm !== undefined || d.tpm !== undefined)) {
        const verdict = await this.opts.limiter.admit({
          requestId, tokens, costMicros: 0,
          scopes: [{ id: `deployment:${d.id}`, limits: { rpm: d.rpm, tpm: d.tpm }, label: `deployment ${d.id}` }],
        });
        if (!verdict.ok) {
          full++;
          this.opts.observer?.capacitySkipped(d);
          continue;
        }
        hold = verdict.hold;
      }
      return this.lease(d, hold);
    }
    return this.noDeployment(all, full);
  }

  /**
   * An attempt on `d` failed: a 429 or a 5xx (for its Retry-After when it sends one — a 503
   * often does — else the configured cooldown), a timeout or a refused connection cool it down; a refused key (401/403, or the
   * provider's own `rejected_when`) takes it out until the config changes (and is reported
   * at error level each time it is seen). Only a provider with several deployments has one
   * taken out (`takeOut`). Returns whether it was (the request may then move on at once).
   */
  failed(
    d: Deployment, kind: FailureKind, status: number | null, headers: Record<string, string | string[] | undefined>, keyRefused: boolean, takeOut: boolean,
  ): boolean {
    if (keyRefused) {
      if (this.cooldowns.state(d) !== 'rejected') {
        if (takeOut) this.cooldowns.reject(d);
        this.opts.observer?.rejected(d);
        this.opts.onKeyRejected?.(d, status);
      }
      return takeOut;
    }
    if (!takeOut || kind === 'aborted' || kind === '4xx') return false;
    const asked = kind === '429' || kind === '5xx' ? retryAfterMs(headers, this.opts.now()) : undefined;
    const ms = asked ?? this.current.cooldownMs;
    this.cooldowns.cool(d, ms, kind);
    this.opts.observer?.cooled(d, kind);
    return true;
  }

  private lease(d: Deployment, hold: Hold | undefined): Lease {
    this.inFlight.set(d.id, this.busy(d) + 1);
    let ended = false;
    const limiter = this.opts.limiter;
    return {
      deployment: d,
      answered: (ttfbMs) => {
        const prev = this.latency.get(d.id);
        this.latency.set(d.id, prev === undefined ? ttfbMs : prev + EWMA_ALPHA * (ttfbMs - prev));
      },
      end: async (tokens) => {
        if (ended) return;
        ended = true;
        const left = this.busy(d) - 1;
        if (left > 0) this.inFlight.set(d.id, left);
        else this.inFlight.delete(d.id);
        if (hold && limiter) {
          if (tokens === undefined) await limiter.release(hold);
          else await limiter.settle(hold, { tokens, costMicros: 0 });
        }
      },
    };
  }

  private noDeployment(all: readonly Deployment[], full: number): NoDeployment {
    let backAt: number | undefined;
    let rejected = 0;
    for (const d of all) {
      const until = this.cooldowns.until(d);
      if (until === Infinity) rejected++;
      else if (until !== undefined && (backAt === undefined || until < backAt)) backAt = until;
    }
    const none = backAt !== undefined ? 'cooling' : full > 0 ? 'capacity' : rejected > 0 ? 'rejected' : 'cooling';
    return { none, backAt };
  }
}
