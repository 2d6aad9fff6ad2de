import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';
import { useOrgGateway } from './fixtures.js';
import { type ProcessRun, runToEnd } from './harness.js';

/** The README's OpenAI example is a file a newcomer runs as it is: it must print the reply and what it cost. */
const t = useOrgGateway('quickstart', '1', {}, { ledger: true });

function run(env: NodeJS.ProcessEnv, args: string[] = []): Promise<ProcessRun> {
  return runToEnd(process.execPath, [join(packageRoot(), 'examples', 'openai-quickstart.mjs'), ...args], { env, timeoutMs: 20_000 });
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
