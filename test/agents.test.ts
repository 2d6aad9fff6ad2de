import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';
import { packageRoot } from '../src/lib/paths.js';
import { type ProcessRun, runToEnd, tempDir } from './harness.js';

/*
 * Issue 29: the coding agents, unmodified, through the gateway with any model. Each CLI
 * (Claude Code `claude -p`, Codex `codex exec`, Gemini CLI `gemini -p`) gets only the
 * base URL, a key and a model, in a home folder of its own; each runs against a Claude, a
 * GPT and a Gemini model. The simulator answers the first turn with a call to the first
 * tool the agent declares, so each run is a tool round trip: the agent runs the tool (or
 * is refused it, headless) and sends its result back, which the simulator answers in text.
 *
 * The CLIs are pinned in test/agents/package.json and installed by .ci/run
 * (`npm ci --prefix test/agents`); without them this file says how to install them.
 * Agents that send no output bound (Codex, Gemini CLI) reach Claude through the
 * operator's chat.default_max_tokens, as docs/chat.md says.
 */

const BIN = join(packageRoot(), 'test', 'agents', 'node_modules', '.bin');
const installed = ['claude', 'codex', 'gemini'].every((b) => existsSync(join(BIN, b)));
const MODELS = ['claude-haiku-4-5', 'gpt-4o-mini', 'gemini-2.5-flash'];
const REPLY = 'This is a simulated reply.';

type Run = ProcessRun;

/** Runs an agent CLI to its end (bounded), in its own home and working folder, with no network but loopback. */
function runAgent(bin: string, args: string[], env: Record<string, string>, home: string): Promise<Run> {
  return runToEnd(join(BIN, bin), args, { cwd: home, env: { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', NO_COLOR: '1', ...env }, timeoutMs: 120_000 });
}

/** Each agent: how it is told the base URL, the key and the model (its documented settings, nothing else). */
const AGENTS: Record<string, (url: string, key: string, model: string, home: string) => Promise<Run>> = {
  'Claude Code': (url, key, model, home) => runAgent('claude', ['-p', 'Look around, then say hello', '--model', model], {
    ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: key, DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  }, home),
  Codex: (url, key, model, home) => {
    mkdirSync(join(home, '.codex'), { recursive: true });
    writeFileSync(join(home, '.codex', 'config.toml'), `model_provider = "tollgate"\n[model_providers.tollgate]\nname = "Tollgate"\nbase_url = "${url}/v1"\nenv_key = "TOLLGATE_KEY"\nwire_api = "responses"\n`);
    return runAgent('codex', ['exec', '--skip-git-repo-check', '-m', model, 'Look around, then say hello'], { CODEX_HOME: join(home, '.codex'), TOLLGATE_KEY: key }, home);
  },
  'Gemini CLI': (url, key, model, home) => {
    mkdirSync(join(home, '.gemini'), { recursive: true });
    writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } }, telemetry: { enabled: false }, privacy: { usageStatisticsEnabled: false } }));
    return runAgent('gemini', ['-p', 'Look around, then say hello', '-m', model], { GEMINI_API_KEY: key, GOOGLE_GEMINI_BASE_URL: url, GEMINI_CLI_TRUST_WORKSPACE: 'true' }, home);
  },
};

describe.skipIf(!installed)('coding agents through the gateway, with any model', () => {
  const t = useOrgGateway('agents', '20', { yaml: { settings: { chat: { default_max_tokens: 4096 } } } }, { ledger: true });

  describe.each(Object.keys(AGENTS))('%s', (agent) => {
    it.each(MODELS)('completes a prompt with a tool round trip on %s', async (model) => {
      const before = new Set(t.sim.received());
      const run = await AGENTS[agent]!(t.url, t.key, model, tempDir('tollgate-agent-'));
      expect(run.code, run.output.slice(-2000)).toBe(0);
      expect(run.output).toContain(REPLY);
      // The round trip: a turn that the simulator answered with a tool call, then one carrying the tool's result.
      const bodies = t.sim.received().filter((r) => !before.has(r)).map((r) => r.body);
      expect(bodies.some((b) => /tool_result|function_call_output|"role":"tool"|functionResponse/.test(b)), bodies.map((b) => b.slice(0, 200)).join('\n')).toBe(true);
    }, 180_000);
  });
});

if (!installed) {
  describe('coding agents through the gateway', () => {
    it.skip(`needs the agent CLIs: npm ci --prefix test/agents (missing under ${BIN})`, () => undefined);
  });
}
