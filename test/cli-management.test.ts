import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, chat, cli, type CliResult, KEY, lastLine, query, ROOT, serve, type Server, STACK_FRAME, stopAndCheckLedgers, useCliServer, writeConfig } from './cli-helpers.js';
import { tempDir } from './harness.js';
import { Api, signIn } from './management-helpers.js';

/** The CLI's management commands (users, projects, keys in projects, logs) beside a running server on the same SQLite file. */
const env = useCliServer('tollgate-cli-mgmt-');
let config: string;
let db: string;
let server: Server;
beforeAll(() => void ({ config, db, server } = env));

/** Runs the CLI with `input` on its stdin (a password piped in). */
function cliWithStdin(args: string[], input: string): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, input, encoding: 'utf8', timeout: 15_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

const failed = (r: CliResult, message: string | RegExp): void => {
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(STACK_FRAME);
};

describe('gateway projects create', () => {
  it('creates a project in an org; a duplicate or an unknown org is refused', async () => {
    const r = await cli(['projects', 'create', 'web', '--org', 'acme', '--config', config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^created project "web" \(prj_[A-Za-z0-9]{24}\) in "acme"\n$/);
    failed(await cli(['projects', 'create', 'web', '--org', 'acme', '--config', config]), 'gateway: a project named "web" already exists in this organization\n');
    failed(await cli(['projects', 'create', 'web', '--org', 'nobody', '--config', config]), 'gateway: no organization named "nobody"\n');
    expect(query(db, 'SELECT p.name FROM projects p JOIN orgs o ON o.id = p.org_id WHERE o.name = ? ORDER BY p.name', 'acme')).toEqual([{ name: 'default' }, { name: 'web' }]);
  });
});

describe('gateway keys create, in a project', () => {
  it('creates a named key with an expiry and a model allow-list; the key works at once on the running server', async () => {
    const r = await cli(['keys', 'create', '--org', 'acme', '--project', 'web', '--name', 'ci', '--expires', '2099-01-31T00:00:00Z', '--models', 'gpt-4o-mini, gpt-4o', '--config', config]);
    expect(r.stderr).toBe('');
    const key = lastLine(r.stdout);
    expect(key).toMatch(KEY);
    expect(r.stdout).toBe(`created key ${key.slice(0, 11)}… in "acme" / web (expires 2099-01-31T00:00:00.000Z; models gpt-4o-mini, gpt-4o); store it now, it is not shown again:\n${key}\n`);
    expect(query(db, 'SELECT k.name, k.expires_at, k.allowed_models, p.name AS project FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.prefix = ?', key.slice(0, 11)))
      .toEqual([{ name: 'ci', expires_at: Date.UTC(2099, 0, 31), allowed_models: '["gpt-4o-mini","gpt-4o"]', project: 'web' }]);
    expect((await chat(server.url, key)).status).toBe(200);
  });

  it('refuses an unknown model, a past expiry and an unknown project, creating nothing', async () => {
    const before = query(db, 'SELECT COUNT(*) AS n FROM api_keys');
    failed(await cli(['keys', 'create', '--org', 'acme', '--models', 'gpt-4o-mini,nope-9', '--config', config]), /No provider serves a model "nope-9"/);
    failed(await cli(['keys', 'create', '--org', 'acme', '--expires', '2001-01-01', '--config', config]), /option '--expires <iso>' argument '2001-01-01' is invalid\. must be in the future/);
    failed(await cli(['keys', 'create', '--org', 'acme', '--expires', 'soon', '--config', config]), /must be an ISO 8601 date/);
    failed(await cli(['keys', 'create', '--org', 'acme', '--project', 'mobile', '--config', config]), 'gateway: organization "acme" has no project named "mobile"\n');
    expect(query(db, 'SELECT COUNT(*) AS n FROM api_keys')).toEqual(before);
  });
});

describe('gateway users create', () => {
  it('creates a user with the password from stdin, a member of an org, who can sign in to the running server at once', async () => {
    const r = cliWithStdin(['users', 'create', '--email', 'Dana@Acme.test', '--password-stdin', '--org', 'acme', '--role', 'admin', '--config', config], 'a long stdin password\n');
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^created user dana@acme\.test \(usr_[A-Za-z0-9]{24}\), admin of "acme"\n$/);
    const [row] = query<{ password_hash: string; operator: number }>(db, 'SELECT password_hash, operator FROM users WHERE email = ?', 'dana@acme.test');
    expect(row?.operator).toBe(0);
    expect(row?.password_hash).toMatch(/^scrypt\$/);
    expect(row?.password_hash).not.toContain('stdin');
    const api = await signIn(server.url, 'dana@acme.test', 'a long stdin password');
    expect((await api.get('/api/v1/me')).body).toMatchObject({ email: 'dana@acme.test', operator: false, orgs: [{ name: 'acme', role: 'admin' }] });
  });

  it('generates and prints a password when none is piped in; --operator makes an operator', async () => {
    const r = await cli(['users', 'create', '--email', 'ops@acme.test', '--operator', '--config', config]);
    expect(r.code).toBe(0);
    const m = /^created user ops@acme\.test \(usr_\w+\), operator\npassword \(shown once\): ([A-Za-z0-9]{20})\n$/.exec(r.stdout);
    expect(m).not.toBeNull();
    const api = await signIn(server.url, 'ops@acme.test', m![1]);
    expect((await api.get('/api/v1/me')).body).toMatchObject({ operator: true });
  });

  it('refuses a short password, a taken email, a bad email and --org without --role', async () => {
    failed(cliWithStdin(['users', 'create', '--email', 'eve@acme.test', '--password-stdin', '--config', config], 'short'), 'gateway: a password needs at least 10 characters\n');
    failed(cliWithStdin(['users', 'create', '--email', 'dana@acme.test', '--password-stdin', '--config', config], 'another long one'), 'gateway: a user with email dana@acme.test already exists\n');
    failed(await cli(['users', 'create', '--email', 'not-an-email', '--config', config]), 'gateway: "not-an-email" is not an email address\n');
    failed(await cli(['users', 'create', '--email', 'eve@acme.test', '--org', 'acme', '--config', config]), 'gateway: --org and --role go together\n');
    expect(query(db, 'SELECT COUNT(*) AS n FROM users WHERE email = ?', 'eve@acme.test')).toEqual([{ n: 0 }]);
  });
});

describe('gateway logs', () => {
  it("prints an org's recent requests, newest first, optionally of one project", async () => {
    const key = lastLine((await cli(['keys', 'create', '--org', 'acme', '--project', 'web', '--config', config])).stdout);
    const ids: string[] = [];
    for (const content of ['one', 'two', 'three']) ids.push((await chat(server.url, key, content)).requestId ?? '');
    const printed = async (args: string[]): Promise<string> => {
      for (let i = 0; i < 50; i++) { // the server writes its log in batches (bounded wait)
        const r = await cli(['logs', ...args, '--config', config]);
        expect(r.stderr).toBe('');
        if (ids.every((id) => r.stdout.includes(id))) return r.stdout;
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error('the requests never showed in gateway logs');
    };
    const out = await printed(['--org', 'acme', '--project', 'web', '--limit', '3']);
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^time \(UTC\)\s+request id\s+project\s+key\s+model\s+status\s+cost\s+ms$/);
    expect(lines.slice(1).map((l) => /(req_\w+)/.exec(l)?.[1])).toEqual([...ids].reverse());
    expect(lines[1]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z  ${ids[2]}\\s+web\\s+${key.slice(0, 11)}\\s+gpt-4o-mini\\s+200\\s+\\$0\\.\\d{2,6}\\s+\\d+$`));
    expect(await printed(['--org', 'acme'])).toContain(ids[0]);
  });

  it('needs --org when there are several orgs, and refuses a bad limit', async () => {
    expect((await cli(['orgs', 'create', 'beta', '--credits', '0', '--config', config])).code).toBe(0);
    failed(await cli(['logs', '--config', config]), 'gateway: pass --org: there are 2 organizations (acme, beta)\n');
    expect((await cli(['logs', '--org', 'beta', '--config', config])).stdout).toBe('no requests logged yet\n');
    failed(await cli(['logs', '--org', 'acme', '--limit', '500', '--config', config]), /must be a whole number from 1 to 200/);
  });
});

describe('first start of the embedded default', () => {
  it('prints an operator login once, next to the demo key, that signs in', async () => {
    const d = tempDir('tollgate-cli-boot-');
    try {
      const file = writeConfig(d, env.sim.url, { bootstrap: { org: 'demo', credits_usd: '10.00' } });
      const first = await serve(file);
      const login = /^Console login \(an operator; shown once\): (admin@localhost) \/ ([A-Za-z0-9]{20})$/m.exec(first.stdout());
      expect(login).not.toBeNull();
      expect(first.stdout()).toMatch(/Console login.*\n.*\n.*\ntg_[A-Za-z0-9]{40}\n/);
      expect(first.stdout()).toContain(`Web console: ${first.url}/console\n`);
      const api = await signIn(first.url, login![1]!, login![2]);
      expect((await api.get('/api/v1/me')).body).toMatchObject({ email: 'admin@localhost', operator: true });
      expect((await api.get('/api/v1/orgs')).body).toMatchObject({ data: [{ name: 'demo', balance_usd: 10, role: 'operator' }] });
      first.child.kill('SIGTERM');
      await first.exited;
      const second = await serve(file);
      expect(second.stdout()).not.toContain('Console login');
      expect((await new Api(second.url).post('/api/v1/session', { email: login![1], password: login![2] })).status).toBe(200);
      second.child.kill('SIGTERM');
      await second.exited;
      await stopAndCheckLedgers(`sqlite:${join(d, 'g.db')}`);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  }, 60_000);
});
