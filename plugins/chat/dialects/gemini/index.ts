import { estimateTokens, reportedTokens } from '../../../../src/sdk.js';
import { toGeminiThinkingConfig } from '../../reasoning.js';
import { contentText, isObject, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import { argumentsObject, callNames, functionDecls, nonFunctionTool, resultObject, toolCallsOf, toolChoice, toolResultText, type ToolCall } from '../../tools.js';
import {
  callId, chunkJson, completionObject, finishFrom, MALFORMED, NOTHING, parseStreamEvent, toolCallDelta,
  type ChatDialect, type FinishReason, type ReplyContext, type TokenUsage, type TranslatedEvent, type TranslatedResponse,
} from '../types.js';
import { mergedTurns, type Turn } from '../turns.js';

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

const finishReason = finishFrom({
  STOP: 'stop', MAX_TOKENS: 'length', SAFETY: 'content_filter', RECITATION: 'content_filter', BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter', SPII: 'content_filter', IMAGE_SAFETY: 'content_filter', MALFORMED_FUNCTION_CALL: 'stop',
});

const REFUSED_FIELDS = ['functions', 'function_call', 'logprobs', 'top_logprobs', 'audio', 'prediction'];

function unsupported(req: ChatRequest): Untranslatable | undefined {
  const b = req.body;
  const field = REFUSED_FIELDS.find((f) => b[f] !== undefined && b[f] !== null && b[f] !== false);
  if (field) return { param: field, message: `${field} cannot be translated for this model's provider (Gemini); use a model served by an OpenAI-compatible provider` };
  if (typeof b.n === 'number' && b.n > 1) return { param: 'n', message: 'n > 1 is not available for this model' };
  const t = nonFunctionTool(b.tools);
  if (t >= 0) return { param: `tools[${t}]`, message: 'only function tools can be translated for this model\'s provider (Gemini)' };
  for (const [i, m] of b.messages.entries()) {
    if (!Array.isArray(m.content) || m.role === 'tool') continue;
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

type Part = Record<string, unknown>;

function parts(content: unknown): Part[] {
  if (!Array.isArray(content)) return typeof content === 'string' && content ? [{ text: content }] : [];
  return content.filter(isObject).map((p) => {
    const url = isObject(p.image_url) && typeof p.image_url.url === 'string' ? p.image_url.url : undefined;
    const m = url ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
    return m ? { inlineData: { mimeType: m[1], data: m[2] } } : { text: String(p.text ?? '') };
  });
}

/**
 * The conversation as Gemini contents: assistant tool calls → functionCall parts,
 * tool messages → functionResponse parts (named by the call they answer) in a user
 * turn. Consecutive turns of one role are merged, so parallel results travel together.
 */
function geminiContents(messages: readonly ChatMessage[]): Array<{ role: 'user' | 'model'; parts: Part[] }> {
  const names = callNames(messages);
  const turnOf = (m: ChatMessage): Turn<'user' | 'model', Part[]> | undefined => {
    if (m.role === 'user') return { role: 'user', content: parts(m.content) };
    if (m.role === 'assistant') {
      const calls = toolCallsOf(m).map((c) => ({ functionCall: { name: c.function.name, args: argumentsObject(c.function.arguments) } }));
      return { role: 'model', content: [...parts(m.content ?? ''), ...calls] };
    }
    if (m.role === 'tool') {
      const name = names.get(String(m.tool_call_id ?? '')) ?? String(m.name ?? '');
      return { role: 'user', content: [{ functionResponse: { name, response: resultObject(toolResultText(m)) } }] };
    }
    return undefined;
  };
  return mergedTurns(messages, turnOf, (into, next) => into.concat(next))
    .map(({ role, content }) => ({ role, parts: content.length > 0 ? content : [{ text: '' }] }));
}

const CALLING_MODES = { auto: 'AUTO', none: 'NONE', required: 'ANY', function: 'ANY' } as const;

/** `tools` → functionDeclarations (JSON Schema as parametersJsonSchema), `web_search_options` → googleSearch; `tool_choice` → toolConfig. */
function geminiTools(b: ChatRequest['body']): Record<string, unknown> {
  const decls = functionDecls(b.tools);
  // OpenAI's `web_search_options` (a client's web search tool, translated) → Gemini's googleSearch tool.
  const search = isObject(b.web_search_options) ? [{ googleSearch: {} }] : [];
  if (decls.length === 0) return search.length > 0 ? { tools: search } : {};
  const functionDeclarations = decls.map((d) => ({ name: d.name, ...(d.description ? { description: d.description } : {}), ...(d.parameters ? { parametersJsonSchema: d.parameters } : {}) }));
  const choice = toolChoice(b.tool_choice);
  const config = choice ? { functionCallingConfig: { mode: CALLING_MODES[choice.mode], ...(choice.mode === 'function' ? { allowedFunctionNames: [choice.name] } : {}) } } : undefined;
  return { tools: [{ functionDeclarations }, ...search], ...(config ? { toolConfig: config } : {}) };
}

/** `response_format` → responseMimeType (+ responseJsonSchema for json_schema). */
function jsonConfig(format: unknown): Record<string, unknown> {
  if (!isObject(format) || (format.type !== 'json_object' && format.type !== 'json_schema')) return {};
  const schema = format.type === 'json_schema' && isObject(format.json_schema) && isObject(format.json_schema.schema) ? format.json_schema.schema : undefined;
  return { responseMimeType: 'application/json', ...(schema ? { responseJsonSchema: schema } : {}) };
}

/** The canonical request as a Gemini generateContent body. */
function toGeminiBody(req: ChatRequest): Record<string, unknown> {
  const b = req.body;
  const system = b.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop : undefined;
  const config: Record<string, unknown> = {
    ...(req.maxTokens !== undefined ? { maxOutputTokens: req.maxTokens } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(typeof b.top_p === 'number' ? { topP: b.top_p } : {}),
    ...(stop ? { stopSequences: stop } : {}),
    ...(typeof b.presence_penalty === 'number' ? { presencePenalty: b.presence_penalty } : {}),
    ...(typeof b.frequency_penalty === 'number' ? { frequencyPenalty: b.frequency_penalty } : {}),
    ...(typeof b.seed === 'number' ? { seed: b.seed } : {}),
    ...jsonConfig(b.response_format),
    ...(req.reasoning ? { thinkingConfig: toGeminiThinkingConfig(req.reasoning) } : {}),
  };
  return {
    contents: geminiContents(b.messages),
    ...(system.length > 0 ? { systemInstruction: { parts: [{ text: system.join('\n\n') }] } } : {}),
    ...geminiTools(b),
    ...(Object.keys(config).length > 0 ? { generationConfig: config } : {}),
  };
}

interface GeminiPart { text?: string; thought?: boolean; functionCall?: { id?: string; name?: string; args?: unknown } }

interface GeminiResponse {
  candidates?: Array<{ content?: { parts?: GeminiPart[] }; finishReason?: string }>;
  promptFeedback?: { blockReason?: string };
  usageMetadata?: UsageMetadata;
  error?: { message?: string };
}

/** Visible text of the first candidate (thought summaries are not part of the answer). */
function candidateText(r: GeminiResponse): string {
  return (r.candidates?.[0]?.content?.parts ?? []).filter((p) => !p.thought && typeof p.text === 'string').map((p) => p.text).join('');
}

/** Thought summaries of the first candidate (parts with `thought: true`): the reasoning text. */
function candidateThoughts(r: GeminiResponse): string {
  return (r.candidates?.[0]?.content?.parts ?? []).filter((p) => p.thought === true && typeof p.text === 'string').map((p) => p.text).join('');
}

/** The function calls of the first candidate, as canonical tool calls numbered from `first`. */
function candidateCalls(r: GeminiResponse, ctx: ReplyContext, first: number): ToolCall[] {
  const calls = (r.candidates?.[0]?.content?.parts ?? []).filter((p) => p.functionCall);
  return calls.map((p, i) => ({
    id: p.functionCall?.id ?? callId(ctx, first + i), type: 'function',
    function: { name: p.functionCall?.name ?? '', arguments: JSON.stringify(p.functionCall?.args ?? {}) },
  }));
}

/** The finish reason of a response, or undefined while the reply goes on. A blocked prompt ends it at once; a stop after function calls is `tool_calls`. */
function finishOf(r: GeminiResponse, calledTools: boolean): FinishReason | undefined {
  if (r.promptFeedback?.blockReason) return 'content_filter';
  const reason = r.candidates?.[0]?.finishReason;
  if (!reason) return undefined;
  const finish = finishReason(reason);
  return finish === 'stop' && calledTools ? 'tool_calls' : finish;
}

function fromGeminiResponse(body: string, ctx: ReplyContext): TranslatedResponse {
  const r = JSON.parse(body) as GeminiResponse;
  if (typeof r !== 'object' || r === null || (!Array.isArray(r.candidates) && !r.promptFeedback)) throw new Error('not a Gemini response');
  const usage = geminiUsage(r.usageMetadata);
  const calls = candidateCalls(r, ctx, 0);
  return { completion: completionObject(ctx, candidateText(r), finishOf(r, calls.length > 0) ?? 'stop', usage, calls, candidateThoughts(r)), usage };
}

/** `alt=sse` events (each a whole GenerateContentResponse, no names, no [DONE]) → canonical chunks. */
function geminiStream(ctx: ReplyContext): { onEvent(event: string | undefined, data: string): TranslatedEvent } {
  let started = false;
  let candidatesSoFar = 0;
  let toolCalls = 0;
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
      const thoughts = candidateThoughts(r);
      if (thoughts) chunks.push(chunkJson(ctx, { reasoning_content: thoughts }, null));
      if (text) chunks.push(chunkJson(ctx, { content: text }, null));
      // Gemini sends each function call whole: one delta carries its name and all its arguments.
      for (const call of candidateCalls(r, ctx, toolCalls)) {
        chunks.push(chunkJson(ctx, toolCallDelta(toolCalls++, { id: call.id, name: call.function.name, arguments: call.function.arguments }), null));
      }
      const finish = finishOf(r, toolCalls > 0);
      if (finish) chunks.push(chunkJson(ctx, {}, finish));
      // usageMetadata counts are cumulative: their growth is exactly what this event delivered.
      // Thinking tokens are output too: a stream cut short is billed for the thoughts it delivered.
      const m = r.usageMetadata;
      const candidates = typeof m?.candidatesTokenCount === 'number' ? m.candidatesTokenCount + (typeof m.thoughtsTokenCount === 'number' ? m.thoughtsTokenCount : 0) : undefined;
      const delivered = candidates !== undefined ? Math.max(0, candidates - candidatesSoFar) : estimateTokens(text + thoughts);
      if (candidates !== undefined) candidatesSoFar = Math.max(candidatesSoFar, candidates);
      return { chunks, usage, deliveredTokens: delivered, done: finish !== undefined };
    },
  };
}

/**
 * Gemini API generateContent / streamGenerateContent (`?alt=sse`). A request that
 * arrived on the gateway's own Gemini endpoint goes upstream untouched.
 */
export const geminiDialect: ChatDialect = {
  name: 'gemini',
  unsupported,
  // A request from the Gemini-native endpoint goes as the client wrote it (the model is in the path).
  requestBody: (req) => JSON.stringify(req.native?.format === 'gemini' ? req.native.body : toGeminiBody(req)),
  pathVars: (req, upstreamModel) => ({ model: upstreamModel, action: req.stream ? 'streamGenerateContent' : 'generateContent' }),
  query: (req): Record<string, string> => (req.stream ? { alt: 'sse' } : {}),
  response: fromGeminiResponse,
  streamTranslator: geminiStream,
};
