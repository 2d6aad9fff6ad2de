import { formatSse } from '../../../../src/sdk.js';
import { openaiUsage } from '../../dialects/openai/index.js';
import { completionText } from '../../dialects/types.js';
import { formatWithMaxTokensHint } from '../../max-tokens-hint.js';
import { usageObject } from '../../metering.js';
import { passReply } from '../reply-scan.js';
import type { ClientFormat, StreamStep } from '../types.js';
import { openaiPassthrough, withModel } from './passthrough.js';
import { parseChatRequest } from './validate.js';

/** An OpenAI-dialect reply as the OpenAI dialect's `response` and `render` would give it, spliced into the upstream's text. */
const passedOpenAI = passReply<Record<string, unknown>>({
  list: 'choices',
  usage: openaiUsage,
  withCost: (upstream, u, c) => Object.assign(upstream, usageObject(u, c)),
});

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
  formatError: formatWithMaxTokensHint,
  parse: (input) => parseChatRequest(input.body, input.text),
  codec(dialect, req, ctx) {
    return {
      response(body) {
        const { completion, usage } = dialect.response(body, ctx);
        return {
          usage,
          text: completionText(completion),
          render(u, c) {
            // The completion is this reply's own (the dialect's fresh parse): its usage is completed in place.
            completion.usage = Object.assign(asRecord(completion.usage), usageObject(u, c));
            return completion;
          },
        };
      },
      ...(dialect.name === 'openai' ? { passthrough: (body: string) => passedOpenAI(body, JSON.stringify(ctx.requestedModel)) } : {}),
      stream() {
        const translator = dialect.streamTranslator(ctx);
        // An OpenAI-dialect upstream's chunks are its own, with its model id: the client gets the id it asked for.
        const passthrough = dialect.name === 'openai';
        const modelJson = JSON.stringify(ctx.requestedModel);
        let usageChunk: Record<string, unknown> | undefined;
        const onEvent = (event: string | undefined, data: string): StreamStep => {
          const t = translator.onEvent(event, data);
          if (t.usageChunk) usageChunk = t.usageChunk;
          const frames = t.chunks.map((c) => formatSse(passthrough ? withModel(c, modelJson) : c));
          return { frames, usage: t.usage, deliveredTokens: t.deliveredTokens, done: t.done, error: t.error };
        };
        return {
          onEvent,
          ...(passthrough ? { bytes: openaiPassthrough(onEvent, modelJson) } : {}),
          finish(u, c) {
            const frames: string[] = [];
            if (req.includeUsage) {
              const base = usageChunk ?? { id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.requestedModel, choices: [] };
              frames.push(formatSse(JSON.stringify({ ...base, model: ctx.requestedModel, usage: { ...asRecord(base.usage), ...usageObject(u, c) } })));
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
