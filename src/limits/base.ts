import type { Hold, LimitScope, Metered, ScopeUsage } from '../model/limits.js';

/** What every limiter derives the same way from its own `settle` and `usageOf`. */
export abstract class LimiterBase {
  abstract settle(hold: Hold, metered: Metered): Promise<void>;
  abstract usageOf(scopes: readonly LimitScope[]): Promise<ScopeUsage[]>;

  /** Gives back what the hold took, charging nothing. */
  release(hold: Hold): Promise<void> {
    return this.settle(hold, { tokens: 0, costMicros: 0 });
  }

  async usage(scope: LimitScope): Promise<ScopeUsage> {
    return (await this.usageOf([scope]))[0]!;
  }
}
