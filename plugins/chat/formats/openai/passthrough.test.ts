import { describe, expect, it } from 'vitest';
import { openaiDialect } from '../../dialects/openai/index.js';
import type { StreamStep } from '../types.js';
import { openaiPassthrough, withModel } from './passthrough.js';
import { scanChunk } from './scan.js';

const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ id: 'chatcmpl-u', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini-2024-07-18', choices, ...extra });
const choice = (delta: Record<string, unknown>, index = 0): Record<string, unknown> => ({ index, delta, logprobs: null, finish_reason: null });

/** What the OpenAI dialect counts on the parsed chunk: the reference the scan must agree with. */
const parsedDelivered = (data: string): number => openaiDialect.streamTranslator({ requestedModel: 'x', id: 'c', created: 1 }).onEvent(undefined, data).deliveredTokens;

describe('scanChunk', () => {
  it.each([
    ['a role chunk with empty content and a null refusal', chunk([choice({ role: 'assistant', content: '', refusal: null })]), 0],
    ['a content chunk', chunk([choice({ content: 'Hello' })]), 1],
    ['content that is only an escaped quote', chunk([choice({ content: '"' })]), 1],
    ['a refusal', chunk([choice({ refusal: 'no' })]), 1],
    ['tool calls', chunk([choice({ tool_calls: [{ index: 0, function: { arguments: '{"a' } }] })]), 1],
    ['empty tool calls', chunk([choice({ tool_calls: [] })]), 0],
    ['a finish chunk', chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]), 0],
    ['two choices with content', chunk([choice({ content: 'a' }), choice({ content: 'b' }, 1)]), 2],
    ['content and refusal in one choice (one token)', chunk([choice({ content: 'a', refusal: 'b' })]), 1],
    ['logprobs content (an array, not delivered text)', chunk([{ index: 0, delta: {}, logprobs: { content: [{ token: 'a' }] }, finish_reason: null }]), 0],
    ['a null usage', chunk([choice({ content: 'x' })], { usage: null }), 1],
    ['JSON with spaces (Python servers)', JSON.stringify(JSON.parse(chunk([choice({ content: 'x' })])), null, 1), 1],
    ['text that looks like keys inside a string', chunk([choice({ content: '"usage":{"a":1},"error":1,"model":"m"' })]), 1],
  ])('%s: delivered as the parse counts', (_name, data, delivered) => {
    const facts = scanChunk(data);
    expect(facts?.delivered).toBe(delivered);
    expect(parsedDelivered(data)).toBe(delivered);
    // The model found is the top-level one.
    const at = facts?.modelAt;
    expect(at && data.slice(at[0], at[1])).toBe('"gpt-4o-mini-2024-07-18"');
  });

  it.each([
    ['a usage chunk', chunk([], { usage: { prompt_tokens: 1, completion_tokens: 2 } })],
    ['an error', JSON.stringify({ error: { message: 'boom' } })],
    ['an unterminated string', '{"simulated": "malform'],
    ['an unbalanced object', '{"choices":[{"delta":{}}]'],
    ['trailing text', `${chunk([])} x`],
    ['an array', '[1]'],
    ['not JSON', 'hello'],
    ['empty', ''],
  ])('leaves %s to the full parse', (_name, data) => {
    expect(scanChunk(data)).toBeUndefined();
  });
});

describe('withModel', () => {
  it('replaces only the top-level model, keeping the rest byte for byte', () => {
    const data = chunk([choice({ content: '"model":"gpt-4o-mini-2024-07-18"' })]);
    const out = withModel(data, '"gpt-4o-mini"');
    expect(JSON.parse(out)).toEqual({ ...JSON.parse(data), model: 'gpt-4o-mini' });
    expect(out.replace('"gpt-4o-mini"', '"gpt-4o-mini-2024-07-18"')).toBe(data);
  });

  it('parses a chunk with usage and choices once to replace it', () => {
    const data = chunk([choice({ content: 'a' })], { usage: { prompt_tokens: 1 } });
    expect(JSON.parse(withModel(data, '"m"'))).toEqual({ ...JSON.parse(data), model: 'm' });
  });
});

describe('openaiPassthrough', () => {
  /** Feeds `parts` (split anywhere) and returns the written text and what metering saw. */
  const run = (parts: string[]) => {
    const slowCalls: string[] = [];
    const translator = openaiDialect.streamTranslator({ requestedModel: 'gpt-4o-mini', id: 'c', created: 1 });
    const slow = (event: string | undefined, data: string): StreamStep => {
      slowCalls.push(data);
      const t = translator.onEvent(event, data);
      return { frames: t.chunks.map((c) => `data: ${withModel(c, '"gpt-4o-mini"')}\n\n`), usage: t.usage, deliveredTokens: t.deliveredTokens, done: t.done, error: t.error };
    };
    const p = openaiPassthrough(slow, '"gpt-4o-mini"');
    const steps = [...parts.map((x) => p.push(Buffer.from(x))), p.end()];
    return {
      text: steps.flatMap((s) => s.frames).join(''),
      writes: steps.filter((s) => s.frames.length > 0).length,
      delivered: steps.reduce((n, s) => n + s.deliveredTokens, 0),
      usage: steps.find((s) => s.usage)?.usage,
      done: steps.some((s) => s.done),
      error: steps.find((s) => s.error)?.error,
      slowCalls,
    };
  };
  const events = [chunk([choice({ role: 'assistant', content: '' })]), chunk([choice({ content: 'Hé' })]), chunk([choice({ content: ' world' })]), chunk([{ index: 0, delta: {}, finish_reason: 'stop' }])];
  const usage = chunk([], { usage: { prompt_tokens: 11, completion_tokens: 2, total_tokens: 13 } });
  const wire = `${events.map((e) => `data: ${e}\n\n`).join('')}data: ${usage}\n\ndata: [DONE]\n\n`;
  const expected = events.map((e) => `data: ${e.replace('gpt-4o-mini-2024-07-18', 'gpt-4o-mini')}\n\n`).join('');

  it('forwards the chunks with the requested model, keeps usage and [DONE] back, parses only the usage chunk', () => {
    const r = run([wire]);
    expect(r).toMatchObject({ text: expected, writes: 1, delivered: 2, done: true, error: undefined, usage: { promptTokens: 11, completionTokens: 2 } });
    expect(r.slowCalls).toEqual([usage]);
  });

  it('gives the same result split at every byte (multi-byte characters included)', () => {
    const bytes = Buffer.from(wire);
    const split = (at: number) => {
      const p = openaiPassthrough(() => ({ frames: [], deliveredTokens: 0, done: false }), '"gpt-4o-mini"');
      const steps = [p.push(bytes.subarray(0, at)), p.push(bytes.subarray(at)), p.end()];
      return { text: steps.flatMap((s) => s.frames).join(''), delivered: steps.reduce((n, s) => n + s.deliveredTokens, 0) };
    };
    for (let at = 1; at < bytes.length; at++) expect(split(at)).toEqual({ text: expected, delivered: 2 });
  });

  it('reads a CRLF stream through the event decoder, with the same result', () => {
    const r = run([wire.replace(/\n/g, '\r\n')]);
    expect(r).toMatchObject({ text: expected, delivered: 2, done: true, usage: { promptTokens: 11 } });
  });

  it('ignores comments and reads named and multi-line events through the parse', () => {
    const r = run([`: keep-alive\n\ndata: ${events[1]}\n\nevent: x\ndata: ${events[2]}\n\ndata: [DONE]\n\n`]);
    expect(r).toMatchObject({ delivered: 2, done: true });
    expect(r.text).toBe(`data: ${events[1]?.replace('gpt-4o-mini-2024-07-18', 'gpt-4o-mini')}\n\ndata: ${events[2]?.replace('gpt-4o-mini-2024-07-18', 'gpt-4o-mini')}\n\n`);
  });

  it('ends with an error at a malformed event, after the chunks before it', () => {
    const r = run([`data: ${events[1]}\n\ndata: {"simulated": "malform\n\ndata: ${events[2]}\n\n`]);
    expect(r).toMatchObject({ delivered: 1, error: 'the upstream sent a malformed stream event' });
    expect(r.text).toBe(`data: ${events[1]?.replace('gpt-4o-mini-2024-07-18', 'gpt-4o-mini')}\n\n`);
  });

  it('ends with the upstream error event', () => {
    expect(run([`data: ${events[1]}\n\ndata: {"error":{"message":"boom"}}\n\n`])).toMatchObject({ delivered: 1, error: 'boom' });
  });

  it('reads an event left without its blank line at the end', () => {
    expect(run([`data: ${events[1]}\n\ndata: ${events[2]}`])).toMatchObject({ delivered: 2, text: expected.split('\n\n').slice(1, 3).map((e) => `${e}\n\n`).join('') });
  });

  it('ends with an error when a usage count is not a count', () => {
    const bad = chunk([], { usage: { prompt_tokens: -1 } });
    expect(run([`data: ${events[1]}\n\ndata: ${bad}\n\n`]).error).toMatch(/prompt_tokens/);
  });
});
