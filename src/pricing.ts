import type { ModelDef, PriceKey } from './providers/types.js';

/** Quantities consumed by a request, per price key (tokens, characters, seconds, requests). */
export type Consumption = Partial<Record<PriceKey, number>>;

/**
 * Cost in pico-USD: each quantity times the model's YAML price for it. A quantity
 * with no price is a configuration fault caught at load (required prices), so here
 * it simply costs nothing.
 */
export function costPicos(model: ModelDef, used: Consumption): bigint {
  let total = 0n;
  for (const [key, qty] of Object.entries(used) as Array<[PriceKey, number]>) {
    const price = model.pricePicos[key];
    if (price === undefined || !qty) continue;
    total += price * BigInt(Math.ceil(qty));
  }
  return total;
}
