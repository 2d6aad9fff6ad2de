import { estimateTokens, reportedTokens } from '../../../../src/sdk.js';
import { contentText, isObject, type ChatRequest, type Untranslatable } from '../../request.js';
import {
  chunkJson, completionObject, MALFORMED, NOTHING, parseStreamEvent,
  type ChatDialect, type FinishReason, type ReplyContext, type TokenUsage, type TranslatedEvent, type TranslatedResponse,
} from '../types.js';

interface UsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  cachedContentTokenCount?: number;
}

/**
 * Gemini usage in the gateway's terms: thinking tokens are billed as output (they are
 * priced as output tokens), tool-use prompt tokens as input; cached content tokens are
 * part of promptTokenCount and priced as input_cache_read.
 */
export function geminiUsage(m: UsageMetadata | null | undefined): TokenUsage | undefined {
  const prompt = reportedTokens(m?.promptTokenCount, 'usageMetadata.promptTokenCount');
  if (!m || prompt === undefined) return undefined;
  const count = (field: keyof UsageMetadata): number => reportedTokens(m[field], `usageMetadata.${field}`) ?? 0;
  return {
    promptTokens: prompt + count('toolUsePromptTokenCount'),
    completionTokens: count('candidatesTokenCount') + count('thoughtsTokenCount'),
    cachedTokens: count('cachedContentTokenCount'),
    ...(count('thoughtsTokenCount') ? { reasoningTokens: count('thoughtsTokenCount') } : {}),
  };
}

const FINISH: Readonly<Record<string, FinishReason>> = {
  STOP: 'stop', MAX_TOKENS: 'length', SAFETY: 'content_filter', RECITATION: 'content_filter', BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter', SPII: 'content_filter', IMAGE_SAFETY: 'content_filter', MALFORMED_FUNCTION_CALL: 'stop',
};

function finishReason(reason: string | undefined): FinishReason {
  return (reason ? FINISH[reason] : undefined) ?? 'stop';
}

const REFUSED_FIELDS = ['tools', 'tool_choice', 'functions', 'function_call', 'logprobs', 'audio', 'prediction'];

function unsupported(req: ChatRequest): Untranslatable | undefined {
  const b = req.body;
  const field = REFUSED_FIELDS.find((f) => b[f] !== undefined && b[f] !== null && b[f] !== false);
  if (field) return { param: field, message: `${field} cannot be translated for this model's provider (Gemini); use a model served by an OpenAI-compatible provider` };
  if (typeof b.n === 'number' && b.n > 1) return { param: 'n', message: 'n > 1 is not available for this model' };
  if (isObject(b.response_format) && b.response_format.type === 'json_schema') return { param: 'response_format', message: 'json_schema response formats cannot be translated for Gemini; use json_object' };
  for (const [i, m] of b.messages.entries()) {
    if (m.role === 'tool' || m.role === 'function' || m.tool_calls !== undefined) return { param: `messages[${i}]`, message: 'tool messages cannot be translated for this model\'s provider (Gemini)' };
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (!isObject(p) || p.type === 'text') continue;
      const url = isObject(p.image_url) ? p.image_url.url : undefined;
      if (p.type !== 'image_url' || typeof url !== 'string' || !url.startsWith('data:')) {
        return { param: `messages[${i}].content`, message: 'only text parts and images given as data: URLs can be translated for Gemini' };
      }
    }
  }
  return undefined;
}

function parts(content: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(content)) return [{ text: typeof content === 'string' ? content : '' }];
  return content.filter(isObject).map((p) => {
    const url = isObject(p.image_url) && typeof p.image_url.url === 'string' ? p.image_url.url : undefined;
    const m = url ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
    return m ? { inlineData: { mimeType: m[1], data: m[2] } } : { text: String(p.text ?? '') };
  });
}

/** The canonical request as a Gemini generateContent body. */
export function toGeminiBody(req: ChatRequest): Record<string, unknown> {
  const b = req.body;
  const system = b.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content));
  const contents = b.messages.filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: parts(m.content) }));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop : undefined;
  const json = isObject(b.response_format) && b.response_format.type === 'json_object';
  const config: Record<string, unknown> = {
    ...(req.maxTokens !== undefined ? { maxOutputTokens: req.maxTokens } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(typeof b.top_p === 'number' ? { topP: b.top_p } : {}),
    ...(stop ? { stopSequences: stop } : {}),
    ...(typeof b.presence_penalty === 'number' ? { presencePenalty: b.presence_penalty } : {}),
    ...(typeof b.frequency_penalty === 'number' ? { frequencyPenalty: b.frequency_penalty } : {}),
    ...(typeof b.seed === 'number' ? { seed: b.seed } : {}),
    ...(json ? { responseMimeType: 'application/json' } : {}),
  };
  return {
    contents,
    ...(system.length > 0 ? { systemInstruction: { parts: [{ text: system.join('\n\n') }] } } : {}),
    ...(Object.keys(config).length > 0 ? { generationConfig: config } : {}),
  };
}

interface GeminiResponse {
  candidates?: Array<{ content?: { parts?: Array<{ text?: string; thought?: boolean }> }; finishReason?: string }>;
  promptFeedback?: { blockReason?: string };
  usageMetadata?: UsageMetadata;
  error?: { message?: string };
}

/** Visible text of the first candidate (thought summaries are not part of the answer). */
function candidateText(r: GeminiResponse): string {
  return (r.candidates?.[0]?.content?.parts ?? []).filter((p) => !p.thought && typeof p.text === 'string').map((p) => p.text).join('');
}

/** The finish reason of a response, or undefined while the reply goes on. A blocked prompt ends it at once. */
function finishOf(r: GeminiResponse): FinishReason | undefined {
  if (r.promptFeedback?.blockReason) return 'content_filter';
  const reason = r.candidates?.[0]?.finishReason;
  return reason ? finishReason(reason) : undefined;
}

function fromGeminiResponse(body: string, ctx: ReplyContext): TranslatedResponse {
  const r = JSON.parse(body) as GeminiResponse;
  if (typeof r !== 'object' || r === null || (!Array.isArray(r.candidates) && !r.promptFeedback)) throw new Error('not a Gemini response');
  const usage = geminiUsage(r.usageMetadata);
  return { completion: completionObject(ctx, candidateText(r), finishOf(r) ?? 'stop', usage), usage };
}

/** `alt=sse` events (each a whole GenerateContentResponse, no names, no [DONE]) → canonical chunks. */
function geminiStream(ctx: ReplyContext): { onEvent(event: string | undefined, data: string): TranslatedEvent } {
  let started = false;
  let candidatesSoFar = 0;
  return {
    onEvent(_event, data): TranslatedEvent {
      const r = parseStreamEvent<GeminiResponse>(data);
      if (!r) return MALFORMED;
      if (r.error) return { ...NOTHING, error: r.error.message ?? 'upstream error' };
      const chunks: string[] = [];
      const text = candidateText(r);
      // First, so that a count that is not one (InvalidUsage) ends the stream before any of it is used.
      const usage = geminiUsage(r.usageMetadata);
      if (!started) {
        chunks.push(chunkJson(ctx, { role: 'assistant', content: '' }, null));
        started = true;
      }
      if (text) chunks.push(chunkJson(ctx, { content: text }, null));
      const finish = finishOf(r);
      if (finish) chunks.push(chunkJson(ctx, {}, finish));
      // usageMetadata counts are cumulative: their growth is exactly what this event delivered.
      const candidates = r.usageMetadata?.candidatesTokenCount;
      const delivered = typeof candidates === 'number' ? Math.max(0, candidates - candidatesSoFar) : estimateTokens(text);
      if (typeof candidates === 'number') candidatesSoFar = Math.max(candidatesSoFar, candidates);
      return { chunks, usage, deliveredTokens: delivered, done: finish !== undefined };
    },
  };
}

/** Gemini API generateContent / streamGenerateContent (`?alt=sse`). */
export const geminiDialect: ChatDialect = {
  name: 'gemini',
  unsupported,
  requestBody: (req) => JSON.stringify(toGeminiBody(req)),
  pathVars: (req, upstreamModel) => ({ model: upstreamModel, action: req.stream ? 'streamGenerateContent' : 'generateContent' }),
  query: (req): Record<string, string> => (req.stream ? { alt: 'sse' } : {}),
  response: fromGeminiResponse,
  streamTranslator: geminiStream,
};
