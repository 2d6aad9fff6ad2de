import { toAnthropicThinking } from '../../reasoning.js';
import { contentText, isObject, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import { argumentsObject, functionDecls, nonFunctionTool, toolCallsOf, toolChoice, toolResultText, type ToolCall } from '../../tools.js';
import { completionObject, type ChatDialect, type ReplyContext, type TranslatedResponse } from '../types.js';
import { mergedTurns, type Turn } from '../turns.js';
import { converseUsage, finishFromConverse, type ConverseUsage } from './common.js';
import { eventStreamDecoder } from './eventstream.js';
import { converseStream } from './stream.js';

/**
 * Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`, and
 * `/converse-stream` in AWS event-stream framing): one shape for every Bedrock chat
 * model (Claude, Llama, Nova, Mistral). Text, system prompts, base64 images, tool use
 * (`toolUse` / `toolResult` blocks ↔ OpenAI `tool_calls` / tool messages) and stop
 * reasons translate both ways; usage comes from `usage` (the stream's `metadata` event).
 */

const REFUSED_FIELDS = ['functions', 'function_call', 'logprobs', 'top_logprobs', 'audio', 'prediction'];
const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };
const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

const imageUrl = (p: Record<string, unknown>): string => (isObject(p.image_url) && typeof p.image_url.url === 'string' ? p.image_url.url : '');

function unsupported(req: ChatRequest): Untranslatable | undefined {
  const b = req.body;
  const field = REFUSED_FIELDS.find((f) => b[f] !== undefined && b[f] !== null && b[f] !== false);
  if (field) return { param: field, message: `${field} cannot be translated for this model's provider (Bedrock Converse)` };
  if (isObject(b.response_format) && b.response_format.type !== 'text') {
    return { param: 'response_format', message: `response_format ${String(b.response_format.type)} cannot be translated for this model's provider (Bedrock Converse has no JSON mode)` };
  }
  if (typeof b.n === 'number' && b.n > 1) return { param: 'n', message: 'n > 1 is not available for this model' };
  const t = nonFunctionTool(b.tools);
  if (t >= 0) return { param: `tools[${t}]`, message: 'only function tools can be translated for this model\'s provider (Bedrock Converse)' };
  for (const [j, m] of b.messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (!isObject(p) || (p.type !== 'text' && p.type !== 'image_url')) return { param: `messages[${j}].content`, message: 'only text and image parts can be translated for this model\'s provider' };
      if (p.type === 'image_url') {
        const mime = DATA_URL.exec(imageUrl(p))?.[1];
        if (!mime || !IMAGE_FORMATS[mime]) return { param: `messages[${j}].content`, message: 'Bedrock takes images as base64 data URLs (png, jpeg, gif or webp), not links' };
      }
    }
  }
  return undefined;
}

type Block = Record<string, unknown>;

/** Content parts as Converse blocks: text (blank text dropped: Bedrock refuses it), images as base64 bytes. */
function blocks(content: unknown): Block[] {
  if (typeof content === 'string') return content.trim() ? [{ text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.filter(isObject).flatMap((p): Block[] => {
    if (p.type === 'image_url') {
      const m = DATA_URL.exec(imageUrl(p));
      return m ? [{ image: { format: IMAGE_FORMATS[m[1] ?? ''] ?? 'png', source: { bytes: m[2] } } }] : [];
    }
    const text = String(p.text ?? '');
    return text.trim() ? [{ text }] : [];
  });
}

/** One message as a Converse turn (none when it has no blocks): tool calls → toolUse blocks, a tool message → a toolResult block in a user turn. */
function converseTurn(m: ChatMessage): Turn<'user' | 'assistant', Block[]> | undefined {
  let turn: Turn<'user' | 'assistant', Block[]>;
  if (m.role === 'user') turn = { role: 'user', content: blocks(m.content) };
  else if (m.role === 'assistant') {
    const calls = toolCallsOf(m).map((c) => ({ toolUse: { toolUseId: c.id, name: c.function.name, input: argumentsObject(c.function.arguments) } }));
    turn = { role: 'assistant', content: [...blocks(m.content ?? ''), ...calls] };
  } else if (m.role === 'tool') {
    const text = toolResultText(m);
    turn = { role: 'user', content: [{ toolResult: { toolUseId: String(m.tool_call_id ?? ''), content: [{ text: text || ' ' }] } }] };
  } else return undefined;
  return turn.content.length > 0 ? turn : undefined;
}

/**
 * `toolConfig`: the functions as toolSpecs; tool_choice required → any, a function → tool
 * (auto is Bedrock's default). Converse has no "none": such a request is sent without its
 * tools, unless the conversation already holds tool calls or results (Bedrock then needs
 * the toolConfig, and the choice is left to the model).
 */
function toolConfig(b: ChatRequest['body']): Record<string, unknown> {
  const decls = functionDecls(b.tools);
  if (decls.length === 0) return {};
  const messages = Array.isArray(b.messages) ? b.messages : [];
  const toolTurns = messages.some((m) => isObject(m) && (m.role === 'tool' || (Array.isArray(m.tool_calls) && m.tool_calls.length > 0)));
  if (toolChoice(b.tool_choice)?.mode === 'none' && !toolTurns) return {};
  const tools = decls.map((d) => ({
    toolSpec: { name: d.name, ...(d.description ? { description: d.description } : {}), inputSchema: { json: d.parameters ?? { type: 'object', properties: {} } } },
  }));
  const choice = toolChoice(b.tool_choice);
  const tc = choice?.mode === 'required' ? { any: {} } : choice?.mode === 'function' ? { tool: { name: choice.name } } : choice?.mode === 'auto' ? { auto: {} } : undefined;
  return { toolConfig: { tools, ...(tc ? { toolChoice: tc } : {}) } };
}

/** The canonical request as a Converse body (the model is in the path). */
function toConverseBody(req: ChatRequest, upstreamModel: string, reasoning: boolean): Record<string, unknown> {
  const b = req.body;
  const system = b.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content)).filter((t) => t.trim());
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop : undefined;
  const inference = {
    ...(req.maxTokens !== undefined ? { maxTokens: req.maxTokens } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(typeof b.top_p === 'number' ? { topP: b.top_p } : {}),
    ...(stop ? { stopSequences: stop } : {}),
  };
  // Claude's extended thinking travels in additionalModelRequestFields, as Anthropic's own `thinking`.
  const thinking = reasoning && req.reasoning && upstreamModel.includes('anthropic.') ? toAnthropicThinking(req.reasoning, req.maxTokens) : undefined;
  return {
    messages: mergedTurns(b.messages, converseTurn, (into, next) => into.concat(next)),
    ...(system.length > 0 ? { system: system.map((text) => ({ text })) } : {}),
    ...(Object.keys(inference).length > 0 ? { inferenceConfig: inference } : {}),
    ...toolConfig(b),
    ...(thinking ? { additionalModelRequestFields: { thinking } } : {}),
  };
}

interface ConverseBlock {
  text?: string;
  toolUse?: { toolUseId?: string; name?: string; input?: unknown };
  reasoningContent?: { reasoningText?: { text?: string } };
}

interface ConverseResponse {
  output?: { message?: { content?: ConverseBlock[] } };
  stopReason?: string;
  usage?: ConverseUsage;
}

function fromConverseResponse(body: string, ctx: ReplyContext): TranslatedResponse {
  const r = JSON.parse(body) as ConverseResponse;
  const content = typeof r === 'object' && r !== null ? r.output?.message?.content : undefined;
  if (!Array.isArray(content)) throw new Error('not a Converse response');
  const text = content.map((c) => c.text ?? '').join('');
  const calls: ToolCall[] = content.filter((c) => c.toolUse)
    .map((c) => ({ id: c.toolUse?.toolUseId ?? '', type: 'function', function: { name: c.toolUse?.name ?? '', arguments: JSON.stringify(c.toolUse?.input ?? {}) } }));
  const reasoning = content.map((c) => c.reasoningContent?.reasoningText?.text ?? '').join('');
  const usage = converseUsage(r.usage);
  return { completion: completionObject(ctx, text, finishFromConverse(r.stopReason), usage, calls, reasoning), usage };
}

export const bedrockConverseDialect: ChatDialect = {
  name: 'bedrock-converse',
  unsupported,
  requestBody: (req, upstreamModel, opts) => JSON.stringify(toConverseBody(req, upstreamModel, opts?.reasoning ?? false)),
  pathVars: (req, upstreamModel) => ({ model: upstreamModel, action: req.stream ? 'converse-stream' : 'converse' }),
  headers: (req) => ({ accept: req.stream ? 'application/vnd.amazon.eventstream' : 'application/json' }),
  response: fromConverseResponse,
  streamTranslator: converseStream,
  eventDecoder: eventStreamDecoder,
};
