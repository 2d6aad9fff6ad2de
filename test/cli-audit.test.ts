import type { Command } from 'commander';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_AUDIT, READ_ONLY_COMMANDS, type AuditedCommand } from '../cli/audit.js';
import { buildProgram } from '../cli/index.js';
import { cli, KEY, lastLine, query, useCliServer } from './cli-helpers.js';

/**
 * The audit log from the command line (issue 32): every command that changes something
 * leaves exactly one row with the actor "command line" and the action of the API route
 * that makes the same change; a command in neither COMMAND_AUDIT nor READ_ONLY_COMMANDS
 * fails the walk; `gateway audit` prints the rows.
 */
const env = useCliServer('tollgate-cli-audit-');
let config: string;
let db: string;
beforeAll(() => void ({ config, db } = env));

interface Row { id: string; action: string; actor_type: string; actor_email: string | null; ip: string | null; org_id: string | null; target_id: string | null; before_json: string | null; after_json: string | null }
const auditRows = (): Row[] => query<Row>(db, 'SELECT * FROM audit_log ORDER BY at, id');

/** Every leaf command of the real program, by its path (`keys limits`). */
function leaves(cmd: Command, path: string[] = []): string[] {
  if (cmd.commands.length === 0) return [path.join(' ')];
  return cmd.commands.flatMap((c) => leaves(c, [...path, c.name()]));
}

describe('which commands are audited', () => {
  it('every command is either in COMMAND_AUDIT or in READ_ONLY_COMMANDS, and neither table names a command that is gone', () => {
    const all = leaves(buildProgram());
    const unlisted = all.filter((p) => !(p in COMMAND_AUDIT) && !(p in READ_ONLY_COMMANDS));
    expect(unlisted, 'a command that changes something must record a row (cli/audit.ts)').toEqual([]);
    expect([...Object.keys(COMMAND_AUDIT), ...Object.keys(READ_ONLY_COMMANDS)].filter((p) => !all.includes(p))).toEqual([]);
    expect(Object.keys(COMMAND_AUDIT).filter((p) => p in READ_ONLY_COMMANDS)).toEqual([]);
  });
});

describe('every mutating command leaves exactly one row, actor "command line"', () => {
  let key = '';
  /** A valid run of each command, in an order where each finds what it needs. */
  const RUNS: Array<[AuditedCommand, () => string[]]> = [
    ['orgs create', () => ['orgs', 'create', 'beta', '--credits', '1']],
    ['projects create', () => ['projects', 'create', 'web', '--org', 'acme', '--rpm', '50']],
    ['keys create', () => ['keys', 'create', '--org', 'acme', '--project', 'web', '--name', 'ci']],
    ['keys limits', () => ['keys', 'limits', key, '--rpm', '5']],
    ['projects limits', () => ['projects', 'limits', 'web', '--org', 'acme', '--rpm', '100']],
    ['projects update', () => ['projects', 'update', 'web', '--org', 'acme', '--default-max-tokens', '100']],
    ['projects cache', () => ['projects', 'cache', 'web', '--org', 'acme', '--mode', 'exact', '--ttl', '600']],
    ['keys cache', () => ['keys', 'cache', key, '--mode', 'off']],
    ['credits add', () => ['credits', 'add', '2', '--org', 'acme']],
    ['provider-keys set', () => ['provider-keys', 'set', '--org', 'acme', '--provider', 'openai', '--key', 'sk-own-secret-Zq81mN0pLk2J']],
    ['provider-keys delete', () => ['provider-keys', 'delete', '--org', 'acme', '--provider', 'openai']],
    ['users create', () => ['users', 'create', '--email', 'eve@acme.test', '--org', 'acme', '--role', 'member']],
    ['users password', () => ['users', 'password', 'eve@acme.test']],
    ['users deactivate', () => ['users', 'deactivate', 'eve@acme.test']],
    ['users activate', () => ['users', 'activate', 'eve@acme.test']],
    ['keys rotate', () => ['keys', 'rotate', key, '--grace', '60']],
    ['keys revoke', () => ['keys', 'revoke', key]],
  ];

  it('runs every command of COMMAND_AUDIT', () => {
    expect(RUNS.map(([c]) => c).sort()).toEqual(Object.keys(COMMAND_AUDIT).sort());
  });

  it.each(RUNS)('%s', async (command, args) => {
    const before = auditRows().length;
    // `users password` reads the new password from standard input.
    const r = await cli([...args(), '--config', config], command === 'users password' ? { input: 'a-brand-new-password\n' } : {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    if (command === 'keys create') {
      key = lastLine(r.stdout);
      expect(key).toMatch(KEY);
    }
    const added = auditRows().slice(before);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ action: COMMAND_AUDIT[command].action, actor_type: 'cli', actor_email: 'command line', ip: null });
    expect(added[0]?.target_id).toBeTruthy();
  });

  it('records the changed fields from what to what, and never a secret', () => {
    const rows = auditRows();
    const limits = rows.find((r) => r.action === 'key.update_limits');
    expect(JSON.parse(limits?.before_json ?? 'null')).toEqual({ limits: {} });
    expect(JSON.parse(limits?.after_json ?? 'null')).toEqual({ limits: { rpm: 5 } });
    const credits = rows.find((r) => r.action === 'credits.add');
    expect(JSON.parse(credits?.before_json ?? 'null')).toEqual({ balance_usd: 5 });
    expect(JSON.parse(credits?.after_json ?? 'null')).toEqual({ balance_usd: 7 });
    const set = rows.find((r) => r.action === 'provider_key.set');
    expect(JSON.parse(set?.after_json ?? 'null')).toMatchObject({ key: 'sk-…Lk2J' });
    expect(JSON.stringify(rows)).not.toContain('sk-own-secret');
    expect(JSON.stringify(rows)).not.toContain(key.slice(11));
  });
});

describe('gateway audit', () => {
  it('prints the rows newest first, filtered by org, action and actor, with before → after', async () => {
    const r = await cli(['audit', '--org', 'acme', '--action', 'key.update_limits', '--actor', 'cli', '--config', config]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    // `keys limits` and, after it, `keys cache` (the same action as the API's PATCH on a key).
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^time \(UTC\)\s+who\s+from\s+action\s+target\s+change$/);
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z {2}command line\s+- +key\.update_limits\s+key key_\w+\s+cache: null → \{"mode":"off"\}$/);
    expect(lines[2]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z {2}command line\s+- +key\.update_limits\s+key key_\w+\s+limits: \{\} → \{"rpm":5\}$/);

    const all = await cli(['audit', '--since', '1h', '--config', config]);
    const actions = all.stdout.trimEnd().split('\n').slice(1).map((l) => /\s(\w+\.\w+)\s/.exec(l)?.[1]);
    expect(actions[0]).toBe('key.revoke');
    expect(actions).toContain('org.create');

    const none = await cli(['audit', '--org', 'acme', '--actor', 'nobody@acme.test', '--config', config]);
    expect(none.stdout).toBe('no audit rows match\n');
  });

  it('--json prints one object per line, as the API returns them', async () => {
    const r = await cli(['audit', '--org', 'acme', '--action', 'credits.', '--json', '--config', config]);
    expect(r.code).toBe(0);
    const rows = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows).toEqual([expect.objectContaining({
      action: 'credits.add', actor: { type: 'cli', user_id: null, email: 'command line', token_id: null }, ip: null,
      before: { balance_usd: 5 }, after: { balance_usd: 7 },
    })]);
  });

  it('refuses a bad --since or an unknown org', async () => {
    const bad = await cli(['audit', '--since', 'yesterday', '--config', config]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--since <when>.*must be an ISO 8601 date/);
    const org = await cli(['audit', '--org', 'nobody', '--config', config]);
    expect(org.stderr).toBe('gateway: no organization named "nobody"\n');
  });
});
