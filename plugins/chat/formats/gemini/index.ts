import { formatSse } from '../../../../src/sdk.js';
import { completionText, parseStreamEvent, type ReplyContext } from '../../dialects/types.js';
import { geminiDialect } from '../../dialects/gemini/index.js';
import type { ChatCodec, ClientFormat, StreamStep } from '../types.js';
import { formatGeminiError, geminiEncoder, geminiFromCompletion, geminiUsageObject } from './encode.js';
import { parseGeminiRequest } from './parse.js';
import { translatedCodec } from '../translate.js';

const errorFrame = (body: unknown): string => formatSse(JSON.stringify(body));

/**
 * Gemini in, Gemini out: the provider's reply is forwarded as it came, its
 * usageMetadata gaining the gateway's cost fields. On streams the event that carries
 * the finish reason is held back and sent last, with the billed usage and cost; the
 * gemini dialect's translation of each event does the accounting.
 */
function nativeGeminiCodec(ctx: ReplyContext): ChatCodec {
  return {
    response(body) {
      const translated = geminiDialect.response(body, ctx);
      const r = JSON.parse(body) as Record<string, unknown> & { usageMetadata?: object };
      return {
        usage: translated.usage,
        text: completionText(translated.completion),
        render: (u, c) => ({ ...r, usageMetadata: { ...r.usageMetadata, ...geminiUsageObject(u, c) } }),
      };
    },
    stream() {
      const translator = geminiDialect.streamTranslator(ctx);
      let held: (Record<string, unknown> & { usageMetadata?: object }) | undefined;
      return {
        onEvent(event, data): StreamStep {
          const t = translator.onEvent(event, data);
          const base = { usage: t.usage, deliveredTokens: t.deliveredTokens, done: t.done, error: t.error };
          if (t.error) return { ...base, frames: [] };
          if (t.done) {
            held = parseStreamEvent(data);
            return { ...base, frames: [] };
          }
          return { ...base, frames: [formatSse(data)] };
        },
        finish(u, c) {
          const last = held ?? {};
          return [formatSse(JSON.stringify({ ...last, usageMetadata: { ...last.usageMetadata, ...geminiUsageObject(u, c) } }))];
        },
        fail: (err) => [errorFrame(formatGeminiError(err))],
      };
    },
  };
}

/** Canonical field names a provider may refuse, in the Gemini request's terms. */
const CLIENT_PARAMS: Readonly<Record<string, string>> = {
  response_format: 'generationConfig.responseMimeType', n: 'generationConfig.candidateCount', logprobs: 'generationConfig.responseLogprobs',
};

/**
 * The Gemini API (`POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`,
 * and the same under `/v1/`), so @google/genai users change only `baseUrl`. The key
 * comes as `x-goog-api-key` (what the SDK sends), Bearer, or `?key=` (Google's REST
 * examples; redacted in the server log, a header wins). A Gemini model gets the
 * request untouched; any other is translated through the canonical form.
 */
export const geminiFormat: ClientFormat = {
  name: 'gemini',
  urls: ['/v1beta/models/*', '/v1/models/*'],
  keyHeaders: ['x-goog-api-key'],
  keyQuery: ['key'],
  formatError: formatGeminiError,
  nativeDialect: 'gemini',
  parse: parseGeminiRequest,
  clientParam: (p) => CLIENT_PARAMS[p] ?? (p.startsWith('messages[') ? 'contents' : p),
  codec(dialect, req, ctx) {
    if (dialect.name === 'gemini' && req.native?.format === 'gemini') return nativeGeminiCodec(ctx);
    return translatedCodec(dialect, ctx, {
      render: (completion, text, u, c) => geminiFromCompletion(completion, text, ctx, u, c),
      encoder: () => ({ ...geminiEncoder(ctx), fail: (err) => [errorFrame(formatGeminiError(err))] }),
    });
  },
};
