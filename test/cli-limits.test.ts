import { beforeAll, describe, expect, it } from 'vitest';
import { chat, cli, type CliResult, KEY, lastLine, query, type Server, STACK_FRAME, useCliServer } from './cli-helpers.js';

/** Limits from the CLI (`keys create/limits/show`, `projects create/limits`) beside a running server on the same SQLite file. */
const env = useCliServer('tollgate-cli-limits-');
let config: string;
let db: string;
let server: Server;
beforeAll(() => void ({ config, db, server } = env));

const failed = (r: CliResult, message: string | RegExp): void => {
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(STACK_FRAME);
};
const limitsOf = (table: 'api_keys' | 'projects', where: string, value: string) =>
  query(db, `SELECT limit_rpm, limit_tpm, limit_concurrent, budget_micros, budget_period FROM ${table} WHERE ${where} = ?`, value)[0];

describe('limits from the CLI', { timeout: 60_000 }, () => {
  let key: string;

  it('keys create takes the limit flags, still prints the key alone on the last line, and the running server enforces them', async () => {
    const r = await cli(['keys', 'create', '--org', 'acme', '--rpm', '2', '--tpm', '100000', '--max-concurrent', '3', '--budget-usd', '1.5', '--budget-period', 'month', '--config', config]);
    // grok-4 without max_tokens reserves $3.84: a $1.50 budget blocks it, and the CLI says so (issue 35)
    expect(r.stderr).toMatch(/^warning: the budget of \$1\.50 per month is below what one chat request reserves on 1 of \d+ models: .*\(grok-4: 256,000 output tokens, \$3\.84\)/);
    key = lastLine(r.stdout);
    expect(key).toMatch(KEY);
    expect(r.stdout).toBe(`created key ${key.slice(0, 11)}… in "acme" / default (limits rpm 2, tpm 100000, max concurrent 3, budget $1.50 per month); store it now, it is not shown again:\n${key}\n`);
    expect(limitsOf('api_keys', 'prefix', key.slice(0, 11))).toEqual({ limit_rpm: 2, limit_tpm: 100_000, limit_concurrent: 3, budget_micros: 1_500_000, budget_period: 'month' });
    expect((await chat(server.url, key)).status).toBe(200);
    expect((await chat(server.url, key)).status).toBe(200);
    const third = await chat(server.url, key);
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
  });

  it('keys show prints the limits, the spend this period and when it resets', async () => {
    const r = await cli(['keys', 'show', key.slice(0, 11), '--config', config]);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^key ${key.slice(0, 11)}… \\(key_\\w+\\) in "acme" / default: active$`));
    expect(lines[1]).toBe('  limits: rpm 2, tpm 100000, max concurrent 3, budget $1.50 per month');
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    const m = /^ {2}budget: spent \$([\d.]+) of \$1\.50 this month \(since (\S+)\), \$([\d.]+) left; resets (\S+)$/.exec(lines[2] ?? '');
    expect(m, lines[2]).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0); // the two served requests, as logged
    expect(m![2]).toBe(monthStart);
    expect(Number(m![1]) + Number(m![3])).toBeCloseTo(1.5, 6);
    expect(m![4]).toBe(next);
    expect(lines[3]).toBe('  project default limits (shared by its keys): none');
  });

  it('keys limits changes only the flags given; none removes a limit; the server follows within a second', async () => {
    const r = await cli(['keys', 'limits', key.slice(0, 11), '--rpm', 'none', '--budget-period', 'total', '--config', config]);
    expect(r.stderr).toMatch(/^warning: the budget of \$1\.50 in total is below what one chat request reserves on 1 of \d+ models: /);
    expect(r.stdout).toBe(`limits of key ${key.slice(0, 11)}…: tpm 100000, max concurrent 3, budget $1.50 in total\n`);
    expect(limitsOf('api_keys', 'prefix', key.slice(0, 11))).toEqual({ limit_rpm: null, limit_tpm: 100_000, limit_concurrent: 3, budget_micros: 1_500_000, budget_period: 'total' });
    // --mode sets how the limits are counted across instances; auto is back to the rule (docs/limits.md).
    const leased = await cli(['keys', 'limits', key.slice(0, 11), '--mode', 'lease', '--config', config]);
    expect(leased.stdout).toBe(`limits of key ${key.slice(0, 11)}…: tpm 100000, max concurrent 3, budget $1.50 in total, mode lease\n`);
    const auto = await cli(['keys', 'limits', key.slice(0, 11), '--mode', 'auto', '--config', config]);
    expect(auto.stdout).toBe(`limits of key ${key.slice(0, 11)}…: tpm 100000, max concurrent 3, budget $1.50 in total\n`);
    let status = 429;
    for (let i = 0; i < 40 && status === 429; i++) {
      await new Promise((res) => setTimeout(res, 100));
      status = (await chat(server.url, key)).status;
    }
    expect(status).toBe(200);
  });

  it('projects create and projects limits set a project\'s limits, shared by its keys', async () => {
    const r = await cli(['projects', 'create', 'batch', '--org', 'acme', '--rpm', '1', '--budget-usd', '0.5', '--budget-period', 'day', '--config', config]);
    expect(r.stderr).toMatch(/^warning: the budget of \$0\.50 per day is below what one chat request reserves on \d+ of \d+ models: .*--default-max-tokens N\)/);
    expect(r.stdout).toMatch(/^created project "batch" \(prj_\w+\) in "acme" with limits rpm 1, budget \$0\.50 per day\n$/);
    const a = lastLine((await cli(['keys', 'create', '--org', 'acme', '--project', 'batch', '--config', config])).stdout);
    const b = lastLine((await cli(['keys', 'create', '--org', 'acme', '--project', 'batch', '--config', config])).stdout);
    expect((await chat(server.url, a)).status).toBe(200);
    expect((await chat(server.url, b)).status).toBe(429);
    const changed = await cli(['projects', 'limits', 'batch', '--org', 'acme', '--rpm', '50', '--tpm', '0', '--config', config]);
    expect(changed.stdout).toBe('limits of project "batch" in "acme": rpm 50, tpm 0, budget $0.50 per day\n');
    expect(limitsOf('projects', 'name', 'batch')).toEqual({ limit_rpm: 50, limit_tpm: 0, limit_concurrent: null, budget_micros: 500_000, budget_period: 'day' });
    const shown = await cli(['keys', 'show', b.slice(0, 11), '--config', config]);
    expect(shown.stdout).toContain('  project batch limits (shared by its keys): rpm 50, tpm 0, budget $0.50 per day\n  project budget: spent $');
  });

  it('refuses bad values naming the flag, and changes nothing', async () => {
    const before = query(db, 'SELECT COUNT(*) AS n FROM api_keys');
    // Each is a Node start; they change nothing, so they run side by side.
    const [neg, exp, usd, period, choice, noFlag, noKey, noProject] = await Promise.all([
      ['keys', 'create', '--org', 'acme', '--rpm', '-3'],
      ['keys', 'create', '--org', 'acme', '--tpm', '1e3'],
      ['keys', 'create', '--org', 'acme', '--budget-usd', '0.0000001', '--budget-period', 'day'],
      ['keys', 'create', '--org', 'acme', '--budget-usd', '1'],
      ['keys', 'create', '--org', 'acme', '--budget-period', 'week'],
      ['keys', 'limits', key.slice(0, 11)],
      ['keys', 'limits', 'tg_nothere', '--rpm', '1'],
      ['projects', 'limits', 'nope', '--org', 'acme', '--rpm', '1'],
    ].map((args) => cli([...args, '--config', config], { timeoutMs: 30_000 })));
    failed(neg!, /option '--rpm <n>' argument '-3' is invalid\. must be a whole number of at least 0, or none/);
    failed(exp!, /'--tpm <n>' argument '1e3' is invalid/);
    failed(usd!, /'--budget-usd <usd>' argument '0\.0000001' is invalid\. must be a USD amount/);
    failed(period!, 'gateway: --budget-period: a budget needs its period: --budget-period day, month or total\n');
    failed(choice!, /argument 'week' is invalid\. Allowed choices are day, month, total/);
    expect(query(db, 'SELECT COUNT(*) AS n FROM api_keys')).toEqual(before);
    failed(noFlag!, 'gateway: give at least one of --rpm, --tpm, --max-concurrent, --budget-usd, --budget-period, --mode\n');
    failed(noKey!, 'gateway: no API key with prefix "tg_nothere"\n');
    failed(noProject!, 'gateway: organization "acme" has no project named "nope"\n');
  });
});
