import { describe, expect, it } from 'vitest';
import { readSse } from './chat-helpers.js';
import { useOrgGateway, type OrgTestGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * Unsupported parameters (docs/chat.md): per `unsupported_params` policy, what a
 * Messages request with cache_control hints and a server tool becomes for OpenAI and
 * Gemini models, and what a Codex-style Responses request (namespace tools, web_search,
 * an additional_tools input item) becomes for Claude and Gemini models.
 */

const HEADER = 'x-tollgate-dropped-params';

const messages = (model: string) => ({
  model, max_tokens: 50,
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello there', cache_control: { type: 'ephemeral' } }] }],
  tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }],
});

const fn = (name: string) => ({ type: 'function', name, description: `The ${name} tool`, strict: false, parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } });

/** What Codex sends: its MCP tools as namespaces, web search, and more tools in an additional_tools item (with an id, store: false). */
const codex = (model: string, extra: Record<string, unknown> = {}) => ({
  model, store: false, max_output_tokens: 200, // Claude needs a bound (docs/chat.md, the max_tokens rule)
  tools: [{ type: 'web_search', external_web_access: true }, { type: 'namespace', name: 'mcp__git', description: 'Tools in the mcp__git namespace.', tools: [fn('status')] }],
  input: [
    { type: 'additional_tools', id: 'at_1', role: 'developer', tools: [{ type: 'namespace', name: 'mcp__files', description: 'Files', tools: [fn('read_file')] }] },
    { role: 'user', content: [{ type: 'input_text', text: 'What changed?' }] },
  ],
  ...extra,
});

/** What Claude Code sends with every request: thinking with a budget, and an effort. */
const thinking = (model: string) => ({
  model, max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 4000 }, output_config: { effort: 'medium' },
  messages: [{ role: 'user', content: 'Think, then answer.' }],
});

/** The body of the last upstream call. */
function lastUpstream(t: OrgTestGateway): Record<string, unknown> {
  return JSON.parse(t.sim.received().at(-1)?.body ?? '{}') as Record<string, unknown>;
}

async function dropped(t: OrgTestGateway, headers: Headers): Promise<unknown> {
  return (await logRow(t, headers.get('x-request-id') ?? '')).extra?.dropped_params;
}

describe('translate (the default): translated where a translation exists, else dropped and named', () => {
  const t = useOrgGateway('unsupported-translate', '5', {}, { ledger: true });

  it('Messages → Gemini: the web search becomes googleSearch, cache_control is dropped', async () => {
    const r = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), t.key);
    expect(r.status).toBe(200);
    expect(lastUpstream(t).tools).toEqual([{ googleSearch: {} }]);
    expect(r.headers.get(HEADER)).toBe('cache_control');
    expect(await dropped(t, r.headers)).toEqual(['cache_control']);
  });

  it('Messages → OpenAI: no search tool on chat completions, so both are dropped', async () => {
    const r = await postJson(`${t.url}/v1/messages`, messages('gpt-4o-mini'), t.key);
    expect(r.status).toBe(200);
    expect(lastUpstream(t)).not.toHaveProperty('tools');
    expect(lastUpstream(t)).not.toHaveProperty('web_search_options');
    expect(r.headers.get(HEADER)).toBe('web_search_20250305, cache_control');
    expect(await dropped(t, r.headers)).toEqual(['web_search_20250305', 'cache_control']);
  });

  it.each([
    ['claude-haiku-4-5', { type: 'web_search_20250305', name: 'web_search' }],
    ['gemini-2.5-flash', { googleSearch: {} }],
  ] as const)('Responses → %s: namespaces flattened, web_search → the provider\'s search, nothing dropped, the call comes back namespaced', async (model, search) => {
    const r = await postJson(`${t.url}/v1/responses`, codex(model), t.key);
    expect(r.status).toBe(200);
    expect(r.headers.get(HEADER)).toBeNull();
    expect(await dropped(t, r.headers)).toBeUndefined();
    const up = lastUpstream(t);
    const sent = JSON.stringify(up.tools);
    expect(sent).toContain('"mcp__git__status"');
    expect(sent).toContain('"mcp__files__read_file"');
    expect(up.tools).toContainEqual(search);
    const output = (r.body as { output: Array<Record<string, unknown>> }).output;
    expect(output[0]).toMatchObject({ type: 'function_call', namespace: 'mcp__git', name: 'status', arguments: expect.stringContaining('path') });
  });

  it('streamed to Claude, the namespaced call arrives as Codex reads it, and its result goes back under the flat name', async () => {
    const res = await fetch(`${t.url}/v1/responses`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` }, body: JSON.stringify(codex('claude-haiku-4-5', { stream: true })),
    });
    const done = (await readSse(res)).map((e) => JSON.parse(e.data) as { type: string; item?: Record<string, unknown> }).find((e) => e.type === 'response.output_item.done');
    expect(done?.item).toMatchObject({ type: 'function_call', namespace: 'mcp__git', name: 'status' });
    const next = codex('claude-haiku-4-5', {
      input: [...codex('x').input, { ...done?.item, id: undefined, status: undefined }, { type: 'function_call_output', call_id: done?.item?.call_id, output: 'clean' }],
    });
    const r = await postJson(`${t.url}/v1/responses`, next, t.key);
    expect(r.status).toBe(200);
    const turns = lastUpstream(t).messages as Array<{ content: Array<Record<string, unknown>> }>;
    expect(turns.flatMap((m) => (Array.isArray(m.content) ? m.content : []))).toContainEqual(expect.objectContaining({ type: 'tool_use', name: 'mcp__git__status' }));
  });

  it('Messages with thinking and output_config.effort → Gemini: translated (reasoning.ts) as thinkingConfig, nothing dropped', async () => {
    const r = await postJson(`${t.url}/v1/messages`, { ...thinking('gemini-2.5-flash') }, t.key);
    expect(r.status).toBe(200);
    expect((lastUpstream(t).generationConfig as Record<string, unknown>).thinkingConfig).toMatchObject({ thinkingBudget: 4000 });
    expect(r.headers.get(HEADER)).toBeNull();
  });

  it('OpenAI gets the Codex request as written, and the simulator calls a tool of an additional_tools namespace', async () => {
    const body = codex('gpt-4o-mini', { tools: [] });
    const r = await postJson(`${t.url}/v1/responses`, body, t.key);
    expect(r.status).toBe(200);
    expect((lastUpstream(t).input as unknown[])[0]).toMatchObject({ type: 'additional_tools', id: 'at_1' });
    expect((r.body as { output: unknown[] }).output[0]).toMatchObject({ type: 'function_call', namespace: 'mcp__files', name: 'read_file' });
  });
});

describe('drop: every unsupported parameter is dropped, even one with a translation', () => {
  const t = useOrgGateway('unsupported-drop', '5', { yaml: { settings: { chat: { unsupported_params: 'drop' } } } }, { ledger: true });

  it.each(['gemini-2.5-flash', 'gpt-4o-mini'])('Messages → %s: 200, nothing of them sent, both named', async (model) => {
    const r = await postJson(`${t.url}/v1/messages`, messages(model), t.key);
    expect(r.status).toBe(200);
    expect(lastUpstream(t)).not.toHaveProperty('tools');
    expect(r.headers.get(HEADER)).toBe('web_search_20250305, cache_control');
    expect(await dropped(t, r.headers)).toEqual(['web_search_20250305', 'cache_control']);
  });

  it('Messages with thinking → Gemini: no thinkingConfig sent, thinking and output_config named', async () => {
    const r = await postJson(`${t.url}/v1/messages`, thinking('gemini-2.5-flash'), t.key);
    expect(r.status).toBe(200);
    expect(lastUpstream(t).generationConfig ?? {}).not.toHaveProperty('thinkingConfig');
    expect(r.headers.get(HEADER)).toBe('thinking, output_config');
  });

  it.each(['claude-haiku-4-5', 'gemini-2.5-flash'])('Responses → %s: 200 with a text reply, no tools sent, all named', async (model) => {
    const r = await postJson(`${t.url}/v1/responses`, codex(model), t.key);
    expect(r.status).toBe(200);
    expect(lastUpstream(t)).not.toHaveProperty('tools');
    expect((r.body as { output: unknown[] }).output[0]).toMatchObject({ type: 'message' });
    expect(r.headers.get(HEADER)).toBe('web_search, namespace, additional_tools');
    expect(await dropped(t, r.headers)).toEqual(['web_search', 'namespace', 'additional_tools']);
  });
});

describe('error: refused with 400 naming the field, before any upstream call', () => {
  const t = useOrgGateway('unsupported-error', '5', { yaml: { settings: { chat: { unsupported_params: 'error' } } } }, { ledger: true });

  it.each([
    ['messages', 'gemini-2.5-flash', 'tools[0]'],
    ['messages', 'gpt-4o-mini', 'tools[0]'],
    ['responses', 'claude-haiku-4-5', 'tools[0]'],
    ['responses', 'gemini-2.5-flash', 'tools[0]'],
  ])('/v1/%s → %s: 400 naming %s', async (format, model, param) => {
    const calls = t.sim.received().length;
    const r = await postJson(`${t.url}/v1/${format}`, format === 'messages' ? messages(model) : codex(model), t.key);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain(`"param":"${param}"`);
    expect(t.sim.received().length).toBe(calls);
  });

  it('cache_control alone is refused too, naming where it is', async () => {
    const { tools: _tools, ...body } = messages('gpt-4o-mini');
    const r = await postJson(`${t.url}/v1/messages`, body, t.key);
    expect(r).toMatchObject({ status: 400, body: { error: { param: 'system[0].cache_control' } } });
  });
});
