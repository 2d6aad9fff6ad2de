import { createHash } from 'node:crypto';
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadAll } from '../cli/catalog.js';
import { buildProgram } from '../cli/index.js';
import { ConfigError } from '../src/config/yaml-file.js';
import type { Simulator } from '../simulator/server.js';
import { cli, type CliResult, KEY, lastLine, query, ROOT, STACK_FRAME, useCliConfig } from './cli-helpers.js';

const env = useCliConfig('tollgate-cli-admin-');
let sim: Simulator;
let dir: string;
let config: string;
let db: string;
beforeAll(() => void ({ sim, dir, config, db } = env));

const flat = (s: string): string => s.replace(/\s+/g, ' ');

describe('gateway --help', () => {
  /** Every command of the real program, as [argv path, command]. */
  function commands(cmd: Command, path: string[] = []): Array<[string[], Command]> {
    return [[path, cmd], ...cmd.commands.flatMap((c) => commands(c, [...path, c.name()]))];
  }

  it('describes every command and every option, for the program and each command', async () => {
    const all = commands(buildProgram());
    expect(all.map(([p]) => p.join(' '))).toEqual(expect.arrayContaining([
      '', 'serve', 'validate', 'simulate', 'orgs create', 'orgs show', 'keys create', 'keys revoke', 'credits add', 'provider-keys set', 'provider-keys delete',
      'projects create', 'users create', 'logs', 'keys limits', 'keys show', 'projects limits',
    ]));
    // Every command's help as commander renders it for `--help`; the real binary is checked below on a sample.
    for (const [path, cmd] of all) {
      const out = flat(cmd.helpInformation());
      expect(out).toContain(`Usage: gateway ${path.join(' ')}`.trimEnd());
      expect(cmd.description().length, `description of "${path.join(' ')}"`).toBeGreaterThan(10);
      expect(out).toContain(flat(cmd.description()));
      for (const sub of cmd.commands) {
        expect(sub.description().length, `description of "${[...path, sub.name()].join(' ')}"`).toBeGreaterThan(10);
        expect(out).toContain(`${sub.name()} `);
        expect(out).toContain(flat(sub.description()));
      }
      for (const opt of cmd.options) {
        expect(opt.description.length, `description of ${opt.flags} in "${path.join(' ')}"`).toBeGreaterThan(5);
        expect(out).toContain(`${opt.flags} ${flat(opt.description)}`);
      }
    }
  });

  it('prints that same help from the real binary, exit code 0 and nothing on stderr', async () => {
    const program = buildProgram();
    const byPath = new Map(commands(program).map(([p, c]) => [p.join(' '), c]));
    // The program, a command with subcommands and a leaf with options: one of each kind, sequentially (each is a Node start).
    for (const path of [[], ['keys'], ['keys', 'create']]) {
      const r = await cli([...path, '--help'], { timeoutMs: 30_000 });
      expect(r.code, path.join(' ')).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe(byPath.get(path.join(' '))!.helpInformation());
    }
  }, 120_000);

  it('"projects update" says what each of its settings takes', () => {
    const help = new Map(commands(buildProgram()).map(([p, c]) => [p.join(' '), c])).get('projects update')!.helpInformation();
    expect(help).toMatch(/Change a project's settings/);
    expect(help).toMatch(/--default-max-tokens <n>\s+chat output bound \(1 to 1000000\)/);
    expect(help).toMatch(/--unsupported-params <policy>\s+chat policy for request parameters a model/);
    expect(help).toMatch(/choices:\s+"error", "drop", "translate", "none"/);
  });

  it('exits non-zero on an unknown command, subcommand or option, naming it', async () => {
    const [top, sub, opt] = await Promise.all([cli(['bogus']), cli(['orgs', 'bogus']), cli(['validate', '--nope'])]);
    expect(top.code).toBe(1);
    expect(top.stderr).toContain("error: unknown command 'bogus'");
    expect(sub.code).toBe(1);
    expect(sub.stderr).toContain("error: unknown command 'bogus'");
    expect(opt.code).toBe(1);
    expect(opt.stderr).toContain("error: unknown option '--nope'");
  });
});

describe('gateway validate', () => {
  it("accepts the repo's own gateway.yaml (the default --config)", async () => {
    // Provider files that say `enabled: false` (Azure: the operator's own resource) load only when gateway.yaml names them.
    const providers = readdirSync(join(ROOT, 'providers')).filter((f) => /\.ya?ml$/.test(f))
      .filter((f) => !/^enabled: false$/m.test(readFileSync(join(ROOT, 'providers', f), 'utf8'))).length;
    for (const args of [['validate'], ['validate', '--config', 'gateway.yaml']]) {
      const r = await cli(args);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(new RegExp(`^gateway\\.yaml: valid \\(${providers} providers, [1-9]\\d* model routes\\)\\n  on the built-in simulator \\(http://127\\.0\\.0\\.1:8790\\): [a-z, -]+\\n$`));
    }
  });

  it('says which providers go to real hosts, and warns of one with no api_key (it is not the embedded defaults)', async () => {
    const file = join(dir, 'real-hosts.yaml');
    writeFileSync(file, `extends: ${join(ROOT, 'gateway.yaml')}\nproviders:\n  anthropic: { base_url: "https://api.anthropic.com/v1", api_key: "" }\n  deepgram: { base_url: "https://api.deepgram.com/v1", api_key: "dg-key" }\n  bedrock: { base_url: "https://bedrock-runtime.eu-west-1.amazonaws.com" }\n`);
    const r = await cli(['validate', '--config', file]);
    expect(r.code).toBe(0);
    // bedrock signs its requests (aws-sigv4, credentials from the AWS chain): no api_key to warn of.
    expect(r.stdout).toContain('  on real hosts: anthropic (https://api.anthropic.com/v1), bedrock (https://bedrock-runtime.eu-west-1.amazonaws.com), deepgram (https://api.deepgram.com/v1)\n');
    expect(r.stdout).not.toMatch(/simulator \([^)]*\): .*anthropic/);
    expect(r.stderr).toBe('warning: provider anthropic sends its requests to https://api.anthropic.com/v1 with no api_key: they will be refused there; set providers.anthropic.api_key (e.g. "${env:ANTHROPIC_API_KEY}") or point its base_url at the simulator\n');
  });

  /** Writes a config file, validates it and expects exactly one located problem and exit code 2. */
  async function refused(name: string, text: string, problem: (file: string) => string, args = ['validate']): Promise<void> {
    const file = join(dir, name);
    writeFileSync(file, text);
    const env = { ...process.env };
    delete env.NOPE_NOT_SET;
    const r = await cli([...args, '--config', file], { env });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`configuration refused:\n${problem(file)}\n`);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  }

  /**
   * Writes a config file and loads it as `validate` does (loadAll), in this process: exactly
   * this one located problem. How the binary prints such a refusal (after "configuration
   * refused:", nothing on stdout, exit code 2, no stack) is the price case's below and
   * cli-errors.test.ts's; these cases are about the message, so they spare a Node start each.
   */
  function refusedInProcess(name: string, text: string, problem: (file: string) => string): void {
    const file = join(dir, name);
    writeFileSync(file, text);
    let caught: unknown;
    try {
      loadAll(file);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).message).toBe(problem(file));
  }

  it('refuses a wrong-typed field with file:line, the JSON path and the expected type', () => {
    refusedInProcess('type.yaml', 'log: { level: silent }\nserver:\n  port: "abc"\n', (f) => `${f}:3: /server/port: must be integer`);
  });

  it('refuses an unknown key, at its line', () => {
    refusedInProcess('unknown.yaml', 'server:\n  port: 8080\n  colour: blue\n', (f) => `${f}:3: /server/colour: is not a known setting`);
  });

  it('refuses a missing ${env:…} variable, at its line', () => {
    expect(process.env.NOPE_NOT_SET).toBeUndefined();
    const text = `providers_dir: ${join(ROOT, 'providers')}\nproviders:\n  openai:\n    base_url: "${sim.url}/openai/v1"\n    api_key: \${env:NOPE_NOT_SET}\n`;
    refusedInProcess('env.yaml', text, (f) => `${f}:5: /providers/openai/api_key: environment variable NOPE_NOT_SET is not set`);
  });

  it('refuses a provider file with a bad price string, naming that file, line and path', async () => {
    const providers = join(dir, 'bad-providers');
    cpSync(join(ROOT, 'providers'), providers, { recursive: true });
    const file = join(providers, 'openai.yaml');
    const original = readFileSync(file, 'utf8');
    const index = (parse(original) as { models: Array<{ id: string }> }).models.findIndex((m) => m.id === 'gpt-4o-mini');
    expect(index).toBeGreaterThanOrEqual(0);
    const broken = original.replace('prompt: "0.00000015"', 'prompt: "15 cents"');
    expect(broken).not.toBe(original);
    writeFileSync(file, broken);
    const line = broken.split('\n').findIndex((l) => l.includes('"15 cents"')) + 1;
    const yaml = `database: { url: "sqlite:${join(dir, 'unused.db')}" }\nproviders_dir: ${providers}\nlog: { level: silent }\n`;
    const expected = `${file}:${line}: /models/${index}/pricing/prompt: must be a decimal USD string such as "0.0000025" (at most 12 decimals)`;
    await refused('price.yaml', yaml, () => expected);
    // serve refuses the same file the same way, before listening.
    await refused('price.yaml', yaml, () => expected, ['serve', '--port', '0']);
  });
});

describe('admin commands', () => {
  let acmeId = '';
  let key = '';

  it('orgs create prints the new org; a duplicate, a bad amount or a bad retention is refused', async () => {
    const r = await cli(['orgs', 'create', 'acme', '--credits', '2.5', '--config', config]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const m = /^created organization "acme" \((org_[A-Za-z0-9]{24})\) with \$2\.50, retention standard\n$/.exec(r.stdout);
    expect(m).not.toBeNull();
    acmeId = m![1]!;
    const none = await cli(['orgs', 'create', 'private', '--credits', '0', '--retention', 'none', '--config', config]);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^created organization "private" \(org_\w+\) with \$0\.00, retention none\n$/);

    const dup = await cli(['orgs', 'create', 'acme', '--credits', '1', '--config', config]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe('gateway: an organization named "acme" already exists\n');
    const bad = await cli(['orgs', 'create', 'bad', '--credits', 'abc', '--config', config]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.split('\n')[0]).toBe("error: option '--credits <usd>' argument 'abc' is invalid. must be a USD amount with at most 6 decimals, e.g. 25 or 10.50");
    const ret = await cli(['orgs', 'create', 'bad', '--credits', '1', '--retention', 'x', '--config', config]);
    expect(ret.code).toBe(1);
    expect(ret.stderr).toContain("error: option '--retention <mode>' argument 'x' is invalid. Allowed choices are standard, none.");
    const missing = await cli(['orgs', 'create', 'bad', '--config', config]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("error: required option '--credits <usd>' not specified");
    for (const r2 of [dup, bad, ret, missing]) expect(r2.stderr).not.toMatch(STACK_FRAME);

    expect(query<{ name: string; balance_micros: number; retention: string }>(db, 'SELECT name, balance_micros, retention FROM orgs ORDER BY name'))
      .toEqual([{ name: 'acme', balance_micros: 2_500_000, retention: 'standard' }, { name: 'private', balance_micros: 0, retention: 'none' }]);
  });

  it('orgs show prints the balance; an unknown org is refused', async () => {
    const r = await cli(['orgs', 'show', 'acme', '--config', config]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`acme (${acmeId}): balance $2.50, retention standard\n`);
    const unknown = await cli(['orgs', 'show', 'nobody', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('gateway: no organization named "nobody"\n');
  });

  it('credits add prints the new balance, which orgs show and the database agree with', async () => {
    const r = await cli(['credits', 'add', '1.25', '--org', 'acme', '--config', config]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('added $1.25 to "acme"; balance is now $3.75\n');
    expect((await cli(['orgs', 'show', 'acme', '--config', config])).stdout).toBe(`acme (${acmeId}): balance $3.75, retention standard\n`);
    expect(query(db, 'SELECT balance_micros FROM orgs WHERE id = ?', acmeId)).toEqual([{ balance_micros: 3_750_000 }]);
    const bad = await cli(['credits', 'add', 'lots', '--org', 'acme', '--config', config]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.split('\n')[0]).toBe("error: command-argument value 'lots' is invalid for argument 'usd'. must be a USD amount with at most 6 decimals, e.g. 25 or 10.50");
    const unknown = await cli(['credits', 'add', '1', '--org', 'nobody', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('gateway: no organization named "nobody"\n');
    expect(query(db, 'SELECT balance_micros FROM orgs WHERE id = ?', acmeId)).toEqual([{ balance_micros: 3_750_000 }]);
  });

  it('keys create prints the key alone on the last line and stores only its prefix and hash', async () => {
    const r = await cli(['keys', 'create', '--org', 'acme', '--config', config]);
    expect(r.code).toBe(0);
    key = lastLine(r.stdout);
    expect(key).toMatch(KEY);
    expect(r.stdout).toBe(`created key ${key.slice(0, 11)}… in "acme" / default; store it now, it is not shown again:\n${key}\n`);
    const rows = query<Record<string, unknown>>(db, 'SELECT org_id, prefix, hash, revoked_at FROM api_keys');
    expect(rows).toEqual([{ org_id: acmeId, prefix: key.slice(0, 11), hash: createHash('sha256').update(key).digest('hex'), revoked_at: null }]);
    const unknown = await cli(['keys', 'create', '--org', 'nobody', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('gateway: no organization named "nobody"\n');
  });

  it('keys revoke revokes by prefix; an unknown or already revoked prefix is refused', async () => {
    const prefix = key.slice(0, 11);
    const r = await cli(['keys', 'revoke', prefix, '--config', config]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`revoked key ${prefix}…\n`);
    const [row] = query<{ revoked_at: number | null }>(db, 'SELECT revoked_at FROM api_keys WHERE prefix = ?', prefix);
    expect(row?.revoked_at).toBeGreaterThan(0);
    const again = await cli(['keys', 'revoke', prefix, '--config', config]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`gateway: no live API key with prefix "${prefix}"\n`);
    const unknown = await cli(['keys', 'revoke', 'tg_zzzzzzzz', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('gateway: no live API key with prefix "tg_zzzzzzzz"\n');
  });

  it('provider-keys set stores the key for a known provider; an unknown provider is refused', async () => {
    const r = await cli(['provider-keys', 'set', '--org', 'acme', '--provider', 'openai', '--key', 'sk-own', '--config', config]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('set "acme"\'s own key for provider openai (stored encrypted)\n');
    const [stored] = query<{ org_id: string; provider_id: string; key: string; key_version: number }>(db, 'SELECT org_id, provider_id, key, key_version FROM provider_keys');
    expect(stored).toMatchObject({ org_id: acmeId, provider_id: 'openai', key_version: 1 });
    expect(stored?.key).not.toContain('sk-own');
    const unknown = await cli(['provider-keys', 'set', '--org', 'acme', '--provider', 'nope', '--key', 'k', '--config', config]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^gateway: unknown provider "nope" \(known: [a-z, -]*\bopenai\b[a-z, -]*\)\n$/);
    const noOrg = await cli(['provider-keys', 'set', '--org', 'nobody', '--provider', 'openai', '--key', 'k', '--config', config]);
    expect(noOrg.code).toBe(1);
    expect(noOrg.stderr).toBe('gateway: no organization named "nobody"\n');
    expect(query(db, 'SELECT COUNT(*) AS n FROM provider_keys')).toEqual([{ n: 1 }]);
  });

  it('provider-keys delete removes the org\'s key; a provider it has no key for, or an unknown org, is refused by name', async () => {
    const del = (org: string, provider: string): Promise<CliResult> => cli(['provider-keys', 'delete', '--org', org, '--provider', provider, '--config', config]);
    expect((await cli(['provider-keys', 'set', '--org', 'acme', '--provider', 'groq', '--key', 'gsk-own', '--config', config])).code).toBe(0);
    const missing = await del('acme', 'mistral');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('gateway: "acme" has no own key for provider "mistral" (it has keys for: groq, openai)\n');
    const r = await del('acme', 'groq');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('deleted "acme"\'s own key for provider groq\n');
    expect(query(db, 'SELECT provider_id FROM provider_keys')).toEqual([{ provider_id: 'openai' }]);
    expect((await del('acme', 'groq')).stderr).toBe('gateway: "acme" has no own key for provider "groq" (it has keys for: openai)\n');
    const noOrg = await del('nobody', 'openai');
    expect(noOrg.code).toBe(1);
    expect(noOrg.stderr).toBe('gateway: no organization named "nobody"\n');
    expect((await del('acme', 'openai')).code).toBe(0);
    expect((await del('acme', 'openai')).stderr).toBe('gateway: "acme" has no own key for provider "openai" (it has none)\n');
    expect(query(db, 'SELECT COUNT(*) AS n FROM provider_keys')).toEqual([{ n: 0 }]);
  });

  it('sweep runs the maintenance tasks once and reports what they did', async () => {
    const r = await cli(['sweep', '--config', config]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual([
      'audit-retention: deleted 0 audit row(s) older than 365 days',
      'chat-responses-sweep: deleted 0 expired stored response(s)',
      'console-sessions-purge: deleted 0 expired session(s), 0 expired SSO flow(s)',
      'images-retention-sweep: deleted 0 expired image(s)',
      'music-retention-sweep: deleted 0 expired track(s)',
      'request-bodies-retention: deleted 0 logged request bodies past their retention',
      'webhook-delivery: nothing to deliver',
    ]);
  });
});
