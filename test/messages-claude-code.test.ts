import { describe, expect, it } from 'vitest';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';
import { logRow } from './harness.js';

/**
 * What Claude Code sends on /v1/messages beyond the basics (issue 26): system messages
 * in the middle of `messages` (with a beta header), served by every chat model — Claude
 * as written, the others translated — and checked on what the upstream received.
 */

const t = useOrgGateway('claude-code', '5', {}, { ledger: true });
const REPLY = 'This is a simulated reply. This is a';
const BETA = 'mid-conversation-system-clear-at-2026-08-21';

const MESSAGES = [
  { role: 'user', content: 'Hello there' },
  { role: 'assistant', content: 'Hi.' },
  { role: 'system', content: [{ type: 'text', text: 'From now on, answer in French.' }] },
  { role: 'user', content: 'How are you?' },
];
const body = (model: string, stream: boolean) => ({ model, max_tokens: 100, system: 'Be brief.', messages: MESSAGES, ...(stream ? { stream: true } : {}) });

interface Upstream { route: string; headers: Record<string, string>; json: Record<string, unknown> }
/** The gateway's call to the simulator for the request just made (the latest call). */
function lastUpstream(): Upstream {
  const call = t.sim.received().at(-1);
  if (!call) throw new Error('the simulator received nothing');
  return { route: call.route, headers: call.headers, json: JSON.parse(call.body) as Record<string, unknown> };
}

/** What each provider must have received: the mid-conversation system message, in its dialect's terms. */
const EXPECTED: Record<string, (u: Upstream) => void> = {
  'claude-haiku-4-5': (u) => {
    expect(u.route).toMatch(/\/v1\/messages$/);
    expect(u.json.messages).toEqual(MESSAGES); // as the client sent it
    expect(u.json.system).toBe('Be brief.');
    expect(u.headers['anthropic-beta']).toBe(BETA);
  },
  'gpt-4o-mini': (u) => {
    // OpenAI takes system messages anywhere: it stays where it was.
    expect(u.json.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: 'Hi.' },
      { role: 'system', content: 'From now on, answer in French.' },
      { role: 'user', content: 'How are you?' },
    ]);
    expect(u.headers['anthropic-beta']).toBeUndefined();
  },
  'gemini-2.5-flash': (u) => {
    // Gemini has only systemInstruction: it is appended there (as LiteLLM does), the turns stay user/model.
    expect(u.json.systemInstruction).toEqual({ parts: [{ text: 'Be brief.\n\nFrom now on, answer in French.' }] });
    expect((u.json.contents as Array<{ role: string }>).map((c) => c.role)).toEqual(['user', 'model', 'user']);
  },
};

describe.each(Object.keys(EXPECTED))('a mid-conversation system message to %s', (model) => {
  it('answers 200 (not streamed), the upstream got it in its own terms', async () => {
    const res = await post(`${t.url}/v1/messages`, body(model, false), t.key, { 'anthropic-beta': BETA, 'anthropic-version': '2023-06-01' });
    const json = await res.json() as { content: unknown };
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.content).toEqual([{ type: 'text', text: REPLY }]);
    EXPECTED[model]!(lastUpstream());
    const row = await logRow(t, res.headers.get('x-request-id') ?? '');
    expect(row.prompt).toContain('From now on, answer in French.');
  });

  it('answers 200 streamed, the upstream got it in its own terms', async () => {
    const res = await post(`${t.url}/v1/messages`, body(model, true), t.key, { 'anthropic-beta': BETA, 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.map((e) => e.event).slice(-2)).toEqual(['message_delta', 'message_stop']);
    const upstream = lastUpstream();
    EXPECTED[model]!(upstream);
    if (model === 'gpt-4o-mini') expect(upstream.json.stream).toBe(true);
  });
});
