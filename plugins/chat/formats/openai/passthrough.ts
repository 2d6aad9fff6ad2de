import { parseSseBlock, SseDecoder, type SseEvent } from '../../../../src/sdk.js';
import { guarded } from '../../stream.js';
import type { StreamStep } from '../types.js';
import { replaceModel, scanChunk } from './scan.js';

const CR = 0x0d;

/** The chunk `data` with its top-level `model` replaced (`modelJson` is a JSON string literal). */
export function withModel(data: string, modelJson: string): string {
  const facts = scanChunk(data);
  if (facts) return replaceModel(data, facts.modelAt, modelJson);
  // A chunk the scan leaves to the full parse (it carries usage too): rare, parsed once.
  const chunk = JSON.parse(data) as Record<string, unknown>;
  return 'model' in chunk ? JSON.stringify({ ...chunk, model: JSON.parse(modelJson) as string }) : data;
}

/**
 * The bytes of an OpenAI-format upstream stream going to an OpenAI-format client:
 * each plain `data:` event is forwarded as the upstream wrote it, with only `model`
 * replaced by the requested id, and read only as far as metering needs (the tokens
 * it delivers, by `scanChunk`). Whatever the scan is not sure of — the usage chunk,
 * an error, a malformed or multi-line event — goes to `slow` (the dialect's parse,
 * as for any other stream), and so does the whole rest of a stream that uses CRLF.
 * One step per upstream read, so one write to the client per read.
 */
export function openaiPassthrough(slow: (event: string | undefined, data: string) => StreamStep, modelJson: string): { push(chunk: Uint8Array): StreamStep; end(): StreamStep } {
  const text = new TextDecoder();
  let pending = '';
  let events: SseDecoder | undefined;
  /** `slow`, with a count that is not one (InvalidUsage) ending the stream after the frames before it. */
  const parsed = (event: string | undefined, d: string): StreamStep => guarded(() => slow(event, d));

  const fromEvents = (list: SseEvent[]): StreamStep => {
    const step: StreamStep = { frames: [], deliveredTokens: 0, done: false };
    for (const ev of list) if (!merge(step, parsed(ev.event, ev.data))) break;
    return step;
  };

  /** Adds `s` to `step`; false when it ends the stream with an error. */
  const merge = (step: StreamStep, s: StreamStep): boolean => {
    for (const f of s.frames) step.frames.push(f);
    step.deliveredTokens += s.deliveredTokens;
    if (s.usage) step.usage = s.usage;
    if (s.done) step.done = true;
    if (s.error) step.error = s.error;
    return !s.error;
  };

  /** One event's data: forwarded with the model replaced, or handed to `slow`. */
  const data = (step: StreamStep, out: string[], d: string): boolean => {
    if (d === '[DONE]') {
      step.done = true;
      return true;
    }
    const facts = scanChunk(d);
    if (facts) {
      out.push('data: ', replaceModel(d, facts.modelAt, modelJson), '\n\n');
      step.deliveredTokens += facts.delivered;
      return true;
    }
    flush(step, out);
    return merge(step, parsed(undefined, d));
  };

  const flush = (step: StreamStep, out: string[]): void => {
    if (out.length > 0) step.frames.push(out.join(''));
    out.length = 0;
  };

  /** Events of `buffer` up to its last blank line; returns where the unfinished rest starts. */
  const eachEvent = (step: StreamStep, out: string[], buffer: string, final: boolean): number => {
    let pos = 0;
    while (pos < buffer.length) {
      let end = buffer.indexOf('\n\n', pos);
      if (end < 0) {
        if (!final) break;
        end = buffer.length;
      }
      const ok = buffer.startsWith('data:', pos) && buffer.indexOf('\n', pos) >= end
        ? data(step, out, buffer.slice(pos + (buffer.charCodeAt(pos + 5) === 0x20 ? 6 : 5), end))
        : block(step, out, buffer.slice(pos, end));
      pos = end + 2;
      if (!ok) return buffer.length;
    }
    return pos;
  };

  /** A block that is not one plain `data:` line: comments, named or multi-line events. */
  const block = (step: StreamStep, out: string[], b: string): boolean => {
    const ev = parseSseBlock(b);
    if (!ev) return true;
    if (ev.event === undefined) return data(step, out, ev.data);
    flush(step, out);
    return merge(step, parsed(ev.event, ev.data));
  };

  return {
    push(chunk) {
      if (!events && chunk.includes(CR)) {
        events = new SseDecoder();
        const rest = pending;
        pending = '';
        return fromEvents(events.push(Buffer.from(rest + text.decode(chunk, { stream: true }))));
      }
      // Still decoded by `text`, which may hold the first bytes of a character split across reads.
      if (events) return fromEvents(events.push(Buffer.from(text.decode(chunk, { stream: true }))));
      const buffer = pending + text.decode(chunk, { stream: true });
      const step: StreamStep = { frames: [], deliveredTokens: 0, done: false };
      const out: string[] = [];
      pending = buffer.slice(eachEvent(step, out, buffer, false));
      flush(step, out);
      return step;
    },
    end() {
      if (events) return fromEvents([...events.push(Buffer.from(text.decode())), ...events.end()]);
      const buffer = pending + text.decode();
      pending = '';
      const step: StreamStep = { frames: [], deliveredTokens: 0, done: false };
      if (buffer.trim() === '') return step;
      const out: string[] = [];
      eachEvent(step, out, buffer, true);
      flush(step, out);
      return step;
    },
  };
}
