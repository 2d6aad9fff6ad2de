import { contentText, isObject, type ChatMessage } from './request.js';

/**
 * Tool calling in the canonical (OpenAI chat) form, and what every dialect and client
 * format needs to read it: declared functions, the assistant's calls, the tool
 * results, the caller's choice. Pure functions over parsed bodies.
 */

/** A function the model may call: `tools[].function` of an OpenAI request. */
export interface FunctionDecl {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
}

/** One call in an assistant message's `tool_calls`. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The caller's `tool_choice`, normalised: a mode, or one function by name. */
export type ToolChoice = { mode: 'auto' | 'none' | 'required' } | { mode: 'function'; name: string };

/** The function declarations of a canonical request (`tools` of type function). */
export function functionDecls(tools: unknown): FunctionDecl[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter((t) => isObject(t) && t.type === 'function' && isObject(t.function)).map((t) => {
    const f = (t as { function: Record<string, unknown> }).function;
    return {
      name: String(f.name ?? ''),
      ...(typeof f.description === 'string' ? { description: f.description } : {}),
      ...(isObject(f.parameters) ? { parameters: f.parameters } : {}),
    };
  });
}

/** Index of the first declared tool that is not a function (a provider's built-in tool), or -1. */
export function nonFunctionTool(tools: unknown): number {
  return Array.isArray(tools) ? tools.findIndex((t) => !isObject(t) || t.type !== 'function' || !isObject(t.function)) : -1;
}

/** `tool_choice` of a canonical request, or undefined when not given. */
export function toolChoice(value: unknown): ToolChoice | undefined {
  if (value === 'auto' || value === 'none' || value === 'required') return { mode: value };
  if (isObject(value) && isObject(value.function) && typeof value.function.name === 'string') return { mode: 'function', name: value.function.name };
  return undefined;
}

/** The `tool_calls` of an assistant message. */
export function toolCallsOf(m: ChatMessage): ToolCall[] {
  if (!Array.isArray(m.tool_calls)) return [];
  return m.tool_calls.filter(isObject).map((c, i) => {
    const f = isObject(c.function) ? c.function : {};
    return { id: typeof c.id === 'string' ? c.id : `call_${i}`, type: 'function', function: { name: String(f.name ?? ''), arguments: typeof f.arguments === 'string' ? f.arguments : JSON.stringify(f.arguments ?? {}) } };
  });
}

/** A call's arguments as an object (providers other than OpenAI take objects); `{}` when they are not a JSON object. */
export function argumentsObject(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args || '{}');
    return isObject(v) ? v : {};
  } catch {
    return {};
  }
}

/** A tool message's result as text (content parts joined). */
export function toolResultText(m: ChatMessage): string {
  return typeof m.content === 'string' ? m.content : contentText(m.content);
}

/** Function names by call id, from every assistant message (a tool result names only its call id). */
export function callNames(messages: readonly ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) for (const c of toolCallsOf(m)) names.set(c.id, c.function.name);
  return names;
}

/** A JSON value as the object a provider wants for a tool result: objects as they are, anything else under `result`. */
export function resultObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : { result: v };
  } catch {
    return { result: text };
  }
}
