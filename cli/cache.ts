import { type Command, InvalidArgumentError, Option } from 'commander';
import { changeKey, changeProject, requireOrg, requireProject } from '../src/tenancy/admin.js';
import type { CacheSetting } from '../src/model/cache.js';
import { microsToUsd } from '../src/lib/money.js';
import type { Store } from '../src/store/types.js';
import { changing } from './audit.js';
import { configOption, withStore } from './common.js';

/*
 * The response cache from the command line (docs/cache.md): `projects cache` and `keys cache`
 * set what PATCH on projects and keys sets; `cache-stats` prints the hit rate and the money
 * saved per project and day, as the console's cache view shows them.
 */

interface CacheFlags {
  mode?: 'off' | 'exact' | 'semantic';
  ttl?: number;
  scope?: 'org' | 'project';
  hitPrice?: number;
  maxTemperature?: number;
  cacheAll?: boolean;
  threshold?: number;
  clear?: boolean;
}

const number = (min: number, max: number, whole = false) => (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n))) throw new InvalidArgumentError(`must be a ${whole ? 'whole ' : ''}number from ${min} to ${max}`);
  return n;
};

function cacheOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--mode <mode>', 'off, exact, or semantic').choices(['off', 'exact', 'semantic']))
    .option('--ttl <seconds>', 'seconds a stored reply is served', number(1, 30 * 24 * 3600, true))
    .addOption(new Option('--scope <scope>', 'org: entries shared by the org\'s projects; project: each project its own').choices(['org', 'project']))
    .option('--hit-price <fraction>', 'fraction of the original cost a hit is charged (0 to 1)', number(0, 1))
    .option('--max-temperature <t>', 'requests above this temperature are not cached', number(0, 2))
    .option('--cache-all', 'also cache n > 1, temperatures above the ceiling, tool results marked uncacheable')
    .option('--threshold <similarity>', 'semantic mode: least cosine similarity that is a hit (0 to 1)', number(0, 1))
    .option('--clear', 'remove the setting (a key then follows its project; a project is off)')
    .addOption(configOption());
}

/** The setting the flags give over the current one (flags left out keep their value); null with --clear. */
function settingFrom(opts: CacheFlags, current: CacheSetting | null | undefined): CacheSetting | null {
  if (opts.clear) return null;
  const given: CacheSetting = {
    ...(opts.mode !== undefined ? { mode: opts.mode } : {}), ...(opts.ttl !== undefined ? { ttl_s: opts.ttl } : {}),
    ...(opts.scope !== undefined ? { scope: opts.scope } : {}), ...(opts.hitPrice !== undefined ? { hit_price: opts.hitPrice } : {}),
    ...(opts.maxTemperature !== undefined ? { max_temperature: opts.maxTemperature } : {}), ...(opts.cacheAll ? { cache_all: true } : {}),
    ...(opts.threshold !== undefined ? { threshold: opts.threshold } : {}),
  };
  if (Object.keys(given).length === 0) throw new Error('give --mode, --ttl, --scope, --hit-price, --max-temperature, --cache-all, --threshold, or --clear');
  return { ...current, ...given };
}

const describe = (s: CacheSetting | null): string => (s ? Object.entries(s).map(([k, v]) => `${k} ${String(v)}`).join(', ') : 'none');

export function addProjectCacheCommand(projects: Command): void {
  cacheOptions(projects.command('cache <name>').description('Set the response cache of a project\'s keys (docs/cache.md); options left out keep their value. Running instances are told at once.')
    .requiredOption('--org <name>', 'organization name'))
    .action(async (name: string, opts: CacheFlags & { org: string; config: string }) => {
      const setting = await withStore(opts.config, async (s, invalidation) => {
        const project = await requireProject(s, await requireOrg(s, opts.org), name);
        const next = settingFrom(opts, project.cache);
        await changing(s, 'projects cache', project.orgId, project.id, () => changeProject(s, invalidation, project, { cache: next }));
        return next;
      });
      console.log(`cache of project "${name}" in "${opts.org}": ${describe(setting)}`);
    });
}

async function keyByPrefix(store: Store, prefix: string) {
  const key = await store.findApiKey(prefix.slice(0, 11));
  if (!key) throw new Error(`no API key with prefix "${prefix.slice(0, 11)}"`);
  return key;
}

export function addKeyCacheCommand(keys: Command): void {
  cacheOptions(keys.command('cache <prefix>').description('Set the response cache of the key starting with PREFIX, over its project\'s (docs/cache.md); options left out keep their value.'))
    .action(async (prefix: string, opts: CacheFlags & { config: string }) => {
      const setting = await withStore(opts.config, async (s, invalidation) => {
        const key = await keyByPrefix(s, prefix);
        const next = settingFrom(opts, key.cache);
        await changing(s, 'keys cache', key.orgId, key.id, () => changeKey(s, invalidation, key, { cache: next }));
        return next;
      });
      console.log(`cache of key ${prefix.slice(0, 11)}…: ${describe(setting)}`);
    });
}

export function addCacheStatsCommand(program: Command): void {
  program.command('cache-stats').description('The response cache per project and UTC day: hits, misses, bypasses, hit rate, money saved (docs/cache.md).')
    .requiredOption('--org <name>', 'organization name')
    .option('--days <n>', 'days back, today included', number(1, 90, true), 30)
    .addOption(configOption())
    .action(async (opts: { org: string; days: number; config: string }) => {
      const rows = await withStore(opts.config, async (s) => {
        const org = await requireOrg(s, opts.org);
        const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
        return s.logQuery.cacheDays(org.id, today - (opts.days - 1) * 86_400_000, today + 86_400_000);
      });
      if (rows.length === 0) console.log(`no cached requests in "${opts.org}" over the last ${opts.days} day(s)`);
      for (const r of rows) {
        const rate = r.hits + r.misses === 0 ? 0 : r.hits / (r.hits + r.misses);
        console.log(`${new Date(r.day).toISOString().slice(0, 10)}  ${r.projectName ?? r.projectId ?? '-'}  hits ${r.hits}  misses ${r.misses}  bypasses ${r.bypasses}  hit rate ${(rate * 100).toFixed(1)}%  saved $${microsToUsd(r.savedMicros)}`);
      }
    });
}
