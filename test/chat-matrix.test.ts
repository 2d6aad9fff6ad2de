import { describe, expect, it } from 'vitest';
import { post, readSse } from './chat-helpers.js';
import { useOrgGateway } from './fixtures.js';

/**
 * The matrix docs/chat.md shows: every client format × every provider dialect × text,
 * stream, tools (a call and its result), images and JSON — each cell a test named
 * `<format> × <provider> × <feature>`. A cell the provider cannot serve asserts the
 * 400 naming the client's field, before any upstream call.
 */

const t = useOrgGateway('matrix', '10', {}, { ledger: true });
const REPLY = 'This is a simulated reply. This is a';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
const SCHEMA = { type: 'object', properties: { answer: { type: 'string' }, score: { type: 'integer' } }, required: ['answer', 'score'] };
const EXAMPLE = { answer: 'sim', score: 1 };
const PROVIDERS = [
  { provider: 'openai', model: 'gpt-4o-mini' },
  { provider: 'anthropic', model: 'claude-haiku-4-5' },
  { provider: 'google', model: 'gemini-2.5-flash' },
  { provider: 'groq (OpenAI-compatible)', model: 'llama-3.3-70b-versatile' },
];

interface Call { id: string; name: string; args: unknown }
type Refusal = { refused: string };

/** One client format, spoken over plain HTTP the way its SDKs speak it. */
interface Format {
  name: string;
  text(model: string, image?: boolean): Promise<string>;
  stream(model: string): Promise<string>;
  /** A tool call, then the reply to its result. */
  tools(model: string): Promise<{ call: Call; answer: string }>;
  /** A JSON-schema reply; absent where the format has no JSON mode (Anthropic Messages). */
  json?(model: string): Promise<unknown | Refusal>;
}

async function json(url: string, body: unknown, key: string): Promise<Record<string, unknown>> {
  const res = await post(url, body, key);
  const out = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw Object.assign(new Error(`status ${res.status}: ${JSON.stringify(out)}`), { status: res.status, body: out });
  return out;
}

/** The field a 400 names, as each format's error shape carries it. */
async function refusal(p: Promise<unknown>): Promise<unknown | Refusal> {
  try {
    return await p;
  } catch (err) {
    const e = err as { status?: number; body?: { error?: { param?: string; details?: Array<{ metadata?: { param?: string } }> } } };
    if (e.status !== 400) throw err;
    return { refused: e.body?.error?.param ?? e.body?.error?.details?.[0]?.metadata?.param ?? '?' };
  }
}

const weather = { name: 'get_weather', description: 'Weather of a city', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

const chat: Format = {
  name: 'chat completions',
  async text(model, image) {
    const content = image ? [{ type: 'text', text: 'What is it?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] : 'Hello';
    const r = await json(`${t.url}/v1/chat/completions`, { model, max_tokens: 100, messages: [{ role: 'user', content }] }, t.key);
    return (r.choices as Array<{ message: { content: string } }>)[0]!.message.content;
  },
  async stream(model) {
    const events = await readSse(await post(`${t.url}/v1/chat/completions`, { model, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hello' }] }, t.key));
    expect(events[events.length - 1]?.data).toBe('[DONE]');
    return events.slice(0, -1).map((e) => (JSON.parse(e.data) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
  },
  async tools(model) {
    const tools = [{ type: 'function', function: { name: weather.name, description: weather.description, parameters: weather.schema } }];
    const messages: unknown[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await json(`${t.url}/v1/chat/completions`, { model, max_tokens: 100, tools, messages }, t.key);
    const msg = (first.choices as Array<{ message: { tool_calls: Array<{ id: string; function: { name: string; arguments: string } }> } }>)[0]!.message;
    const c = msg.tool_calls[0]!;
    const second = await json(`${t.url}/v1/chat/completions`, { model, max_tokens: 100, tools, messages: [...messages, msg, { role: 'tool', tool_call_id: c.id, content: '21C' }] }, t.key);
    return { call: { id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) }, answer: (second.choices as Array<{ message: { content: string } }>)[0]!.message.content };
  },
  async json(model) {
    return refusal((async () => {
      const r = await json(`${t.url}/v1/chat/completions`, { model, max_tokens: 100, response_format: { type: 'json_schema', json_schema: { name: 'a', schema: SCHEMA } }, messages: [{ role: 'user', content: 'JSON please' }] }, t.key);
      return JSON.parse((r.choices as Array<{ message: { content: string } }>)[0]!.message.content) as unknown;
    })());
  },
};

const messages: Format = {
  name: 'messages',
  async text(model, image) {
    const content = image ? [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: 'What is it?' }] : 'Hello';
    const r = await json(`${t.url}/v1/messages`, { model, max_tokens: 100, messages: [{ role: 'user', content }] }, t.key);
    return (r.content as Array<{ text: string }>).map((b) => b.text).join('');
  },
  async stream(model) {
    const events = await readSse(await post(`${t.url}/v1/messages`, { model, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hello' }] }, t.key));
    expect(events[events.length - 1]?.event).toBe('message_stop');
    return events.map((e) => JSON.parse(e.data) as { type: string; delta?: { text?: string } }).filter((e) => e.type === 'content_block_delta').map((e) => e.delta?.text ?? '').join('');
  },
  async tools(model) {
    const tools = [{ name: weather.name, description: weather.description, input_schema: weather.schema }];
    const ask = { role: 'user', content: 'Weather in Paris?' };
    const first = await json(`${t.url}/v1/messages`, { model, max_tokens: 100, tools, messages: [ask] }, t.key);
    const c = (first.content as Array<{ type: string; id: string; name: string; input: unknown }>).find((b) => b.type === 'tool_use')!;
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: c.id, content: '21C' }] };
    const second = await json(`${t.url}/v1/messages`, { model, max_tokens: 100, tools, messages: [ask, { role: 'assistant', content: first.content }, result] }, t.key);
    return { call: { id: c.id, name: c.name, args: c.input }, answer: (second.content as Array<{ text: string }>).map((b) => b.text).join('') };
  },
};

const responses: Format = {
  name: 'responses',
  async text(model, image) {
    const input = image ? [{ role: 'user', content: [{ type: 'input_text', text: 'What is it?' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }] }] : 'Hello';
    const r = await json(`${t.url}/v1/responses`, { model, max_output_tokens: 100, input }, t.key);
    return (r.output as Array<{ content: Array<{ text: string }> }>)[0]!.content[0]!.text;
  },
  async stream(model) {
    const events = await readSse(await post(`${t.url}/v1/responses`, { model, max_output_tokens: 100, stream: true, input: 'Hello' }, t.key));
    expect(events[events.length - 1]?.event).toBe('response.completed');
    return events.filter((e) => e.event === 'response.output_text.delta').map((e) => (JSON.parse(e.data) as { delta: string }).delta).join('');
  },
  async tools(model) {
    const tools = [{ type: 'function', name: weather.name, description: weather.description, parameters: weather.schema }];
    const first = await json(`${t.url}/v1/responses`, { model, max_output_tokens: 100, tools, input: 'Weather in Paris?' }, t.key);
    const c = (first.output as Array<{ type: string; call_id: string; name: string; arguments: string }>).find((o) => o.type === 'function_call')!;
    const second = await json(`${t.url}/v1/responses`, { model, max_output_tokens: 100, tools, previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: c.call_id, output: '21C' }] }, t.key);
    return { call: { id: c.call_id, name: c.name, args: JSON.parse(c.arguments) }, answer: (second.output as Array<{ content: Array<{ text: string }> }>)[0]!.content[0]!.text };
  },
  async json(model) {
    return refusal((async () => {
      const r = await json(`${t.url}/v1/responses`, { model, max_output_tokens: 100, input: 'JSON please', text: { format: { type: 'json_schema', name: 'a', schema: SCHEMA } } }, t.key);
      return JSON.parse((r.output as Array<{ content: Array<{ text: string }> }>)[0]!.content[0]!.text) as unknown;
    })());
  },
};

const gem = (model: string, action = 'generateContent'): string => `${t.url}/v1beta/models/${model}:${action}`;
const partsText = (r: Record<string, unknown>): string =>
  ((r.candidates as Array<{ content: { parts: Array<{ text?: string }> } }> | undefined)?.[0]?.content.parts ?? []).map((p) => p.text ?? '').join('');

const gemini: Format = {
  name: 'gemini',
  async text(model, image) {
    const parts = image ? [{ text: 'What is it?' }, { inlineData: { mimeType: 'image/png', data: PNG } }] : [{ text: 'Hello' }];
    return partsText(await json(gem(model), { contents: [{ role: 'user', parts }], generationConfig: { maxOutputTokens: 100 } }, t.key));
  },
  async stream(model) {
    const events = await readSse(await post(`${gem(model, 'streamGenerateContent')}?alt=sse`, { contents: [{ parts: [{ text: 'Hello' }] }], generationConfig: { maxOutputTokens: 100 } }, t.key));
    expect(JSON.parse(events[events.length - 1]?.data ?? '{}')).toMatchObject({ candidates: [{ finishReason: 'STOP' }] });
    return events.map((e) => partsText(JSON.parse(e.data) as Record<string, unknown>)).join('');
  },
  async tools(model) {
    const tools = [{ functionDeclarations: [{ name: weather.name, description: weather.description, parameters: weather.schema }] }];
    const ask = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
    const first = await json(gem(model), { contents: [ask], tools, generationConfig: { maxOutputTokens: 100 } }, t.key);
    const part = (first.candidates as Array<{ content: { parts: Array<{ functionCall?: { id?: string; name: string; args: unknown } }> } }>)[0]!.content.parts.find((p) => p.functionCall)!;
    const fc = part.functionCall!;
    const answer = partsText(await json(gem(model), {
      tools, generationConfig: { maxOutputTokens: 100 },
      contents: [ask, { role: 'model', parts: [part] }, { role: 'user', parts: [{ functionResponse: { name: fc.name, response: { temp: 21 } } }] }],
    }, t.key));
    return { call: { id: fc.id ?? '', name: fc.name, args: fc.args }, answer };
  },
  async json(model) {
    return refusal((async () => JSON.parse(partsText(await json(gem(model), {
      contents: [{ parts: [{ text: 'JSON please' }] }], generationConfig: { maxOutputTokens: 100, responseMimeType: 'application/json', responseJsonSchema: SCHEMA },
    }, t.key))) as unknown)());
  },
};

/** The field each format names when Claude refuses a JSON schema (Anthropic Messages has no JSON mode). */
const JSON_REFUSED: Record<string, string> = { 'chat completions': 'response_format', responses: 'text.format', gemini: 'generationConfig.responseMimeType' };

describe.each([chat, messages, responses, gemini])('$name', (format) => {
  describe.each(PROVIDERS)('$provider', ({ provider, model }) => {
    const cell = (feature: string): string => `${format.name} × ${provider.split(' ')[0]} × ${feature}`;

    it(cell('text'), async () => {
      expect(await format.text(model)).toBe(REPLY);
    });

    it(cell('stream'), async () => {
      expect(await format.stream(model)).toBe(REPLY);
    });

    it(cell('tools'), async () => {
      const { call, answer } = await format.tools(model);
      expect(call).toMatchObject({ name: 'get_weather', args: { city: 'sim' } });
      expect(answer).toBe(REPLY);
    });

    it(cell('images'), async () => {
      expect(await format.text(model, true)).toBe(REPLY);
    });

    const jsonReply = format.json;
    if (jsonReply) {
      it(cell('json'), async () => {
        const before = JSON.stringify(t.sim.calls());
        const got = await jsonReply(model);
        if (provider === 'anthropic') {
          expect(got).toEqual({ refused: JSON_REFUSED[format.name] });
          expect(JSON.stringify(t.sim.calls())).toBe(before);
        } else expect(got).toEqual(EXAMPLE);
      });
    }
  });
});
