import { GatewayError, invalidField } from '../../../../src/sdk.js';
import { isObject, MAX_CHOICES, promptText, promptTokenBound, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import type { ParseInput } from '../types.js';
import { fromGemini } from '../../reasoning.js';

/** The Gemini API methods this format serves. */
const ACTIONS = new Set(['generateContent', 'streamGenerateContent']);
const WHY_NATIVE = 'can only be served by a Gemini model';

/** `{model}:{action}` from the path after `/models/`. */
export function modelAction(target: string): { model: string; action: string } {
  const colon = target.lastIndexOf(':');
  const model = colon > 0 ? decodeURIComponent(target.slice(0, colon)).replace(/^models\//, '') : '';
  const action = colon > 0 ? target.slice(colon + 1) : '';
  if (!model || !ACTIONS.has(action)) {
    throw new GatewayError('route_not_found', ['POST', `/models/${target} (this gateway serves models/{model}:generateContent and :streamGenerateContent)`]);
  }
  return { model, action };
}

interface Part {
  text?: unknown; thought?: unknown; inlineData?: { mimeType?: unknown; data?: unknown };
  functionCall?: { id?: unknown; name?: unknown; args?: unknown }; functionResponse?: { id?: unknown; name?: unknown; response?: unknown };
}

/** Gemini's OpenAPI-style schema (`type: "OBJECT"`) as JSON Schema (lower-case types), recursively. */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isObject(schema)) return schema;
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'type' && typeof v === 'string' ? v.toLowerCase() : jsonSchemaOf(v)]));
}

/**
 * Ids for function calls and the responses that answer them: Gemini pairs them by
 * name (ids are optional), the canonical form by id. A call without an id gets one;
 * a response without one takes the earliest unanswered call of its name.
 */
class CallIds {
  private readonly pending = new Map<string, string[]>();
  private n = 0;

  call(name: string, given: unknown): string {
    const id = typeof given === 'string' && given ? given : `call_${this.n++}_${name}`;
    this.pending.set(name, [...(this.pending.get(name) ?? []), id]);
    return id;
  }

  response(name: string, given: unknown): string {
    const queue = this.pending.get(name) ?? [];
    if (typeof given === 'string' && given) {
      this.pending.set(name, queue.filter((id) => id !== given));
      return given;
    }
    const id = queue.shift() ?? `call_${this.n++}_${name}`;
    this.pending.set(name, queue);
    return id;
  }
}

/** One Gemini content as canonical messages (function responses as tool messages, calls as tool_calls). */
function canonicalMessages(role: string, parts: Part[], ids: CallIds): ChatMessage[] {
  const out: ChatMessage[] = [];
  const content: Array<Record<string, unknown>> = [];
  const calls: Array<Record<string, unknown>> = [];
  for (const p of parts) {
    if (p.thought === true) continue;
    if (typeof p.text === 'string') content.push({ type: 'text', text: p.text });
    else if (p.inlineData) content.push({ type: 'image_url', image_url: { url: `data:${String(p.inlineData.mimeType)};base64,${String(p.inlineData.data)}` } });
    else if (p.functionCall) {
      const name = String(p.functionCall.name ?? '');
      calls.push({ id: ids.call(name, p.functionCall.id), type: 'function', function: { name, arguments: JSON.stringify(p.functionCall.args ?? {}) } });
    } else if (p.functionResponse) {
      const name = String(p.functionResponse.name ?? '');
      out.push({ role: 'tool', tool_call_id: ids.response(name, p.functionResponse.id), name, content: JSON.stringify(p.functionResponse.response ?? {}) });
    }
  }
  const canonicalRole = role === 'model' ? 'assistant' : 'user';
  if (calls.length > 0) out.push({ role: 'assistant', content: promptText([content]) || null, tool_calls: calls });
  else if (content.length > 0) out.push({ role: canonicalRole, content });
  return out;
}

/** What the canonical form cannot carry (server tools, files, code execution, non-image media): served only by a Gemini provider. */
function untranslatable(body: Record<string, unknown>, contents: Array<{ parts: Part[] }>): Untranslatable | undefined {
  if (body.cachedContent !== undefined) return { param: 'cachedContent', message: `cachedContent ${WHY_NATIVE}` };
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const t = tools.findIndex((x) => !isObject(x) || Object.keys(x).some((k) => k !== 'functionDeclarations'));
  if (t >= 0) return { param: `tools[${t}]`, message: `tools other than functionDeclarations ${WHY_NATIVE}` };
  for (const [i, c] of contents.entries()) {
    for (const [j, p] of c.parts.entries()) {
      const known = typeof p.text === 'string' || p.functionCall || p.functionResponse || (p.inlineData && String(p.inlineData.mimeType).startsWith('image/'));
      if (!known) return { param: `contents[${i}].parts[${j}]`, message: `this kind of part ${WHY_NATIVE} (text, images, function calls and responses translate)` };
    }
  }
  return undefined;
}

/** generationConfig → the OpenAI fields it maps to. */
function canonicalConfig(config: Record<string, unknown>): Record<string, unknown> {
  const num = (k: string): number | undefined => (typeof config[k] === 'number' ? (config[k] as number) : undefined);
  const schema = config.responseJsonSchema ?? (config.responseSchema !== undefined ? jsonSchemaOf(config.responseSchema) : undefined);
  const json = config.responseMimeType === 'application/json'
    ? { response_format: isObject(schema) ? { type: 'json_schema', json_schema: { name: 'response', schema } } : { type: 'json_object' } } : {};
  const out: Record<string, unknown> = {
    max_tokens: num('maxOutputTokens'), temperature: num('temperature'), top_p: num('topP'), n: num('candidateCount'),
    presence_penalty: num('presencePenalty'), frequency_penalty: num('frequencyPenalty'), seed: num('seed'),
    stop: Array.isArray(config.stopSequences) ? config.stopSequences : undefined,
    logprobs: config.responseLogprobs === true ? true : undefined,
    ...json,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

function canonicalTools(body: Record<string, unknown>): Record<string, unknown> {
  const decls = (Array.isArray(body.tools) ? body.tools : []).filter(isObject).flatMap((t) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : [])).filter(isObject);
  if (decls.length === 0) return {};
  const tools = decls.map((d) => ({
    type: 'function',
    function: {
      name: String(d.name ?? ''), ...(typeof d.description === 'string' ? { description: d.description } : {}),
      parameters: d.parametersJsonSchema ?? (d.parameters !== undefined ? jsonSchemaOf(d.parameters) : { type: 'object', properties: {} }),
    },
  }));
  const fc = isObject(body.toolConfig) && isObject(body.toolConfig.functionCallingConfig) ? body.toolConfig.functionCallingConfig : {};
  const allowed = Array.isArray(fc.allowedFunctionNames) ? fc.allowedFunctionNames : [];
  let choice: unknown;
  if (fc.mode === 'NONE') choice = 'none';
  else if (fc.mode === 'ANY') choice = allowed.length === 1 ? { type: 'function', function: { name: String(allowed[0]) } } : 'required';
  else if (fc.mode === 'AUTO') choice = 'auto';
  return { tools, ...(choice ? { tool_choice: choice } : {}) };
}

function validateContents(contents: unknown): asserts contents is Array<{ role?: string; parts: Part[] }> {
  if (!Array.isArray(contents) || contents.length === 0) throw invalidField('contents', 'contents must be a non-empty array of {role, parts}');
  contents.forEach((c, i) => {
    if (!isObject(c) || !Array.isArray(c.parts)) throw invalidField(`contents[${i}]`, `contents[${i}] must be an object with a parts array`);
    if (c.role !== undefined && c.role !== 'user' && c.role !== 'model') throw invalidField(`contents[${i}].role`, `contents[${i}].role must be "user" or "model"`);
    c.parts.forEach((p, j) => {
      if (!isObject(p)) throw invalidField(`contents[${i}].parts[${j}]`, 'a part must be an object');
    });
  });
}

/** Proto field names Google also accepts for the camelCase fields the output bound is read from. */
const PROTO_NAMES: Readonly<Record<string, string>> = { max_output_tokens: 'maxOutputTokens', candidate_count: 'candidateCount' };

/**
 * Google's JSON parser takes a field's proto name (`generation_config`, `max_output_tokens`)
 * as well as its camelCase one, and a Gemini model gets the body as sent: a bound the gateway
 * did not read could reach it beside, or instead of, the one reserved for. Those spellings are
 * refused (400 naming the field), so the bound read is the only one the upstream can honour.
 */
function refuseProtoNames(body: Record<string, unknown>, config: Record<string, unknown>): void {
  if (body.generation_config !== undefined) throw invalidField('generation_config', 'write generation_config as generationConfig (the gateway reads the output bound from the camelCase fields)');
  for (const [proto, camel] of Object.entries(PROTO_NAMES)) {
    if (config[proto] !== undefined) throw invalidField(`generationConfig.${proto}`, `write ${proto} as ${camel} (the gateway reads the output bound from the camelCase fields)`);
  }
}

/**
 * Validates a Gemini API generateContent request (model and method from the path) and
 * gives it in canonical form too, so any chat model can serve it. Every failure names
 * its field (400).
 */
export function parseGeminiRequest(input: ParseInput): ChatRequest {
  const { model, action } = modelAction(String(input.params['*'] ?? ''));
  const body = input.body;
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  const stream = action === 'streamGenerateContent';
  if (stream && input.query.alt !== 'sse') throw invalidField('alt', 'streamGenerateContent is served as server-sent events only: add ?alt=sse');
  validateContents(body.contents);
  const config = body.generationConfig ?? {};
  if (!isObject(config)) throw invalidField('generationConfig', 'generationConfig must be an object');
  refuseProtoNames(body, config);
  const max = config.maxOutputTokens;
  if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 1)) throw invalidField('generationConfig.maxOutputTokens', 'maxOutputTokens must be an integer of at least 1');
  // Each candidate may write the whole bound: the reservation is for all of them (`n` translated).
  const candidates = config.candidateCount;
  if (candidates !== undefined && (typeof candidates !== 'number' || !Number.isInteger(candidates) || candidates < 1 || candidates > MAX_CHOICES)) {
    throw invalidField('generationConfig.candidateCount', `candidateCount must be an integer from 1 to ${MAX_CHOICES}`);
  }
  if (body.tools !== undefined && !Array.isArray(body.tools)) throw invalidField('tools', 'tools must be an array');
  const system = isObject(body.systemInstruction) && Array.isArray(body.systemInstruction.parts) ? promptText([body.systemInstruction.parts]) : '';
  const ids = new CallIds();
  const messages: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const c of body.contents) messages.push(...canonicalMessages(c.role ?? 'user', c.parts, ids));
  const reasoning = fromGemini(config.thinkingConfig);
  const canonical = { model, messages, ...canonicalConfig(config), ...canonicalTools(body), ...(stream ? { stream: true } : {}) };
  return {
    model,
    body: canonical,
    stream,
    includeUsage: false,
    maxTokens: typeof max === 'number' ? max : undefined,
    choices: typeof candidates === 'number' ? candidates : 1,
    prompt: promptText([system, ...body.contents.map((c) => c.parts)]),
    promptBound: promptTokenBound([body.systemInstruction ?? null, body.contents], body.tools ?? null, input.text),
    native: { format: 'gemini', body, headers: {} },
    ...(reasoning ? { reasoning } : {}),
    untranslatable: untranslatable(body, body.contents),
  };
}
