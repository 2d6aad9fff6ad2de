import { invalidField } from '../../../../src/sdk.js';
import { contentText, isObject, promptText, promptTokenBound, type ChatMessage, type ChatRequest, type Untranslatable } from '../../request.js';
import { flatName, type UnsupportedParam } from '../../unsupported.js';
import { fromResponses } from '../../reasoning.js';

/**
 * OpenAI Responses API requests (`POST /v1/responses`): validation (400 naming the
 * field) and translation of the input items to the canonical chat form. The input
 * given here is already resolved (previous_response_id and item references expanded,
 * history.ts).
 */

const ROLES = new Set(['user', 'system', 'developer', 'assistant']);
const CHOICES = new Set(['auto', 'none', 'required']);
const FORMATS = new Set(['text', 'json_object', 'json_schema']);
const WHY_NATIVE = 'can only be served by a model whose provider speaks the Responses API (OpenAI)';

export type Item = Record<string, unknown>;

/** The type of an input item; a bare `{role, content}` is a message. */
export const itemType = (item: Item): string => (typeof item.type === 'string' ? item.type : 'message');

function validateContent(content: unknown, param: string): void {
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) throw invalidField(param, `${param} must be a string or an array of content parts`);
  content.forEach((p, j) => {
    if (!isObject(p) || typeof p.type !== 'string') throw invalidField(`${param}[${j}]`, `${param}[${j}] must be a content part with a type`);
    if ((p.type === 'input_text' || p.type === 'output_text') && typeof p.text !== 'string') throw invalidField(`${param}[${j}].text`, 'a text part needs a string text');
  });
}

function validateItem(item: unknown, i: number): void {
  const param = `input[${i}]`;
  if (!isObject(item)) throw invalidField(param, `${param} must be an object (a message or an item with a type)`);
  const type = itemType(item);
  const need = (field: string): void => {
    if (typeof item[field] !== 'string') throw invalidField(`${param}.${field}`, `${param}.${field} must be a string`);
  };
  if (type === 'message') {
    if (typeof item.role !== 'string' || !ROLES.has(item.role)) throw invalidField(`${param}.role`, `${param}.role must be one of ${[...ROLES].join(', ')}`);
    validateContent(item.content, `${param}.content`);
  } else if (type === 'function_call') {
    need('call_id');
    need('name');
    need('arguments');
  } else if (type === 'function_call_output') {
    need('call_id');
    if (typeof item.output !== 'string') validateContent(item.output, `${param}.output`);
  } else if (type === 'item_reference') need('id');
  else if (type === 'additional_tools') validateTools(item.tools, `${param}.tools`);
  if (type === 'function_call' && item.namespace !== undefined && item.namespace !== null) need('namespace');
}

function optionalType(body: Item, field: string, type: 'string' | 'boolean' | 'number'): void {
  const v = body[field];
  if (v !== undefined && v !== null && typeof v !== type) throw invalidField(field, `${field} must be a ${type}`);
}

function validateTools(tools: unknown, param = 'tools'): void {
  if (tools === undefined || tools === null) return;
  if (!Array.isArray(tools)) throw invalidField(param, `${param} must be an array`);
  tools.forEach((t, i) => {
    if (!isObject(t) || typeof t.type !== 'string') throw invalidField(`${param}[${i}]`, `${param}[${i}] must be an object with a type`);
    if (t.type === 'function' && (typeof t.name !== 'string' || t.name === '')) throw invalidField(`${param}[${i}].name`, 'a function tool needs a name');
    if (t.type === 'namespace') {
      if (typeof t.name !== 'string' || t.name === '') throw invalidField(`${param}[${i}].name`, 'a namespace tool needs a name');
      validateTools(t.tools ?? [], `${param}[${i}].tools`);
    }
  });
}

function validateText(text: unknown): void {
  if (text === undefined || text === null) return;
  if (!isObject(text)) throw invalidField('text', 'text must be an object');
  const f = text.format;
  if (f === undefined) return;
  if (!isObject(f) || typeof f.type !== 'string' || !FORMATS.has(f.type)) throw invalidField('text.format', 'text.format.type must be text, json_object or json_schema');
  if (f.type === 'json_schema' && (!isObject(f.schema) || typeof f.name !== 'string')) throw invalidField('text.format', 'a json_schema format needs a name and a schema object');
}

/** Checks a Responses request's fields; returns the body as an object. */
export function validateResponsesRequest(body: unknown): Item {
  if (!isObject(body)) throw invalidField('', 'The request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model === '') throw invalidField('model', 'model is required and must be a non-empty string');
  const input = body.input;
  if (input === undefined || input === null) {
    if (typeof body.previous_response_id !== 'string') throw invalidField('input', 'input is required (a string or an array of items)');
  } else if (typeof input !== 'string') {
    if (!Array.isArray(input)) throw invalidField('input', 'input must be a string or an array of items');
    input.forEach(validateItem);
  }
  for (const f of ['instructions', 'previous_response_id', 'user']) optionalType(body, f, 'string');
  for (const f of ['stream', 'store', 'parallel_tool_calls', 'background']) optionalType(body, f, 'boolean');
  for (const f of ['temperature', 'top_p']) optionalType(body, f, 'number');
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isInteger(max) || max < 1)) throw invalidField('max_output_tokens', 'max_output_tokens must be an integer of at least 1');
  if (body.background === true) throw invalidField('background', 'background responses are not served by the gateway; send the request without background');
  if (body.conversation !== undefined && body.conversation !== null) throw invalidField('conversation', 'conversations are not served by the gateway; continue with previous_response_id');
  validateTools(body.tools);
  const tc = body.tool_choice;
  if (tc !== undefined && tc !== null && !(typeof tc === 'string' ? CHOICES.has(tc) : isObject(tc))) throw invalidField('tool_choice', 'tool_choice must be auto, none, required or an object');
  validateText(body.text);
  return body;
}

/** A content part list as canonical parts; a file id or other part the canonical form cannot carry is reported. */
function canonicalParts(content: unknown, param: string, problems: Untranslatable[]): unknown {
  if (typeof content === 'string') return content;
  return (content as Item[]).map((p, j) => {
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'summary_text') return { type: 'text', text: p.text };
    if (p.type === 'refusal') return { type: 'text', text: String(p.refusal ?? '') };
    if (p.type === 'input_image' && typeof p.image_url === 'string') {
      return { type: 'image_url', image_url: { url: p.image_url, ...(typeof p.detail === 'string' ? { detail: p.detail } : {}) } };
    }
    problems.push({ param: `${param}[${j}]`, message: `${String(p.type)} parts ${WHY_NATIVE}` });
    return { type: 'text', text: '' };
  });
}

/** Input items → canonical messages; function calls join the assistant message they follow. */
function canonicalMessages(items: readonly Item[], instructions: unknown, problems: Untranslatable[]): ChatMessage[] {
  const out: ChatMessage[] = typeof instructions === 'string' && instructions ? [{ role: 'system', content: instructions }] : [];
  let assistant: ChatMessage | undefined;
  items.forEach((item, i) => {
    const type = itemType(item);
    if (type === 'message') {
      const content = canonicalParts(item.content, `input[${i}].content`, problems);
      const msg: ChatMessage = { role: String(item.role), content: item.role === 'assistant' ? contentText(content) : content };
      out.push(msg);
      assistant = item.role === 'assistant' ? msg : undefined;
    } else if (type === 'function_call') {
      // A call of a function in a namespace (Codex) goes upstream under the flat name its namespace was declared with.
      const name = typeof item.namespace === 'string' ? flatName(item.namespace, String(item.name)) : String(item.name);
      const call = { id: String(item.call_id), type: 'function', function: { name, arguments: String(item.arguments) } };
      if (!assistant) out.push((assistant = { role: 'assistant', content: null }));
      assistant.tool_calls = [...((assistant.tool_calls as unknown[] | undefined) ?? []), call];
    } else if (type === 'function_call_output') {
      out.push({ role: 'tool', tool_call_id: String(item.call_id), content: typeof item.output === 'string' ? item.output : contentText(canonicalParts(item.output, `input[${i}].output`, problems)) });
      assistant = undefined;
    } else if (type !== 'reasoning' && type !== 'additional_tools') {
      // Unknown to the gateway: OpenAI may know it (it goes there untouched), nobody else can take it.
      problems.push({ param: `input[${i}]`, message: `${type} items ${WHY_NATIVE}` });
    }
  });
  return out;
}

const WEB_SEARCH = /^web_search(_preview)?(_\d{4}_\d{2}_\d{2})?$/;

/** A tool other than a function, for the unsupported_params policy: a namespace (flattened), a web search (the provider's own), or another built-in tool. */
function toolParam(t: Item, param: string): UnsupportedParam {
  const type = String(t.type);
  const kind = type === 'namespace' ? 'namespace' : WEB_SEARCH.test(type) ? 'web_search' : 'builtin_tool';
  return { param, name: type, kind, message: `${type} tools ${WHY_NATIVE}`, value: t };
}

/**
 * What of a Responses request the route's unsupported_params policy decides on: its
 * tools other than functions, and Codex's `additional_tools` input items (their own
 * tools other than functions reported too).
 */
function unsupportedParams(body: Item, items: readonly Item[]): UnsupportedParam[] {
  const out: UnsupportedParam[] = [];
  (Array.isArray(body.tools) ? (body.tools as Item[]) : []).forEach((t, i) => {
    if (t.type !== 'function') out.push(toolParam(t, `tools[${i}]`));
  });
  items.forEach((item, i) => {
    if (itemType(item) !== 'additional_tools') return;
    out.push({ param: `input[${i}]`, name: 'additional_tools', kind: 'additional_tools', message: `additional_tools items ${WHY_NATIVE}`, value: item });
    (Array.isArray(item.tools) ? (item.tools as Item[]) : []).forEach((t, j) => {
      if (t.type !== 'function') out.push(toolParam(t, `input[${i}].tools[${j}]`));
    });
  });
  return out;
}

/** Responses `tools` / `tool_choice` / `text.format` as the canonical fields; tools other than functions are left to the policy (unsupportedParams). */
function canonicalOptions(body: Item, problems: Untranslatable[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const tools = Array.isArray(body.tools) ? (body.tools as Item[]) : [];
  const fns = tools.filter((t) => t.type === 'function').map((t) => ({
    type: 'function', function: { name: t.name, ...(typeof t.description === 'string' ? { description: t.description } : {}), parameters: t.parameters ?? { type: 'object', properties: {} }, ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}) },
  }));
  if (fns.length > 0) out.tools = fns;
  const tc = body.tool_choice;
  if (typeof tc === 'string') out.tool_choice = tc;
  else if (isObject(tc) && tc.type === 'function' && typeof tc.name === 'string') out.tool_choice = { type: 'function', function: { name: tc.name } };
  else if (isObject(tc)) problems.push({ param: 'tool_choice', message: `tool_choice ${String(tc.type)} ${WHY_NATIVE}` });
  const f = isObject(body.text) && isObject(body.text.format) ? body.text.format : undefined;
  if (f?.type === 'json_object') out.response_format = { type: 'json_object' };
  if (f?.type === 'json_schema') {
    out.response_format = { type: 'json_schema', json_schema: { name: f.name, schema: f.schema, ...(typeof f.strict === 'boolean' ? { strict: f.strict } : {}), ...(typeof f.description === 'string' ? { description: f.description } : {}) } };
  }
  if (isObject(body.reasoning) && typeof body.reasoning.effort === 'string') out.reasoning_effort = body.reasoning.effort;
  return out;
}

/** Whether the request declares tools, at the top or in an `additional_tools` item (their prompt adds to the bound). */
const hasTools = (body: Item, items: readonly Item[]): boolean =>
  (Array.isArray(body.tools) && body.tools.length > 0) || items.some((it) => itemType(it) === 'additional_tools' && Array.isArray(it.tools) && it.tools.length > 0);

/**
 * A validated Responses request, its input resolved to `items`, as a ChatRequest: the
 * canonical chat form for every dialect, and the native body (input expanded) for a
 * provider with its own /responses endpoint.
 */
export function responsesChatRequest(body: Item, items: Item[]): ChatRequest {
  const problems: Untranslatable[] = [];
  const messages = canonicalMessages(items, body.instructions, problems);
  const options = canonicalOptions(body, problems);
  if (body.prompt !== undefined && body.prompt !== null) problems.push({ param: 'prompt', message: `stored prompts ${WHY_NATIVE}` });
  const num = (k: string): Record<string, unknown> => (typeof body[k] === 'number' ? { [k]: body[k] } : {});
  const maxTokens = typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined;
  const reasoning = fromResponses(body.reasoning);
  const canonical = {
    model: body.model, messages, ...options, ...num('temperature'), ...num('top_p'),
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    ...(typeof body.parallel_tool_calls === 'boolean' && options.tools ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    ...(typeof body.user === 'string' ? { user: body.user } : {}),
    ...(body.stream === true ? { stream: true } : {}),
  };
  return {
    model: String(body.model),
    body: canonical,
    stream: body.stream === true,
    includeUsage: false,
    maxTokens,
    prompt: promptText([body.instructions ?? '', ...items.map((it) => it.content ?? it.output ?? '')]),
    promptBound: promptTokenBound([body.instructions ?? null, items], hasTools(body, items) ? body.tools ?? [null] : null),
    native: { format: 'responses', body: { ...body, input: items }, headers: {} },
    ...(reasoning ? { reasoning } : {}),
    untranslatable: problems[0],
    unsupported: unsupportedParams(body, items),
  };
}
