import { describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';

/**
 * The coding CLIs' default models must be in the catalogue, or a new user's first run is a
 * 404 (issue 29). Each id below is named with where it was found.
 */
const CLI_DEFAULTS: Array<{ cli: string; model: string }> = [
  // Claude Code, anthropics/claude-code CHANGELOG.md: "Changed Bedrock, Vertex, and Claude
  // Platform on AWS to default to Claude Opus 4.8"; also observed in the 2026-11 test run.
  { cli: 'Claude Code', model: 'claude-opus-4-8' },
  // Codex: observed as its default in the 2026-11 test run (issue 29); the current
  // codex-rs/core/models.json could not be read here (the stored copy predates GPT-6).
  { cli: 'Codex', model: 'gpt-6.2-sol' },
  // Gemini CLI, google-gemini/gemini-cli packages/core/src/config/models.ts:
  // DEFAULT_GEMINI_MODEL and DEFAULT_GEMINI_FLASH_MODEL.
  { cli: 'Gemini CLI', model: 'gemini-2.5-pro' },
  { cli: 'Gemini CLI', model: 'gemini-2.5-flash' },
];

const t = useOrgGateway('cli-defaults', '5');

describe("the coding CLIs' default models", () => {
  it('are listed by GET /v1/models', async () => {
    const res = await fetch(`${t.url}/v1/models`);
    expect(res.status).toBe(200);
    const ids = ((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    for (const { model } of CLI_DEFAULTS) expect(ids, model).toContain(model);
  });

  it.each(CLI_DEFAULTS)('$cli: a chat to $model returns 200 through the simulator', async ({ model }) => {
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { model: string; choices: Array<{ message: { content: string } }> };
    expect(body.model).toBe(model);
    expect(body.choices[0]?.message.content).toBeTruthy();
  });
});
