import { connect, type Socket } from 'node:net';
import { SseDecoder, type SseEvent } from '../src/lib/sse.js';

/**
 * The four client formats' streams, spoken over plain HTTP as their SDKs speak them, and
 * read back into what a client can check: the text, whether the stream finished
 * (finish reason, usage, terminator) and the error event that ended it, if any.
 */

export interface StreamRead {
  text: string;
  /** The finish reason (or stop reason) the stream gave. */
  finish: string | undefined;
  /** Completion tokens as the stream's usage states them. */
  completionTokens: number | undefined;
  /** The format's last event came last: `[DONE]`, `response.completed`, `message_stop`, or Gemini's final chunk with usage. */
  terminated: boolean;
  /** The error code of an error event. */
  error: string | undefined;
  events: number;
}

export interface StreamFormat {
  name: string;
  /** URL path and body of a streamed request. */
  request(model: string, prompt: string, maxTokens: number, extra?: Record<string, unknown>): { path: string; body: Record<string, unknown> };
  read(events: SseEvent[]): StreamRead;
}

/** Test-side reading of four wire formats: loosely typed on purpose. */
// biome-ignore lint/suspicious/noExplicitAny: the tests read deep into untyped stream event JSON
type Json = Record<string, any>;

const parse = (data: string): Json => JSON.parse(data) as Json;

export const chatFormat: StreamFormat = {
  name: 'chat completions',
  request: (model, prompt, maxTokens, extra) => ({ path: '/v1/chat/completions', body: { model, stream: true, stream_options: { include_usage: true }, max_tokens: maxTokens, messages: [{ role: 'user', content: prompt }], ...extra } }),
  read(events) {
    const r = empty(events);
    for (const [i, e] of events.entries()) {
      if (e.data === '[DONE]') {
        r.terminated = i === events.length - 1;
        continue;
      }
      const d = parse(e.data);
      if (d.error) r.error = d.error.code;
      const choice = d.choices?.[0];
      r.text += choice?.delta?.content ?? '';
      r.finish = choice?.finish_reason ?? r.finish;
      if (d.usage) r.completionTokens = d.usage.completion_tokens;
    }
    return r;
  },
};

export const responsesFormat: StreamFormat = {
  name: 'responses',
  request: (model, prompt, maxTokens, extra) => ({ path: '/v1/responses', body: { model, stream: true, max_output_tokens: maxTokens, input: prompt, ...extra } }),
  read(events) {
    const r = empty(events);
    for (const [i, e] of events.entries()) {
      const d = parse(e.data);
      if (d.type === 'response.output_text.delta') r.text += d.delta;
      if (d.type === 'error') r.error = d.code ?? d.error?.code;
      if (d.type === 'response.completed') {
        r.terminated = i === events.length - 1;
        r.finish = d.response?.status;
        r.completionTokens = d.response?.usage?.output_tokens;
      }
    }
    return r;
  },
};

const messagesFormat: StreamFormat = {
  name: 'messages',
  request: (model, prompt, maxTokens, extra) => ({ path: '/v1/messages', body: { model, stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content: prompt }], ...extra } }),
  read(events) {
    const r = empty(events);
    for (const [i, e] of events.entries()) {
      const d = parse(e.data);
      if (d.type === 'content_block_delta' && d.delta?.type === 'text_delta') r.text += d.delta.text;
      if (d.type === 'error') r.error = d.error?.code;
      if (d.type === 'message_delta') {
        r.finish = d.delta?.stop_reason;
        r.completionTokens = d.usage?.output_tokens;
      }
      if (d.type === 'message_stop') r.terminated = i === events.length - 1;
    }
    return r;
  },
};

export const geminiFormat: StreamFormat = {
  name: 'gemini',
  request: (model, prompt, maxTokens, extra) => ({
    path: `/v1beta/models/${model}:streamGenerateContent?alt=sse`,
    body: { contents: [{ role: 'user', parts: [{ text: prompt }] }], generationConfig: { maxOutputTokens: maxTokens }, ...extra },
  }),
  read(events) {
    const r = empty(events);
    for (const [i, e] of events.entries()) {
      const d = parse(e.data);
      if (d.error) r.error = d.error.details?.[0]?.reason ?? d.error.status;
      const cand = d.candidates?.[0];
      for (const part of cand?.content?.parts ?? []) r.text += part.text ?? '';
      if (cand?.finishReason) r.finish = cand.finishReason;
      if (d.usageMetadata?.candidatesTokenCount !== undefined && cand?.finishReason) {
        r.completionTokens = d.usageMetadata.candidatesTokenCount;
        r.terminated = i === events.length - 1;
      }
    }
    return r;
  },
};

export const STREAM_FORMATS: readonly StreamFormat[] = [chatFormat, responsesFormat, messagesFormat, geminiFormat];

/** One model per upstream dialect the simulator speaks. */
export const DIALECT_MODELS: readonly { dialect: string; model: string }[] = [
  { dialect: 'openai', model: 'gpt-4o-mini' },
  { dialect: 'anthropic', model: 'claude-haiku-4-5' },
  { dialect: 'gemini', model: 'gemini-2.5-flash' },
  // Converse: AWS event-stream frames, decoded by the dialect's own decoder (not SSE).
  { dialect: 'bedrock', model: 'bedrock/claude-haiku-4-5' },
];

function empty(events: SseEvent[]): StreamRead {
  return { text: '', finish: undefined, completionTokens: undefined, terminated: false, error: undefined, events: events.length };
}

/** The number of words of a text (the simulator's tokens). */
export function words(text: string): number {
  return text.split(/\s+/).filter((w) => w.length > 0).length;
}

/** Sends a streamed request with a key the route accepts (Bearer works on every route). */
export function sendStream(url: string, key: string, format: StreamFormat, model: string, prompt: string, maxTokens: number, extra?: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  const { path, body } = format.request(model, prompt, maxTokens, extra);
  return fetch(`${url}${path}`, { method: 'POST', signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
}

/** Reads a response body to its end, optionally pausing `pauseMs` after every read (a slow reader: backpressure). */
export async function readEvents(res: Response, pauseMs = 0): Promise<SseEvent[]> {
  const decoder = new SseDecoder();
  const events: SseEvent[] = [];
  if (!res.body) return events;
  for await (const chunk of res.body) {
    events.push(...decoder.push(chunk as Uint8Array));
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  events.push(...decoder.end());
  return events;
}

/** A streamed request on a raw socket that never reads a byte of the reply; resolves with the request id once the headers were sent. */
export async function neverReads(base: string, key: string, format: StreamFormat, model: string, prompt: string, maxTokens: number): Promise<{ socket: Socket; id: string }> {
  const { path, body } = format.request(model, prompt, maxTokens);
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  const payload = JSON.stringify(body);
  socket.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${key}\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
  // Read only as far as the response head, then stop reading for good.
  const head = await new Promise<string>((resolve, reject) => {
    let text = '';
    socket.on('error', reject);
    socket.on('data', function onData(chunk: Buffer) {
      text += chunk.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      resolve(text);
    });
  });
  socket.on('error', () => undefined);
  const id = /x-request-id: (\S+)/i.exec(head)?.[1];
  if (!id) throw new Error(`no request id in ${head.slice(0, 200)}`);
  return { socket, id };
}
