import type { Command } from 'commander';
import { requireOrg, requireProject } from '../src/tenancy/admin.js';
import { displayUsd } from '../src/lib/money.js';
import { configOption, withStore } from './common.js';
import { describeLimits } from './limits.js';
import { table, utc } from './table.js';

/*
 * The list commands (docs/cli.md, "Listing"): `orgs list`, `projects list`, `keys list`,
 * `users list`. A table for people (times in UTC, money as the console writes it), or with
 * --json one JSON object per line, the fields the management API returns for the same thing.
 */

const JSON_HELP = 'one JSON object per line, with the fields the management API returns';

function print<T>(rows: readonly T[], json: boolean | undefined, view: (row: T) => unknown, empty: string, render: (rows: readonly T[]) => string): void {
  if (json) {
    for (const r of rows) console.log(JSON.stringify(view(r)));
    return;
  }
  console.log(rows.length === 0 ? empty : render(rows));
}

export function addOrgsList(orgs: Command): void {
  orgs.command('list').description('List every organization: balance, retention, projects, creation time.')
    .option('--json', JSON_HELP).addOption(configOption())
    .action(async (opts: { json?: boolean; config: string }) => {
      const { orgView } = await import('../src/management/views.js');
      const rows = await withStore(opts.config, async (s) => Promise.all((await s.tenancy.listOrgs(null)).map(async ({ org }) => ({ org, projects: (await s.tenancy.listProjects(org.id)).length }))));
      print(rows, opts.json, (r) => ({ ...orgView(r.org, 'operator'), projects: r.projects }), 'no organizations yet (create one with `gateway orgs create NAME --credits USD`)', (list) => table([
        { header: 'NAME', cell: (r) => r.org.name },
        { header: 'ID', cell: (r) => r.org.id },
        { header: 'BALANCE', cell: (r) => displayUsd(r.org.balanceMicros), right: true },
        { header: 'RETENTION', cell: (r) => r.org.retention },
        { header: 'PROJECTS', cell: (r) => String(r.projects), right: true },
        { header: 'CREATED (UTC)', cell: (r) => utc(r.org.createdAt) },
      ], list));
    });
}

export function addProjectsList(projects: Command): void {
  projects.command('list').description('List the projects of an organization: live keys, limits, default max_tokens.')
    .requiredOption('--org <name>', 'organization name').option('--json', JSON_HELP).addOption(configOption())
    .action(async (opts: { org: string; json?: boolean; config: string }) => {
      const { projectView } = await import('../src/management/views.js');
      const rows = await withStore(opts.config, async (s) => s.tenancy.listProjects((await requireOrg(s, opts.org)).id));
      print(rows, opts.json, projectView, `"${opts.org}" has no projects`, (list) => table([
        { header: 'NAME', cell: (p) => p.name },
        { header: 'ID', cell: (p) => p.id },
        { header: 'LIVE KEYS', cell: (p) => String(p.liveKeys), right: true },
        { header: 'LIMITS', cell: (p) => describeLimits(p.limits) },
        { header: 'DEFAULT MAX_TOKENS', cell: (p) => (p.defaultMaxTokens === null ? '-' : String(p.defaultMaxTokens)), right: true },
        { header: 'CREATED (UTC)', cell: (p) => utc(p.createdAt) },
      ], list));
    });
}

export function addKeysList(keys: Command): void {
  keys.command('list').description('List the API keys of an organization (or one project), newest first, revoked and expired ones too; never the keys themselves.')
    .requiredOption('--org <name>', 'organization name').option('--project <name>', 'only this project\'s keys')
    .option('--json', JSON_HELP).addOption(configOption())
    .action(async (opts: { org: string; project?: string; json?: boolean; config: string }) => {
      const rows = await withStore(opts.config, async (s) => {
        const org = await requireOrg(s, opts.org);
        const project = opts.project === undefined ? undefined : await requireProject(s, org, opts.project);
        return s.tenancy.listKeys(org.id, project?.id);
      });
      const { keyView } = await import('../src/management/views.js');
      const now = Date.now();
      print(rows.map((k) => keyView(k, now)), opts.json, (k) => k, `no API keys in "${opts.org}"${opts.project ? ` / ${opts.project}` : ''}`, (list) => table([
        { header: 'PREFIX', cell: (k) => `${k.prefix}…` },
        { header: 'NAME', cell: (k) => k.name || '-' },
        { header: 'PROJECT', cell: (k) => k.project_name },
        { header: 'STATUS', cell: (k) => k.status },
        { header: 'MODELS', cell: (k) => k.allowed_models?.join(',') ?? 'all' },
        { header: 'LIMITS', cell: (k) => describeLimits(rows.find((r) => r.id === k.id)?.limits ?? {}) },
        { header: 'CREATED (UTC)', cell: (k) => utc(Date.parse(k.created_at)) },
        { header: 'EXPIRES (UTC)', cell: (k) => (k.expires_at ? utc(Date.parse(k.expires_at)) : '-') },
        { header: 'LAST USED (UTC)', cell: (k) => (k.last_used_at ? utc(Date.parse(k.last_used_at)) : '-') },
      ], list));
    });
}

export function addUsersList(users: Command): void {
  users.command('list').description('List every console user: operator or not, active or deactivated, and their organizations with their role.')
    .option('--json', JSON_HELP).addOption(configOption())
    .action(async (opts: { json?: boolean; config: string }) => {
      const rows = await withStore(opts.config, async (s) => Promise.all((await s.accounts.listUsers()).map(async (user) => ({ user, orgs: await s.accounts.membershipsOf(user.id) }))));
      print(rows, opts.json, ({ user, orgs }) => ({
        id: user.id, email: user.email, operator: user.operator, active: user.active, created_at: new Date(user.createdAt).toISOString(),
        orgs: orgs.map((o) => ({ id: o.orgId, name: o.orgName, role: o.role })),
      }), 'no console users yet (create one with `gateway users create --email ADDRESS`)', (list) => table([
        { header: 'EMAIL', cell: (r) => r.user.email },
        { header: 'ID', cell: (r) => r.user.id },
        { header: 'OPERATOR', cell: (r) => (r.user.operator ? 'yes' : 'no') },
        { header: 'STATUS', cell: (r) => (r.user.active ? 'active' : 'deactivated') },
        { header: 'ORGANIZATIONS', cell: (r) => r.orgs.map((o) => `${o.orgName} (${o.role})`).join(', ') || '-' },
        { header: 'CREATED (UTC)', cell: (r) => utc(r.user.createdAt) },
      ], list));
    });
}
