import type { LimitSpec } from '../src/model/limits.js';
import type { ProviderCatalog } from '../src/providers/catalog.js';
import type { GatewayConfig } from '../src/config/gateway-config.js';

/*
 * The CLI's warning when a budget is below what one chat request holds before it is sent
 * (issue 35, docs/limits.md "Budgets and the output bound"): a request that names no
 * max_tokens reserves the model's whole output window unless a default max_tokens applies,
 * and a budget below that refuses every such request, however little it would cost.
 */

/** gateway.yaml's `settings.chat.default_max_tokens`, if set. */
function configDefaultMaxTokens(config: GatewayConfig): number | undefined {
  const chat = config.settings.chat as { default_max_tokens?: unknown } | undefined;
  return typeof chat?.default_max_tokens === 'number' ? chat.default_max_tokens : undefined;
}

export interface BudgetContext {
  catalog: ProviderCatalog;
  /** The default max_tokens in force for the project (its own, else gateway.yaml's). */
  defaultMaxTokens: number | undefined;
  /** The key's model allow-list; null: every model. */
  allowedModels: readonly string[] | null;
  /** What to run to set a project default, e.g. `gateway projects update default --org acme --default-max-tokens N`. */
  fix: string;
}

/** The warning for `limits`' budget, or undefined when one request fits in it on every chat model the key may call. */
async function budgetWarning(limits: LimitSpec, ctx: BudgetContext): Promise<string | undefined> {
  if (!limits.budget) return undefined;
  const { budgetShortfall, shortfallText } = await import('../plugins/chat/budget-bound.js');
  const s = budgetShortfall(ctx.catalog, limits.budget.micros, ctx.allowedModels, ctx.defaultMaxTokens);
  return s && shortfallText(limits, s, ctx.defaultMaxTokens, ctx.fix);
}

const arg = (s: string): string => (/^[\w.@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** Prints the budget warning to stderr for a key or project of `project`; nothing when the provider files cannot be read (the change itself is made). */
export async function warnIfBudgetTooSmall(configFile: string, limits: LimitSpec, where: { org: string; project: string; projectDefault: number | null; allowedModels?: readonly string[] | null }): Promise<void> {
  if (!limits.budget) return;
  let loaded: { config: GatewayConfig; catalog: ProviderCatalog };
  try {
    const { loadAll } = await import('./catalog.js');
    loaded = loadAll(configFile);
  } catch {
    return;
  }
  const warning = await budgetWarning(limits, {
    catalog: loaded.catalog, defaultMaxTokens: where.projectDefault ?? configDefaultMaxTokens(loaded.config), allowedModels: where.allowedModels ?? null,
    fix: `gateway projects update ${arg(where.project)} --org ${arg(where.org)} --default-max-tokens N`,
  });
  if (warning) console.error(warning);
}
