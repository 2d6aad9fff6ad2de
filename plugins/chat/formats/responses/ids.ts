import type { ReplyContext } from '../../dialects/types.js';

/**
 * The gateway names every response and output item itself, whichever provider
 * served it: `resp_<X>` for the response of request `req_<X>`, and `<prefix>_<X>_<i>`
 * for its output item i. An item id therefore says which stored response holds it,
 * so an `item_reference` is one lookup.
 */

const PREFIXES: Readonly<Record<string, string>> = {
  message: 'msg', function_call: 'fc', reasoning: 'rs', web_search_call: 'ws', file_search_call: 'fs',
  computer_call: 'cu', image_generation_call: 'ig', code_interpreter_call: 'ci', mcp_call: 'mcp',
};

/** The bare request id (`<X>`) of a reply context (`chatcmpl-<X>`). */
const bare = (ctx: ReplyContext): string => ctx.id.replace(/^chatcmpl-/, '');

export function responseId(ctx: ReplyContext): string {
  return `resp_${bare(ctx)}`;
}

export function itemId(ctx: ReplyContext, type: string, outputIndex: number): string {
  return `${PREFIXES[type] ?? 'item'}_${bare(ctx)}_${outputIndex}`;
}

/** The response and output index an item id names, or undefined when it is not one of the gateway's. */
export function parseItemId(id: string): { responseId: string; index: number } | undefined {
  const m = /^[a-z]+_(.+)_(\d+)$/.exec(id);
  return m ? { responseId: `resp_${m[1]}`, index: Number(m[2]) } : undefined;
}
