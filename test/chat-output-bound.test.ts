import { describe, expect, it } from 'vitest';
import { post, readSse } from './chat-helpers.js';
import { useGateway } from './fixtures.js';
import { expectLedgerMatchesLog } from './harness.js';

/**
 * The output bound the gateway reserves for is the largest output the upstream can
 * produce for the body it is sent (issue 27, finding 1). Every client format × every
 * dialect, from an org whose balance covers the small bound only: a request with a
 * small bound field and a huge alternative one (a field the upstream honours over the
 * small one, or one the format does not know) either gets at most the small bound of
 * output, or is refused 402 insufficient_credits because the huge bound is reserved —
 * never the huge output on a balance that covers only the small one.
 */

const t = useGateway();

const SMALL = 3;
const HUGE = 100_000;
/** The simulator writes 40 tokens unless the bound it honours is lower. */
const PROMPT = 'Hello [[sim:tokens=40]]';
/** $0.002: the prompt bound and SMALL tokens of output on every model below, far from HUGE tokens of any. */
const CREDITS = '0.002';
const START = 2_000;

const MODELS = [
  { dialect: 'openai', model: 'gpt-4o-mini' },
  { dialect: 'openai (max_tokens_param: max_completion_tokens)', model: 'o4-mini' },
  { dialect: 'openai-compatible (groq)', model: 'llama-3.3-70b-versatile' },
  { dialect: 'anthropic', model: 'claude-haiku-4-5' },
  { dialect: 'gemini', model: 'gemini-2.5-flash' },
];

/** What a request came to: its status, the gateway code of a refusal, the output tokens of a reply. */
interface Outcome { status: number; code?: string; output?: number }

interface Cell {
  format: string;
  /** The request's body with a small bound and a huge alternative, and how to read its outcome. */
  send(model: string, key: string, stream: boolean): Promise<Outcome>;
}

type Json = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** The gateway code of an error body in any format's shape (Gemini keeps it in the detail's reason). */
function errorCode(body: Json): string | undefined {
  const e = body.error as { code?: unknown; details?: Array<{ reason?: string }> } | undefined;
  return typeof e?.code === 'string' ? e.code : e?.details?.[0]?.reason;
}

/** Posts and reads the reply, whole or streamed; `output` reads the output tokens from a whole reply or the last usage-bearing event. */
async function outcome(url: string, body: unknown, key: string, stream: boolean, output: (j: Json) => number | undefined, headers: Record<string, string> = {}): Promise<Outcome> {
  const res = await post(url, body, key, headers);
  if (res.status !== 200) return { status: res.status, code: errorCode((await res.json()) as Json) };
  if (!stream) return { status: 200, output: output((await res.json()) as Json) };
  const events = await readSse(res);
  const counts = events.flatMap((e) => {
    try {
      const n = output(JSON.parse(e.data) as Json);
      return n === undefined ? [] : [n];
    } catch {
      return []; // [DONE]
    }
  });
  return { status: 200, output: counts[counts.length - 1] };
}

const usageOf = (j: Json): Json | undefined => (j.usage as Json | undefined) ?? ((j.response as Json | undefined)?.usage as Json | undefined);

const CELLS: Cell[] = [
  ...[
    ['max_tokens small, max_completion_tokens huge', { max_tokens: SMALL, max_completion_tokens: HUGE }],
    ['max_completion_tokens small, max_tokens huge', { max_tokens: HUGE, max_completion_tokens: SMALL }],
  ].map(([name, bounds]): Cell => ({
    format: `chat completions (${String(name)})`,
    send: (model, key, stream) => outcome(`${t.url}/v1/chat/completions`, {
      model, ...(bounds as Json), messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream, stream_options: { include_usage: true } } : {}),
    }, key, stream, (j) => num(usageOf(j)?.completion_tokens)),
  })),
  {
    format: 'responses (max_output_tokens small, chat bound fields huge)',
    send: (model, key, stream) => outcome(`${t.url}/v1/responses`, {
      model, max_output_tokens: SMALL, max_tokens: HUGE, max_completion_tokens: HUGE, input: PROMPT, store: false, ...(stream ? { stream } : {}),
    }, key, stream, (j) => num(usageOf(j)?.output_tokens)),
  },
  {
    format: 'messages (max_tokens small, chat bound field huge)',
    send: (model, key, stream) => outcome(`${t.url}/v1/messages`, {
      model, max_tokens: SMALL, max_completion_tokens: HUGE, messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream } : {}),
    }, key, stream, (j) => num(usageOf(j)?.output_tokens) ?? num(((j.message as Json | undefined)?.usage as Json | undefined)?.output_tokens), { 'anthropic-version': '2023-06-01' }),
  },
  {
    format: 'gemini (maxOutputTokens small, chat bound fields huge)',
    send: (model, key, stream) => outcome(`${t.url}/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, {
      contents: [{ role: 'user', parts: [{ text: PROMPT }] }], generationConfig: { maxOutputTokens: SMALL }, max_tokens: HUGE, max_completion_tokens: HUGE,
    }, key, stream, (j) => num((j.usageMetadata as Json | undefined)?.candidatesTokenCount)),
  },
];

describe('a small bound field with a huge alternative, on a balance that covers only the small bound', () => {
  let n = 0;
  for (const cell of CELLS) {
    for (const { dialect, model } of MODELS) {
      for (const stream of [false, true]) {
        it(`${cell.format} × ${dialect} (${model}), stream: ${stream} → at most ${SMALL} tokens of output, or 402`, async () => {
          const { org, key } = await t.org(`bound-${n++}`, CREDITS);
          const r = await cell.send(model, key, stream);
          // Served within the small bound, or refused because the largest bound is what is reserved.
          if (r.status === 200) expect(r.output).toBeLessThanOrEqual(SMALL);
          else expect(r).toEqual({ status: 402, code: 'insufficient_credits' });
          const balance = await t.balance(org.id);
          expect(balance).toBeGreaterThanOrEqual(0);
          expect(balance).toBeLessThanOrEqual(START);
          await expectLedgerMatchesLog(t, org.id);
        });
      }
    }
  }
});

describe('Gemini candidateCount: each candidate may write the whole bound', () => {
  it.each([false, true])('candidateCount 8 × maxOutputTokens 2000 to an OpenAI-dialect model (n: 8), stream: %s → 402 on a balance that covers one candidate only', async (stream) => {
    // One candidate's bound costs $0.0012 on gpt-4o-mini ($0.60/M out), eight cost $0.0096: $0.002 covers one.
    const { org, key } = await t.org(`candidates-${String(stream)}`, CREDITS);
    const r = await outcome(`${t.url}/v1beta/models/gpt-4o-mini:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, {
      contents: [{ role: 'user', parts: [{ text: 'Hello [[sim:tokens=2000]]' }] }], generationConfig: { maxOutputTokens: 2000, candidateCount: 8 },
    }, key, stream, (j) => num((j.usageMetadata as Json | undefined)?.candidatesTokenCount));
    expect(r).toEqual({ status: 402, code: 'insufficient_credits' });
    expect(await t.balance(org.id)).toBe(START);
    await expectLedgerMatchesLog(t, org.id);
  });

  it.each([
    ['generation_config', { generationConfig: { maxOutputTokens: SMALL }, generation_config: { max_output_tokens: HUGE } }],
    ['generationConfig.max_output_tokens', { generationConfig: { maxOutputTokens: SMALL, max_output_tokens: HUGE } }],
    ['generationConfig.candidate_count', { generationConfig: { maxOutputTokens: SMALL, candidate_count: 8 } }],
  ])('the proto name %s (Google reads it too, the gateway does not) to a Gemini model is a 400 naming it, nothing sent', async (param, config) => {
    const { org, key } = await t.org(`proto-${param}`, CREDITS);
    const calls = (): number => Object.values(t.sim.calls()).reduce((n, c) => n + c, 0);
    const before = calls();
    const res = await post(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [{ role: 'user', parts: [{ text: PROMPT }] }], ...config }, key);
    const detail = ((await res.json()) as { error?: { details?: Array<{ reason: string; metadata: { param?: string } }> } }).error?.details?.[0];
    expect({ status: res.status, reason: detail?.reason, param: detail?.metadata.param }).toEqual({ status: 400, reason: 'invalid_request', param });
    expect(calls()).toBe(before);
    expect(await t.balance(org.id)).toBe(START);
    await expectLedgerMatchesLog(t, org.id);
  });

  it('a candidateCount that is not a whole number of at least 1 is a 400 naming it', async () => {
    const { key } = await t.org('candidates-bad', CREDITS);
    const r = await outcome(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent`, {
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }], generationConfig: { maxOutputTokens: 3, candidateCount: 0 },
    }, key, false, () => undefined);
    expect(r).toEqual({ status: 400, code: 'invalid_request' });
  });
});
