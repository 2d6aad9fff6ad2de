import { formatSse } from '../../../../src/sdk.js';
import { completionText } from '../../dialects/types.js';
import { usageObject } from '../../metering.js';
import type { ClientFormat } from '../types.js';
import { parseChatRequest } from './validate.js';

const asRecord = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

/**
 * The OpenAI chat format (`/v1/chat/completions`): canonical chunks go out as they
 * are; the usage chunk (when the client asked for it) and every reply's `usage` carry
 * the gateway's cost fields; a stream ends with `[DONE]`, or with an error event.
 */
export const openaiFormat: ClientFormat = {
  name: 'openai',
  urls: ['/v1/chat/completions'],
  nativeDialect: 'openai',
  parse: (input) => parseChatRequest(input.body),
  codec(dialect, req, ctx) {
    return {
      response(body) {
        const { completion, usage } = dialect.response(body, ctx);
        return {
          usage,
          text: completionText(completion),
          render: (u, c) => ({ ...completion, usage: { ...asRecord(completion.usage), ...usageObject(u, c) } }),
        };
      },
      stream() {
        const translator = dialect.streamTranslator(ctx);
        let usageChunk: Record<string, unknown> | undefined;
        return {
          onEvent(event, data) {
            const t = translator.onEvent(event, data);
            if (t.usageChunk) usageChunk = t.usageChunk;
            return { frames: t.chunks.map((c) => formatSse(c)), usage: t.usage, deliveredTokens: t.deliveredTokens, done: t.done, error: t.error };
          },
          finish(u, c) {
            const frames: string[] = [];
            if (req.includeUsage) {
              const base = usageChunk ?? { id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.requestedModel, choices: [] };
              frames.push(formatSse(JSON.stringify({ ...base, usage: { ...asRecord(base.usage), ...usageObject(u, c) } })));
            }
            frames.push(formatSse('[DONE]'));
            return frames;
          },
          fail: (err) => [formatSse(JSON.stringify(err.toBody()))],
        };
      },
    };
  },
};
