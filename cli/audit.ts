import { type Command, InvalidArgumentError } from 'commander';
import { requireOrg } from '../src/tenancy/admin.js';
import { changedFields } from '../src/lib/mask-secrets.js';
import { COMMAND_LINE, type AuditRow } from '../src/model/audit.js';
import { balanceState, keyState, projectState, providerKeyState } from '../src/management/audit-routes.js';
import type { Store } from '../src/store/types.js';
import { configOption, withStore } from './common.js';

/*
 * The audit log from the command line (docs/management.md, "Audit log"): every command
 * that changes something records one row with the actor "command line", with the same
 * action as the API route that makes the same change; `gateway audit` prints the rows.
 */

type Obj = Record<string, unknown>;
type State = (store: Store, orgId: string, id: string) => Promise<Obj | null>;

/** What a mutating command records: its action (the API route's, where there is one), its target type, and how to read the target's state before and after. */
export interface CommandAudit {
  action: string;
  target: string;
  state?: State;
}

/**
 * Every command that changes something, by its path (`keys limits`). test/cli-audit.test.ts
 * walks the program: a command in neither this table nor READ_ONLY_COMMANDS fails it, and
 * each command here is run and must leave exactly one row with this action.
 */
export const COMMAND_AUDIT = {
  'orgs create': { action: 'org.create', target: 'org' },
  'keys create': { action: 'key.create', target: 'key' },
  'keys revoke': { action: 'key.revoke', target: 'key', state: keyState },
  'keys limits': { action: 'key.update_limits', target: 'key', state: keyState },
  'credits add': { action: 'credits.add', target: 'org', state: (s, orgId) => balanceState(s, orgId) },
  'provider-keys set': { action: 'provider_key.set', target: 'provider_key', state: providerKeyState },
  'provider-keys delete': { action: 'provider_key.delete', target: 'provider_key', state: providerKeyState },
  'projects create': { action: 'project.create', target: 'project' },
  'projects limits': { action: 'project.update', target: 'project', state: projectState },
  'projects update': { action: 'project.update', target: 'project', state: projectState },
  'projects cache': { action: 'project.update', target: 'project', state: projectState },
  'keys cache': { action: 'key.update_limits', target: 'key', state: keyState },
  // No API route creates a user (sign-up is by invitation); the CLI's own action.
  'users create': { action: 'user.create', target: 'user' },
  'users password': { action: 'user.set_password', target: 'user' },
  'users deactivate': { action: 'user.set_active', target: 'user' },
  'users activate': { action: 'user.set_active', target: 'user' },
  'keys rotate': { action: 'key.rotate', target: 'key' },
} as const satisfies Record<string, CommandAudit>;

export type AuditedCommand = keyof typeof COMMAND_AUDIT;

/** The commands that change nothing an admin decides (reads, the server, the simulator, the maintenance run), each with why. */
export const READ_ONLY_COMMANDS: Record<string, string> = {
  serve: 'runs the gateway; its management API records its own changes',
  validate: 'reads gateway.yaml and the provider files',
  simulate: 'runs the provider simulator',
  sweep: 'runs the retention tasks the server runs on its own schedule; no admin decision',
  'orgs show': 'read only',
  'orgs list': 'read only',
  'projects list': 'read only',
  'keys list': 'read only',
  'users list': 'read only',
  'keys show': 'read only',
  'cache-stats': 'read only',
  logs: 'read only',
  audit: 'read only',
  reload: 'asks the running server (POST /api/v1/reload), whose management API records the reload in the audit log',
};

/** Appends the row of a command that changed something: actor "command line", no address. */
export async function recordCommand(store: Store, command: AuditedCommand, row: { orgId: string | null; targetId: string | null; before?: Obj | null; after?: Obj | null }): Promise<void> {
  const spec: CommandAudit = COMMAND_AUDIT[command];
  await store.auditLog.append({
    action: spec.action, targetType: spec.target, orgId: row.orgId, targetId: row.targetId, actor: COMMAND_LINE, ip: null, userAgent: null,
    before: row.before ?? null, after: row.after ?? null,
  });
}

/** Runs a change to one target and records the fields it changed, from what to what (the target's state read before and after). */
export async function changing<T>(store: Store, command: AuditedCommand, orgId: string, targetId: string, fn: () => Promise<T>): Promise<T> {
  const spec: CommandAudit = COMMAND_AUDIT[command];
  const state = spec.state ?? (async () => null);
  const before = await state(store, orgId, targetId);
  const result = await fn();
  const after = await state(store, orgId, targetId);
  await recordCommand(store, command, { orgId, targetId, ...changedFields(before ?? {}, after ?? {}) });
  return result;
}

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v) ?? 'null');

/** `limits: {"rpm":5} → {"rpm":10}`, or the fields recorded for a creation: `name=ci`. */
function describeChange(r: Pick<AuditRow, 'before' | 'after'>): string {
  if (!r.before) return r.after ? Object.entries(r.after).map(([k, v]) => `${k}=${show(v)}`).join(' ') : '';
  const keys = new Set([...Object.keys(r.before), ...Object.keys(r.after ?? {})]);
  return [...keys].map((k) => `${k}: ${show(r.before?.[k] ?? null)} → ${show(r.after?.[k] ?? null)}`).join('; ');
}

const DURATION = /^(\d+)([mhd])$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `--since`: an ISO 8601 date or date-time, or a span back from now (`30m`, `24h`, `7d`). */
function since(value: string): number {
  const d = DURATION.exec(value);
  if (d) return Date.now() - Number(d[1]) * UNIT_MS[d[2] as keyof typeof UNIT_MS];
  const at = Date.parse(value);
  if (Number.isNaN(at) || !/^\d{4}-\d{2}-\d{2}/.test(value)) throw new InvalidArgumentError('must be an ISO 8601 date or date-time (2027-01-31, 2027-01-31T12:00:00Z) or a span back from now (30m, 24h, 7d)');
  return at;
}

function limit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError('must be a whole number from 1 to 500');
  return n;
}

const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));

/** `gateway audit`: the audit log's newest rows, of one org or of the whole instance. */
export function addAuditCommand(program: Command): void {
  program.command('audit').description('Print the audit log, newest first: who changed what, when, from where, and each changed field before → after.')
    .option('--org <name>', 'only this organization\'s rows (default: every org, sign-ins included)')
    .option('--action <action>', 'only this action (key.update_limits), or a prefix ending in "." (key.)')
    .option('--actor <who>', 'only this actor: an email, a user id, a token id, or cli for the command line')
    .option('--since <when>', 'only rows from this time on: ISO 8601 (2027-01-31) or a span back from now (30m, 24h, 7d)', since)
    .option('--limit <n>', 'rows to print (1-500)', limit, 50)
    .option('--json', 'one JSON object per line, as GET /api/v1/orgs/{org}/audit returns them')
    .addOption(configOption())
    .action(async (opts: { org?: string; action?: string; actor?: string; since?: number; limit: number; json?: boolean; config: string }) => {
      const rows = await withStore(opts.config, async (s) => {
        const orgId = opts.org === undefined ? undefined : (await requireOrg(s, opts.org)).id;
        return s.auditLog.list({ orgId, action: opts.action, actor: opts.actor, from: opts.since }, opts.limit);
      });
      if (opts.json) {
        const { auditView } = await import('../src/management/views.js');
        for (const r of rows) console.log(JSON.stringify(auditView(r)));
        return;
      }
      if (rows.length === 0) {
        console.log('no audit rows match');
        return;
      }
      console.log(['time (UTC)              ', pad('who', 24), pad('from', 15), pad('action', 22), pad('target', 30), 'change'].join('  '));
      for (const r of rows) {
        const who = r.actor.email ?? r.actor.userId ?? r.actor.type;
        const via = r.actor.type === 'token' && r.actor.tokenId ? ` (${r.actor.tokenId})` : '';
        console.log([
          new Date(r.at).toISOString(), pad(who + via, 24), pad(r.ip ?? '-', 15), pad(r.action, 22), pad(`${r.targetType ?? '-'} ${r.targetId ?? ''}`.trim(), 30), describeChange(r),
        ].join('  ').trimEnd());
      }
    });
}
