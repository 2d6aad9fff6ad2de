import { Counter, type Registry } from 'prom-client';
import type { Micros } from '../lib/money.js';

/** The response cache's metrics (docs/observability.md): results, money saved, and store outages. */
export class CacheMetrics {
  private readonly requests: Counter<'result'>;
  private readonly degraded: Counter;
  private savedMicros: Micros = 0;

  constructor(registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({ name: 'tollgate_cache_requests_total', help: 'Requests the response cache was on for, by result: hit, miss, bypass.', labelNames: ['result'], registers });
    const saved = (): Micros => this.savedMicros;
    new Counter({
      name: 'tollgate_cache_saved_usd_total', help: 'USD cache hits saved: the original costs less what the hits were charged; summed in integer micro-USD.', registers,
      collect() {
        this.reset();
        this.inc(saved() / 1e6);
      },
    });
    this.degraded = new Counter({ name: 'tollgate_cache_degraded_total', help: 'Requests served without the response cache because its store (Redis) failed or did not answer (warning).', registers });
  }

  result(result: string, savedMicros: Micros): void {
    this.requests.inc({ result });
    this.savedMicros += savedMicros;
  }

  storeFailed(): void {
    this.degraded.inc();
  }
}
