import { type Command, InvalidArgumentError, Option } from 'commander';
import { allowedModels, changeProject, createKey, createProject, createUser, MAX_DEFAULT_MAX_TOKENS, requireOrg, requireProject } from '../src/tenancy/admin.js';
import { randomBase62 } from '../src/lib/ids.js';
import { readFileSync } from 'node:fs';
import type { BodyLogging, GuardrailSpec } from '../src/model/guardrails.js';
import { displayUsd } from '../src/lib/money.js';
import { UNSUPPORTED_PARAMS_POLICIES, type UnsupportedParamsPolicy } from '../src/providers/types.js';
import type { OrgRole } from '../src/store/accounts.js';
import { changing, recordCommand } from './audit.js';
import { addKeyCacheCommand, addProjectCacheCommand } from './cache.js';
import { configOption, readStdin, withStore } from './common.js';
import { warnIfBudgetTooSmall } from './budget-warning.js';
import { addUserLifecycleCommands } from './lifecycle.js';
import { addProjectsList, addUsersList } from './lists.js';
import { addKeyLimitCommands, addProjectLimitCommand, describeLimits, limitOptions, limitsFromFlags, type LimitFlags } from './limits.js';

function positiveInt(max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidArgumentError(`must be a whole number from 1 to ${max}`);
    return n;
  };
}

function isoTime(value: string): number {
  const at = Date.parse(value);
  if (Number.isNaN(at) || !/^\d{4}-\d{2}-\d{2}/.test(value)) throw new InvalidArgumentError('must be an ISO 8601 date or date-time, e.g. 2027-01-31 or 2027-01-31T12:00:00Z');
  if (at <= Date.now()) throw new InvalidArgumentError('must be in the future');
  return at;
}

/** `keys create`, with a project, a name, an expiry, a model allow-list and limits; `keys limits`, `keys show`. */
export function addKeyCommands(keys: Command): void {
  limitOptions(keys.command('create').description('Create an API key in a project of an organization; prints the key alone on the last line.')
    .requiredOption('--org <name>', 'organization name')
    .option('--project <name>', 'project (workspace) name', 'default')
    .option('--name <label>', 'a label for people, shown in the console')
    .option('--expires <iso>', 'refuse the key after this date-time (ISO 8601)', isoTime)
    .option('--models <ids>', 'comma-separated model ids the key may call (default: all)'))
    .addOption(configOption())
    .action(async (opts: LimitFlags & { org: string; project: string; name?: string; expires?: number; models?: string; config: string }) => {
      const limits = limitsFromFlags(opts);
      const models = opts.models === undefined ? null : allowedModels((await import('./catalog.js')).loadAll(opts.config).catalog, opts.models.split(',').map((m) => m.trim()).filter(Boolean), '--models');
      const r = await withStore(opts.config, async (s) => {
        const made = await createKey(s, opts.org, { project: opts.project, name: opts.name, expiresAt: opts.expires ?? null, allowedModels: models, limits });
        await recordCommand(s, 'keys create', {
          orgId: made.org.id, targetId: made.record.id,
          after: { name: made.record.name, project: made.project.name, prefix: made.prefix, expires_at: made.record.expiresAt, allowed_models: made.record.allowedModels, limits },
        });
        return made;
      });
      const notes = [
        r.record.expiresAt ? `expires ${new Date(r.record.expiresAt).toISOString()}` : '', models ? `models ${models.join(', ')}` : '',
        describeLimits(limits) !== 'none' ? `limits ${describeLimits(limits)}` : '',
      ].filter(Boolean);
      console.log(`created key ${r.prefix}… in "${r.org.name}" / ${r.project.name}${notes.length ? ` (${notes.join('; ')})` : ''}; store it now, it is not shown again:`);
      console.log(r.key);
      await warnIfBudgetTooSmall(opts.config, limits, { org: r.org.name, project: r.project.name, projectDefault: r.project.defaultMaxTokens, allowedModels: models });
    });
  addKeyLimitCommands(keys);
  addKeyCacheCommand(keys);
}

export function addProjectCommands(program: Command): void {
  const projects = program.command('projects').description('Manage projects (the console\'s workspaces); every organization has a "default" one.');
  limitOptions(projects.command('create <name>').description('Create a project in an organization, optionally with limits shared by all its keys.')
    .requiredOption('--org <name>', 'organization name')).addOption(configOption())
    .action(async (name: string, opts: LimitFlags & { org: string; config: string }) => {
      const limits = limitsFromFlags(opts);
      const { org, project } = await withStore(opts.config, async (s) => {
        const made = await createProject(s, opts.org, name, limits);
        await recordCommand(s, 'projects create', { orgId: made.org.id, targetId: made.project.id, after: { name: made.project.name, limits } });
        return made;
      });
      console.log(`created project "${project.name}" (${project.id}) in "${org.name}"${describeLimits(limits) !== 'none' ? ` with limits ${describeLimits(limits)}` : ''}`);
      await warnIfBudgetTooSmall(opts.config, limits, { org: org.name, project: project.name, projectDefault: project.defaultMaxTokens });
    });
  addProjectLimitCommand(projects);
  addProjectCacheCommand(projects);
  addProjectsList(projects);
  projects.command('update <name>')
    .description('Change a project\'s settings; options left out keep their value. Running instances are told at once.')
    .requiredOption('--org <name>', 'organization name')
    .option('--default-max-tokens <n>', `chat output bound (1 to ${MAX_DEFAULT_MAX_TOKENS}) sent and reserved for when a request names none, over gateway.yaml's settings.chat.default_max_tokens; none clears it`, maxTokensOrNone)
    .addOption(new Option('--unsupported-params <policy>', 'chat policy for request parameters a model cannot take (docs/chat.md, Unsupported parameters), over gateway.yaml\'s settings.chat.unsupported_params and the provider files\'; none clears it')
      .choices([...UNSUPPORTED_PARAMS_POLICIES, 'none']))
    .option('--guardrails <file>', 'a JSON file with the project\'s guardrails, a list run in order (docs/guardrails.md); none removes them all')
    .addOption(new Option('--body-logging <mode>', 'log request and response bodies (docs/guardrails.md)').choices(['off', 'on', 'redacted']))
    .option('--body-retention-days <n>', 'days logged bodies are kept (default 30), with --body-logging', positiveInt(3650))
    .option('--body-max-bytes <n>', 'each logged body is cut here (default 65536), with --body-logging', positiveInt(16 * 1024 * 1024))
    .addOption(configOption())
    .action(async (name: string, opts: {
      org: string; defaultMaxTokens?: number | 'none'; unsupportedParams?: UnsupportedParamsPolicy | 'none'; config: string;
      guardrails?: string; bodyLogging?: BodyLogging['mode']; bodyRetentionDays?: number; bodyMaxBytes?: number;
    }) => {
      if (opts.defaultMaxTokens === undefined && opts.unsupportedParams === undefined && opts.guardrails === undefined && opts.bodyLogging === undefined) {
        throw new Error('give --default-max-tokens (a number, or none to clear it), --unsupported-params (error, drop, translate, or none to clear it), --guardrails (a JSON file, or none) or --body-logging (off, on, redacted)');
      }
      if (opts.bodyLogging === undefined && (opts.bodyRetentionDays !== undefined || opts.bodyMaxBytes !== undefined)) {
        throw new Error('--body-retention-days and --body-max-bytes go with --body-logging');
      }
      const { bodyLoggingOf, parseGuardrails } = await import('../src/guardrails/schema.js');
      const maxTokens = opts.defaultMaxTokens === 'none' ? null : opts.defaultMaxTokens;
      const policy = opts.unsupportedParams === 'none' ? null : opts.unsupportedParams;
      const guardrails: GuardrailSpec[] | undefined = opts.guardrails === undefined ? undefined
        // An operator's file: a webhook to a private address is not refused here; each call still is, unless webhooks.allow_private_urls.
        : opts.guardrails === 'none' ? [] : await parseGuardrails(readFileSync(opts.guardrails, 'utf8'), true);
      const bodyLogging = opts.bodyLogging && bodyLoggingOf(opts.bodyLogging, opts.bodyRetentionDays, opts.bodyMaxBytes);
      await withStore(opts.config, async (s, invalidation) => {
        const project = await requireProject(s, await requireOrg(s, opts.org), name);
        // Evicts cached keys on every instance: the project's keys read the new values.
        await changing(s, 'projects update', project.orgId, project.id, () => changeProject(s, invalidation, project, {
          defaultMaxTokens: maxTokens, unsupportedParams: policy, guardrails, bodyLogging,
        }));
      });
      const changed = [
        maxTokens !== undefined ? `default max_tokens ${maxTokens ?? 'none'}` : '',
        policy !== undefined ? `unsupported_params ${policy ?? 'none'}` : '',
        guardrails !== undefined ? `${guardrails.length} guardrail(s)` : '',
        bodyLogging ? `body logging ${bodyLogging.mode}${bodyLogging.mode === 'off' ? '' : ` (${bodyLogging.retention_days} days, ${bodyLogging.max_bytes} bytes)`}` : '',
      ].filter(Boolean);
      console.log(`project "${name}" in "${opts.org}": ${changed.join(', ')}`);
    });
}

function maxTokensOrNone(value: string): number | 'none' {
  return value === 'none' ? value : positiveInt(MAX_DEFAULT_MAX_TOKENS)(value);
}

export function addUserCommands(program: Command): void {
  const users = program.command('users').description('Manage console users (sign in to the management API and the web console).');
  addUserLifecycleCommands(users);
  addUsersList(users);
  users.command('create').description('Create a console user; with --org and --role, also a member of that organization.')
    .requiredOption('--email <email>', 'their email address, used to sign in')
    .option('--password-stdin', 'read the password from standard input (else a random one is generated and printed once)')
    .option('--operator', 'an operator of this instance: every organization, creates orgs and credits')
    .option('--org <name>', 'organization to make them a member of')
    .addOption(new Option('--role <role>', 'their role in --org').choices(['owner', 'admin', 'member']))
    .addOption(configOption())
    .action(async (opts: { email: string; passwordStdin?: boolean; operator?: boolean; org?: string; role?: OrgRole; config: string }) => {
      const password = opts.passwordStdin ? await readStdin() : randomBase62(20);
      const { user, org } = await withStore(opts.config, async (s) => {
        const made = await createUser(s, { email: opts.email, password, operator: opts.operator, org: opts.org, role: opts.role });
        await recordCommand(s, 'users create', {
          orgId: made.org?.id ?? null, targetId: made.user.id,
          after: { email: made.user.email, operator: made.user.operator, ...(made.org ? { org: made.org.name, role: opts.role } : {}) },
        });
        return made;
      });
      const where = org ? `, ${opts.role} of "${org.name}"` : '';
      console.log(`created user ${user.email} (${user.id})${user.operator ? ', operator' : ''}${where}`);
      if (!opts.passwordStdin) console.log(`password (shown once): ${password}`);
    });
}

const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));

/** `gateway logs`: recent request-log rows for people without a browser. */
export function addLogsCommand(program: Command): void {
  program.command('logs').description('Print the most recent request-log rows of an organization, newest first.')
    .option('--org <name>', 'organization name (default: the only one)')
    .option('--project <name>', 'only this project\'s requests')
    .option('--limit <n>', 'rows to print (1-200)', positiveInt(200), 20)
    .addOption(configOption())
    .action(async (opts: { org?: string; project?: string; limit: number; config: string }) => {
      const rows = await withStore(opts.config, async (s) => {
        const org = opts.org !== undefined ? await requireOrg(s, opts.org) : await onlyOrg(s);
        const project = opts.project === undefined ? undefined : await requireProject(s, org, opts.project);
        return s.logQuery.list({ orgId: org.id, projectId: project?.id }, opts.limit);
      });
      if (rows.length === 0) {
        console.log('no requests logged yet');
        return;
      }
      console.log(['time (UTC)              ', 'request id                  ', 'project     ', 'key        ', 'model                 ', 'status', 'cost       ', 'ms'].join('  '));
      for (const r of rows) {
        console.log([
          new Date(r.createdAt).toISOString(), pad(r.requestId, 28), pad(r.projectName ?? '-', 12), pad(r.keyPrefix ?? '-', 11),
          pad(r.requestedModel ?? '-', 22), pad(String(r.status), 6), pad(displayUsd(r.costMicros), 11), String(r.durationMs),
        ].join('  ') + (r.errorCode ? `  ${r.errorCode}` : ''));
      }
    });
}

async function onlyOrg(s: Parameters<Parameters<typeof withStore>[1]>[0]) {
  const all = await s.tenancy.listOrgs(null);
  if (all.length !== 1 || !all[0]) throw new Error(`pass --org: there are ${all.length} organizations${all.length ? ` (${all.map((o) => o.org.name).join(', ')})` : ''}`);
  return all[0].org;
}
