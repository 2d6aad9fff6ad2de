import { beforeAll, describe, expect, it } from 'vitest';
import { chat, cli, type CliResult, KEY, lastLine, query, sleep, STACK_FRAME, useCliServer } from './cli-helpers.js';

/**
 * Issue 35, the CLI: the list commands against the real store beside a running server,
 * money written as the console writes it, and the warning for a budget below what one
 * request reserves — with the fix it names (a project default max_tokens) making the key
 * usable end to end.
 */
const env = useCliServer('tollgate-cli-lists-');
let config: string;
let db: string;
beforeAll(() => void ({ config, db } = env));

const run = (...args: string[]): Promise<CliResult> => cli([...args, '--config', config]);
const ok = async (...args: string[]): Promise<string> => {
  const r = await run(...args);
  expect(r.stderr, args.join(' ')).toBe('');
  expect(r.code, args.join(' ')).toBe(0);
  return r.stdout;
};
/** A table's rows as cells (split on two or more spaces), the header first. */
const rows = (table: string): string[][] => table.trimEnd().split('\n').map((l) => l.split(/ {2,}/).map((c) => c.trim()));
const jsonLines = (out: string): Array<Record<string, unknown>> => out.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('the list commands, on the store a server is running on', () => {
  let ciKey: string;
  let oldKey: string;
  beforeAll(async () => {
    await ok('orgs', 'create', 'tiny', '--credits', '0.00005');
    await ok('projects', 'create', 'web', '--org', 'acme', '--rpm', '30');
    await ok('projects', 'update', 'web', '--org', 'acme', '--default-max-tokens', '256');
    ciKey = lastLine(await ok('keys', 'create', '--org', 'acme', '--project', 'web', '--name', 'ci', '--models', 'gpt-4o-mini'));
    oldKey = lastLine(await ok('keys', 'create', '--org', 'acme', '--name', 'old'));
    await ok('keys', 'revoke', oldKey.slice(0, 11));
    await ok('users', 'create', '--email', 'ops@acme.test', '--operator');
    await ok('users', 'create', '--email', 'dev@acme.test', '--org', 'acme', '--role', 'member');
    await ok('users', 'deactivate', 'dev@acme.test');
    expect((await chat(env.server.url, ciKey)).status).toBe(200); // the key is used: its last use is listed
    // The charge is in the database once the server's ledger writer has flushed it.
    const charges = (): number => query<{ n: number }>(db, "SELECT COUNT(*) AS n FROM ledger WHERE kind = 'charge'")[0]?.n ?? 0;
    for (let i = 0; i < 200 && charges() === 0; i++) await sleep(50);
    expect(charges()).toBe(1);
  }, 60_000);

  it('orgs list: every org with its balance as the console writes it, or --json with the API\'s fields', async () => {
    const balance = query<{ balance_micros: number }>(db, "SELECT balance_micros FROM orgs WHERE name = 'acme'")[0]!.balance_micros;
    const table = rows(await ok('orgs', 'list'));
    expect(table[0]).toEqual(['NAME', 'ID', 'BALANCE', 'RETENTION', 'PROJECTS', 'CREATED (UTC)']);
    expect(table.slice(1).map((r) => [r[0], r[2], r[3], r[4]])).toEqual([
      ['acme', `$${Math.floor(balance / 1_000_000)}.${String(balance % 1_000_000).padStart(6, '0').replace(/0{1,4}$/, '')}`, 'standard', '2'],
      ['tiny', '$0.00005', 'standard', '1'], // never $0.00 for an amount that is not zero
    ]);
    expect(table[1]?.[5]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    const json = jsonLines(await ok('orgs', 'list', '--json'));
    expect(json.map((o) => [o.name, o.balance_usd, o.projects])).toEqual([['acme', balance / 1e6, 2], ['tiny', 0.00005, 1]]);
    expect(json[0]).toMatchObject({ id: expect.stringMatching(/^org_/), retention: 'standard', created_at: expect.stringMatching(/Z$/) });
  });

  it('projects list: live keys, limits and the default max_tokens of each project', async () => {
    const table = rows(await ok('projects', 'list', '--org', 'acme'));
    expect(table[0]).toEqual(['NAME', 'ID', 'LIVE KEYS', 'LIMITS', 'DEFAULT MAX_TOKENS', 'CREATED (UTC)']);
    expect(table.slice(1).map((r) => [r[0], r[2], r[3], r[4]])).toEqual([['default', '0', 'none', '-'], ['web', '1', 'rpm 30', '256']]);
    const json = jsonLines(await ok('projects', 'list', '--org', 'acme', '--json'));
    expect(json.map((p) => [p.name, p.live_keys, p.default_max_tokens])).toEqual([['default', 0, null], ['web', 1, 256]]);
  });

  it('keys list: newest first, revoked ones too, never the key itself; --project narrows it', async () => {
    const out = await ok('keys', 'list', '--org', 'acme');
    expect(out).not.toContain(ciKey);
    expect(out).not.toContain(oldKey);
    const table = rows(out);
    expect(table[0]).toEqual(['PREFIX', 'NAME', 'PROJECT', 'STATUS', 'MODELS', 'LIMITS', 'CREATED (UTC)', 'EXPIRES (UTC)', 'LAST USED (UTC)']);
    const listed = table.slice(1).map((r) => [r[0], r[1], r[2], r[3], r[4]]);
    expect(listed).toEqual(expect.arrayContaining([
      [`${oldKey.slice(0, 11)}…`, 'old', 'default', 'revoked', 'all'],
      [`${ciKey.slice(0, 11)}…`, 'ci', 'web', 'active', 'gpt-4o-mini'],
    ]));
    expect(listed.indexOf(listed.find((r) => r[1] === 'old')!)).toBeLessThan(listed.indexOf(listed.find((r) => r[1] === 'ci')!)); // newest first
    const web = jsonLines(await ok('keys', 'list', '--org', 'acme', '--project', 'web', '--json'));
    expect(web).toHaveLength(1);
    expect(web[0]).toMatchObject({ prefix: ciKey.slice(0, 11), name: 'ci', project_name: 'web', status: 'active', allowed_models: ['gpt-4o-mini'], revoked_at: null });
    expect(web[0]?.last_used_at).toEqual(expect.stringMatching(/Z$/));
    expect(Object.keys(web[0]!)).not.toContain('key');
  });

  it('users list: operator, status and organizations with their role', async () => {
    const table = rows(await ok('users', 'list'));
    expect(table[0]).toEqual(['EMAIL', 'ID', 'OPERATOR', 'STATUS', 'ORGANIZATIONS', 'CREATED (UTC)']);
    expect(table.slice(1).map((r) => [r[0], r[2], r[3], r[4]])).toEqual([
      ['dev@acme.test', 'no', 'deactivated', 'acme (member)'],
      ['ops@acme.test', 'yes', 'active', '-'],
    ]);
    const json = jsonLines(await ok('users', 'list', '--json'));
    expect(json[0]).toMatchObject({ email: 'dev@acme.test', operator: false, active: false, orgs: [{ name: 'acme', role: 'member' }] });
  });

  it('an empty list says so and how to fill it', async () => {
    expect(await ok('keys', 'list', '--org', 'tiny')).toBe('no API keys in "tiny"\n');
  });
});

describe('a budget below one request\'s bound', () => {
  const WARNING = 'warning: the budget of $0.0001 per day is below what one chat request reserves on 1 of 1 models: '
    + 'a request without max_tokens reserves its whole output window (gpt-4o-mini: 16,384 output tokens, $0.009831) and is refused (429 budget_exceeded) however little it would cost. '
    + 'Give the project a smaller default max_tokens, sent upstream so the bound is honest (gateway projects update default --org acme --default-max-tokens N), '
    + 'or have clients send max_tokens (docs/limits.md, "Budgets and the output bound").\n';

  it('is warned about by keys create and keys limits; the project default it names makes such a key usable, and is sent upstream', async () => {
    const budget = ['--budget-usd', '0.0001', '--budget-period', 'day'];
    const made = await run('keys', 'create', '--org', 'acme', '--models', 'gpt-4o-mini', ...budget);
    expect(made.code).toBe(0);
    expect(made.stderr).toBe(WARNING);
    const key = lastLine(made.stdout);
    expect(key).toMatch(KEY);
    // The problem the warning names: a request that would cost a few micro-dollars is refused.
    const refused = await chat(env.server.url, key);
    expect(refused.status).toBe(429);
    expect((refused.body.error as { code: string }).code).toBe('budget_exceeded');
    const limits = await run('keys', 'limits', key.slice(0, 11), '--budget-usd', '0.0001');
    expect(limits.stderr).toBe(WARNING);

    // The fix it names: a project whose default max_tokens fits the budget.
    await ok('projects', 'create', 'small', '--org', 'acme');
    await ok('projects', 'update', 'small', '--org', 'acme', '--default-max-tokens', '40');
    const fits = await run('keys', 'create', '--org', 'acme', '--project', 'small', '--models', 'gpt-4o-mini', ...budget);
    expect(fits.stderr).toBe(''); // 40 tokens × $0.60/M = $0.000024: no warning
    const served = await chat(env.server.url, lastLine(fits.stdout));
    expect(served.status, JSON.stringify(served.body)).toBe(200);
    const upstream = env.sim.received().filter((c) => c.route === 'POST /openai/v1/chat/completions').at(-1);
    expect(JSON.parse(upstream?.body ?? '{}')).toMatchObject({ max_tokens: 40 }); // sent, so the bound is honest
    const cost = (served.body.usage as { cost_usd_total: number }).cost_usd_total;
    expect(cost).toBeGreaterThan(0);
    expect(cost).toBeLessThanOrEqual(0.0001);
  });

  it('a project budget is warned about the same way, naming that project', async () => {
    const r = await run('projects', 'limits', 'web', '--org', 'acme', '--budget-usd', '0.0001', '--budget-period', 'day');
    expect(r.code).toBe(0);
    // web's default max_tokens (256) is in force: a model whose 256 tokens cost more than $0.0001 is named.
    expect(r.stderr).toMatch(/^warning: the budget of \$0\.0001 per day is below what one chat request reserves on \d+ of \d+ models: a request without max_tokens reserves the default max_tokens 256 \([\w.-]+: 256 output tokens, \$[\d.]+\)/);
    expect(r.stderr).toContain('(gateway projects update web --org acme --default-max-tokens N)');
    expect(r.stderr).not.toMatch(STACK_FRAME);
  });
});
