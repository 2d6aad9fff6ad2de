import type { ModelDef, PriceKey } from './types.js';

/** Quantities consumed by a request, per price key (tokens, characters, seconds, requests). */
export type Consumption = Partial<Record<PriceKey, number>>;

/** What picks a model's prices beyond the base ones: the prompt's size (tiers) and a named variant. */
export interface PriceSelector {
  /** Prompt tokens of the request (or their upper bound, for a reservation): selects a pricing tier. */
  promptTokens?: number;
  /** A named price set from `pricing_variants` (images: `quality/size`). */
  variant?: string;
}

/**
 * The prices that apply to one request, in pico-USD: the model's base prices,
 * replaced key by key by the requested variant, then by the highest pricing tier
 * whose threshold the prompt exceeds (Gemini 2.5 Pro prices a prompt over 200k
 * tokens higher, input and output alike).
 */
export function pricesFor(model: ModelDef, sel: PriceSelector = {}): Partial<Record<PriceKey, bigint>> {
  // Most models have neither variants nor tiers: their base prices, without building anything.
  if (sel.variant === undefined && model.pricingTiers.length === 0) return model.pricePicos;
  let prices = model.pricePicos;
  const variant = sel.variant === undefined ? undefined : model.pricingVariants[sel.variant];
  if (variant) prices = { ...prices, ...variant.pricePicos };
  const tiers = model.pricingTiers.filter((t) => (sel.promptTokens ?? 0) > t.abovePromptTokens);
  const tier = tiers[tiers.length - 1];
  if (tier) prices = { ...prices, ...tier.pricePicos };
  return prices;
}

/**
 * Cost in pico-USD: each quantity times the model's YAML price for it (as selected
 * by `sel`). A quantity with no price is a configuration fault caught at load
 * (required prices), so here it simply costs nothing.
 */
export function costPicos(model: ModelDef, used: Consumption, sel?: PriceSelector): bigint {
  const prices = sel ? pricesFor(model, sel) : model.pricePicos;
  let total = 0n;
  for (const [key, qty] of Object.entries(used) as Array<[PriceKey, number]>) total += picosAt(prices[key], qty);
  return total;
}

/** `qty` (rounded up to a whole unit) at `price` pico-USD each; nothing when either is missing or zero. */
export function picosAt(price: bigint | undefined, qty: number | undefined): bigint {
  return price === undefined || !qty ? 0n : price * BigInt(Math.ceil(qty));
}
