import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';
import { useOrgGateway } from './fixtures.js';

/** The README's OpenAI example is a file a newcomer runs as it is: it must print the reply and what it cost. */
const t = useOrgGateway('quickstart', '1', {}, { ledger: true });

function run(env: NodeJS.ProcessEnv, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(packageRoot(), 'examples', 'openai-quickstart.mjs'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('examples/openai-quickstart.mjs', () => {
  it('streams the reply and prints its tokens and cost, which is what the org was charged', async () => {
    const before = await t.balance(t.orgId);
    const r = await run({ ...process.env, TOLLGATE_KEY: t.key, TOLLGATE_URL: `${t.url}/v1` }, ['Say hi [[sim:tokens=6]]']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [reply, summary] = r.stdout.trimEnd().split('\n');
    expect(reply).toBe('This is a simulated reply. This');
    const m = /^gpt-4o-mini: (\d+) prompt \+ 6 completion tokens, cost \$(\d+\.\d{6}) \(input \$\d+\.\d{6}, output \$\d+\.\d{6}\)$/.exec(summary ?? '');
    expect(m, summary).not.toBeNull();
    expect(before - (await t.balance(t.orgId))).toBe(Math.round(Number(m?.[2]) * 1e6));
  });

  it('says which key to use when TOLLGATE_KEY is not set', async () => {
    const env = { ...process.env };
    delete env.TOLLGATE_KEY;
    const r = await run(env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('gateway keys create --org demo');
  });
});
