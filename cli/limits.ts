import { type Command, InvalidArgumentError, Option } from 'commander';
import { changeKey, changeProject, requireOrg, requireProject } from '../src/tenancy/admin.js';
import { applyLimitsPatch, LimitsInputError, type LimitField, type LimitsPatch } from '../src/limits/patch.js';
import type { BudgetPeriod, LimitMode, LimitSpec, ScopeOwner } from '../src/model/limits.js';
import { displayUsd, parseUsdToMicros } from '../src/lib/money.js';
import type { Store } from '../src/store/types.js';
import { changing } from './audit.js';
import { warnIfBudgetTooSmall } from './budget-warning.js';
import { configOption, withStore } from './common.js';

/*
 * Limits and budgets from the CLI (docs/limits.md): the flags `keys create`, `projects
 * create`, `keys limits` and `projects limits` share, and `keys show`.
 */

/** `none` on the command line (commander turns a parser's null into ''): the limit is removed. */
type None = 'none';

/** The limit flags as commander parses them: a number (budget: micro-USD), or `none`. */
export interface LimitFlags {
  rpm?: number | None;
  tpm?: number | None;
  maxConcurrent?: number | None;
  budgetUsd?: number | None;
  budgetPeriod?: BudgetPeriod;
  /** `exact`, `lease`, or `auto` (back to the rule: docs/limits.md "Exact and lease mode"). */
  mode?: LimitMode | 'auto';
}

const FLAG: Record<LimitField, string> = {
  rpm: '--rpm', tpm: '--tpm', max_concurrent: '--max-concurrent', budget_usd: '--budget-usd', budget_period: '--budget-period', mode: '--mode',
};

function count(value: string): number | None {
  if (value === 'none') return value;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a whole number of at least 0, or none to remove the limit');
  return n;
}

function usd(value: string): number | None {
  if (value === 'none') return value;
  try {
    return parseUsdToMicros(value);
  } catch {
    throw new InvalidArgumentError('must be a USD amount with at most 6 decimals (e.g. 25 or 0.01), or none to remove the budget');
  }
}

/** Adds the limit flags to a command; `change`: the help says what `none` does. */
export function limitOptions(cmd: Command, change = false): Command {
  const none = change ? '; none removes it' : '';
  return cmd
    .option('--rpm <n>', `requests per minute (sliding 60 s window)${none}`, count)
    .option('--tpm <n>', `tokens per minute, input + output (sliding 60 s window)${none}`, count)
    .option('--max-concurrent <n>', `requests in flight at once${none}`, count)
    .option('--budget-usd <usd>', `USD budget per --budget-period, e.g. 0.01 or 25${change ? '; none removes the budget' : ''}`, usd)
    .addOption(new Option('--budget-period <period>', `when the budget starts again from 0: each UTC day, each UTC month, or never (total)${change ? '' : '; needed with --budget-usd'}`).choices(['day', 'month', 'total']))
    .addOption(new Option('--mode <mode>', 'how the limits are counted across instances: exact (one Redis call per request), lease (each instance leases a share), or auto (lease where the limits are large enough, docs/limits.md)').choices(['exact', 'lease', 'auto']));
}

const value = (v: number | None | undefined): number | null | undefined => (v === 'none' ? null : v);
const patchOf = (f: LimitFlags): LimitsPatch => ({
  rpm: value(f.rpm), tpm: value(f.tpm), maxConcurrent: value(f.maxConcurrent), budgetMicros: value(f.budgetUsd), budgetPeriod: f.budgetPeriod,
  mode: f.mode === 'auto' ? null : f.mode,
});

const given = (f: LimitFlags): boolean => Object.values(patchOf(f)).some((v) => v !== undefined);

/** The limits after the flags (from `current`); a bad combination names its flag. */
export function limitsFromFlags(flags: LimitFlags, current: LimitSpec = {}): LimitSpec {
  try {
    return applyLimitsPatch(current, patchOf(flags));
  } catch (err) {
    if (err instanceof LimitsInputError) throw new Error(`${FLAG[err.field]}: ${err.message.replace(/\b(rpm|tpm|max_concurrent|budget_usd|budget_period|mode)\b/g, (f) => FLAG[f as LimitField])}`);
    throw err;
  }
}

/** `rpm 30, tpm 10000, max concurrent 2, budget $0.01 per day`, or `none`. */
export function describeLimits(l: LimitSpec): string {
  const parts = [
    l.rpm !== undefined ? `rpm ${l.rpm}` : '', l.tpm !== undefined ? `tpm ${l.tpm}` : '',
    l.maxConcurrent !== undefined ? `max concurrent ${l.maxConcurrent}` : '',
    l.budget ? `budget ${displayUsd(l.budget.micros)} ${l.budget.period === 'total' ? 'in total' : `per ${l.budget.period}`}` : '',
    l.mode ? `mode ${l.mode}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'none';
}

/** What a budget has spent this period, by the request log, and when it resets. */
async function budgetLine(store: Store, owner: ScopeOwner, l: LimitSpec, now: number): Promise<string | undefined> {
  if (!l.budget) return undefined;
  const { periodBounds } = await import('../src/limits/index.js');
  const { start, end } = periodBounds(l.budget.period, now);
  const spent = await store.limits.spentSince(owner, start);
  const left = Math.max(0, l.budget.micros - spent);
  const reset = end === null ? 'a total budget never resets' : `resets ${new Date(end).toISOString()}`;
  return `spent ${displayUsd(spent)} of ${displayUsd(l.budget.micros)} this ${l.budget.period === 'total' ? 'budget (total)' : `${l.budget.period} (since ${new Date(start).toISOString()})`}, ${displayUsd(left)} left; ${reset}`;
}

async function keyByPrefix(store: Store, prefix: string) {
  const key = await store.findApiKey(prefix.slice(0, 11));
  if (!key) throw new Error(`no API key with prefix "${prefix.slice(0, 11)}"`);
  return key;
}

export function addKeyLimitCommands(keys: Command): void {
  limitOptions(keys.command('limits <prefix>').description('Change the limits of the key starting with PREFIX (tg_XXXXXXXX); flags left out keep their value. Running instances are told at once.'), true)
    .addOption(configOption())
    .action(async (prefix: string, opts: LimitFlags & { config: string }) => {
      if (!given(opts)) throw new Error('give at least one of --rpm, --tpm, --max-concurrent, --budget-usd, --budget-period, --mode');
      const { limits, where } = await withStore(opts.config, async (s, invalidation) => {
        const key = await keyByPrefix(s, prefix);
        const next = limitsFromFlags(opts, key.limits);
        await changing(s, 'keys limits', key.orgId, key.id, () => changeKey(s, invalidation, key, { limits: next }));
        const project = await s.tenancy.getProject(key.orgId, key.projectId);
        const org = await s.getOrg(key.orgId);
        return { limits: next, where: { org: org?.name ?? key.orgId, project: project?.name ?? key.projectId, projectDefault: project?.defaultMaxTokens ?? null, allowedModels: key.allowedModels } };
      });
      console.log(`limits of key ${prefix.slice(0, 11)}…: ${describeLimits(limits)}`);
      await warnIfBudgetTooSmall(opts.config, limits, where);
    });

  keys.command('show <prefix>').description('Show the key starting with PREFIX: its project, status, limits (its own and its project\'s), and each budget\'s spend this period and when it resets.')
    .addOption(configOption())
    .action(async (prefix: string, opts: { config: string }) => {
      const lines = await withStore(opts.config, async (s) => {
        const key = await keyByPrefix(s, prefix);
        const org = await s.getOrg(key.orgId);
        const project = await s.tenancy.getProject(key.orgId, key.projectId);
        const now = Date.now();
        const status = key.revokedAt !== null ? `revoked ${new Date(key.revokedAt).toISOString()}` : key.expiresAt !== null && key.expiresAt <= now ? 'expired' : 'active';
        const out = [
          `key ${key.prefix}… (${key.id})${key.name ? ` "${key.name}"` : ''} in "${org?.name ?? key.orgId}" / ${project?.name ?? key.projectId}: ${status}`,
          `  limits: ${describeLimits(key.limits)}`,
        ];
        const keyBudget = await budgetLine(s, { kind: 'key', id: key.id }, key.limits, now);
        if (keyBudget) out.push(`  budget: ${keyBudget}`);
        if (project) {
          out.push(`  project ${project.name} limits (shared by its keys): ${describeLimits(project.limits)}`);
          const projectBudget = await budgetLine(s, { kind: 'project', id: project.id }, project.limits, now);
          if (projectBudget) out.push(`  project budget: ${projectBudget}`);
        }
        return out;
      });
      for (const line of lines) console.log(line);
    });
}

export function addProjectLimitCommand(projects: Command): void {
  limitOptions(projects.command('limits <name>').description('Change the limits of a project (shared by all its keys); flags left out keep their value. Running instances are told at once.'), true)
    .requiredOption('--org <name>', 'organization name').addOption(configOption())
    .action(async (name: string, opts: LimitFlags & { org: string; config: string }) => {
      if (!given(opts)) throw new Error('give at least one of --rpm, --tpm, --max-concurrent, --budget-usd, --budget-period, --mode');
      const { limits, projectDefault } = await withStore(opts.config, async (s, invalidation) => {
        const project = await requireProject(s, await requireOrg(s, opts.org), name);
        const next = limitsFromFlags(opts, project.limits);
        await changing(s, 'projects limits', project.orgId, project.id, () => changeProject(s, invalidation, project, { limits: next }));
        return { limits: next, projectDefault: project.defaultMaxTokens };
      });
      console.log(`limits of project "${name}" in "${opts.org}": ${describeLimits(limits)}`);
      await warnIfBudgetTooSmall(opts.config, limits, { org: opts.org, project: name, projectDefault });
    });
}
