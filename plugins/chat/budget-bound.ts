import { displayUsd, GatewayError, type LimitSpec, microsToUsd, type OrgRouteDef, type PluginApi, type ProviderCatalog } from '../../src/sdk.js';
import { outputBoundOf } from './metering.js';

/*
 * A budget below what one chat request holds before it is sent (issue 35, docs/limits.md
 * "Budgets and the output bound"): a request that names no max_tokens reserves the model's
 * whole output window unless a default max_tokens applies, so such a budget refuses every
 * such request however little it would cost. The CLI prints this after setting limits; the
 * console asks `GET /api/v1/orgs/{org}/budget-check` for each key and project with a budget.
 */

/** The dearest chat model whose one-request bound is over the budget, and how many are. */
export interface BudgetShortfall {
  model: string;
  outputTokens: number;
  boundMicros: number;
  modelsOver: number;
  modelsTotal: number;
}

/** The shortfall of `budgetMicros` on the chat models a key may call; undefined when one request fits on every one. */
export function budgetShortfall(
  catalog: ProviderCatalog, budgetMicros: number, allowedModels: readonly string[] | null, defaultMaxTokens: number | undefined,
): BudgetShortfall | undefined {
  const bounds = new Map<string, { tokens: number; micros: number }>();
  for (const r of catalog.allRoutes()) {
    if (r.model.modality !== 'chat') continue;
    if (allowedModels && !allowedModels.includes(r.model.id) && !r.model.aliases.some((a) => allowedModels.includes(a))) continue;
    const bound = outputBoundOf(r.model, defaultMaxTokens);
    const known = bounds.get(r.model.id);
    if (!known || bound.micros > known.micros) bounds.set(r.model.id, bound);
  }
  const over = [...bounds].filter(([, b]) => b.micros > budgetMicros).sort((a, b) => b[1].micros - a[1].micros || a[0].localeCompare(b[0]));
  const [dearest] = over;
  if (!dearest) return undefined;
  return { model: dearest[0], outputTokens: dearest[1].tokens, boundMicros: dearest[1].micros, modelsOver: over.length, modelsTotal: bounds.size };
}

/** The warning's words (the CLI prints it; the console shows its own). */
export function shortfallText(limits: LimitSpec, s: BudgetShortfall, defaultMaxTokens: number | undefined, fix: string): string {
  const budget = limits.budget;
  const per = budget?.period === 'total' ? 'in total' : `per ${budget?.period ?? 'period'}`;
  const source = defaultMaxTokens === undefined ? 'its whole output window' : `the default max_tokens ${defaultMaxTokens}`;
  return `warning: the budget of ${displayUsd(budget?.micros ?? 0)} ${per} is below what one chat request reserves on ${s.modelsOver} of ${s.modelsTotal} models: `
    + `a request without max_tokens reserves ${source} (${s.model}: ${s.outputTokens.toLocaleString('en-US')} output tokens, ${displayUsd(s.boundMicros)}) and is refused (429 budget_exceeded) however little it would cost. `
    + `Give the project a smaller default max_tokens, sent upstream so the bound is honest (${fix}), or have clients send max_tokens (docs/limits.md, "Budgets and the output bound").`;
}

const str = { type: 'string' } as const;

/** `GET /api/v1/orgs/{org}/budget-check?key=…` or `?project=…`: the shortfall of that key's or project's budget, or null. */
export function budgetCheckRoute(api: PluginApi, configDefault: () => number | undefined): OrgRouteDef {
  return {
    method: 'GET', url: '/budget-check', role: 'member', tag: 'limits',
    summary: 'Whether a key\'s or project\'s budget is below what one chat request reserves (docs/limits.md "Budgets and the output bound"): the dearest model over it, or null.',
    schema: {
      querystring: { type: 'object', properties: { key: str, project: str }, additionalProperties: false },
      response: {
        200: {
          type: 'object', additionalProperties: false, required: ['shortfall'],
          properties: {
            shortfall: {
              type: ['object', 'null'], additionalProperties: false, required: ['model', 'output_tokens', 'bound_usd', 'models_over', 'models_total', 'default_max_tokens'],
              properties: {
                model: str, output_tokens: { type: 'integer' }, bound_usd: { type: 'number' }, models_over: { type: 'integer' }, models_total: { type: 'integer' },
                default_max_tokens: { type: ['integer', 'null'] },
              },
            },
          },
        },
      },
    },
    async handler(ctx, request) {
      const q = request.query as { key?: string; project?: string };
      if ((q.key === undefined) === (q.project === undefined)) throw new GatewayError('invalid_request', ['give one of key or project']);
      const key = q.key === undefined ? undefined : await api.store.tenancy.getKey(ctx.org.id, q.key);
      const projectId = key ? key.projectId : q.project;
      const project = projectId === undefined ? undefined : await api.store.tenancy.getProject(ctx.org.id, projectId);
      if (!project || (q.key !== undefined && !key)) throw new GatewayError('not_found', [q.key !== undefined ? `No API key ${q.key}` : `No project ${q.project}`]);
      const budget = (key ?? project).limits.budget;
      const defaultMaxTokens = project.defaultMaxTokens ?? configDefault();
      const s = budget ? budgetShortfall(api.catalog, budget.micros, key?.allowedModels ?? null, defaultMaxTokens) : undefined;
      return {
        shortfall: s ? {
          model: s.model, output_tokens: s.outputTokens, bound_usd: microsToUsd(s.boundMicros), models_over: s.modelsOver, models_total: s.modelsTotal,
          default_max_tokens: defaultMaxTokens ?? null,
        } : null,
      };
    },
  };
}
