import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postJson } from './harness.js';
import { cli, defaultProject, KEY, lastLine, sleep, STACK_FRAME, useCliServer } from './cli-helpers.js';

/** Issue 34: `gateway projects update --guardrails FILE --body-logging MODE` (docs/guardrails.md). */
describe('gateway projects update --guardrails / --body-logging', { timeout: 60_000 }, () => {
  const env = useCliServer('tollgate-cli-guard-');
  const row = () => defaultProject(env.db, 'guardrails', 'body_logging') as { guardrails: string | null; body_logging: string | null } | undefined;

  it('sets guardrails from a file and body logging; the running server masks at once', async () => {
    const key = lastLine((await cli(['keys', 'create', '--org', 'acme', '--config', env.config])).stdout);
    expect(key).toMatch(KEY);
    const file = join(env.dir, 'guardrails.json');
    writeFileSync(file, JSON.stringify([{ type: 'pii', action: 'mask', entities: ['email'] }]));
    const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--guardrails', file, '--body-logging', 'redacted', '--body-retention-days', '7', '--config', env.config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('project "default" in "acme": 1 guardrail(s), body logging redacted (7 days, 65536 bytes)\n');
    expect(JSON.parse(row()?.guardrails ?? 'null')).toEqual([{ type: 'pii', action: 'mask', entities: ['email'] }]);
    expect(JSON.parse(row()?.body_logging ?? 'null')).toEqual({ mode: 'redacted', retention_days: 7, max_bytes: 65536 });
    let upstream = '';
    for (let i = 0; i < 40 && !upstream.includes('[EMAIL_1]'); i++) {
      if (i > 0) await sleep(100);
      const res = await postJson(`${env.server.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'mail a.b@example.com' }] }, key);
      expect(res.status).toBe(200);
      upstream = env.sim.received().at(-1)?.body ?? '';
    }
    expect(upstream).toContain('[EMAIL_1]');
    expect(upstream).not.toContain('a.b@example.com');
  });

  it('refuses a file that is no guardrail list (exit 1, nothing written) and removes them with none', async () => {
    const bad = join(env.dir, 'bad.json');
    writeFileSync(bad, JSON.stringify([{ type: 'regex', action: 'block', patterns: ['(open'] }]));
    const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--guardrails', bad, '--config', env.config]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/guardrails\[0\]/);
    expect(r.stderr).not.toMatch(STACK_FRAME);
    expect(JSON.parse(row()?.guardrails ?? 'null')).toHaveLength(1);
    const off = await cli(['projects', 'update', 'default', '--org', 'acme', '--guardrails', 'none', '--body-logging', 'off', '--config', env.config]);
    expect(off.stdout).toBe('project "default" in "acme": 0 guardrail(s), body logging off\n');
    expect(row()).toEqual({ guardrails: null, body_logging: null });
  });
});
