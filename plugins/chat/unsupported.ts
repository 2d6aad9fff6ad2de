import { invalidField, type ModelRoute, type UnsupportedParamsPolicy } from '../../src/sdk.js';
import { isObject, type ChatRequest } from './request.js';

/**
 * Unsupported parameters: a policy instead of a wall (docs/chat.md, Unsupported
 * parameters). A client format reports each parameter of its request that the
 * canonical (OpenAI chat) form does not carry as an `UnsupportedParam`; per route, the
 * policy (the key's project's `unsupported_params`, else `settings.chat.unsupported_params`,
 * else the model's or provider's in provider YAML: `policyOf`) decides what becomes of it:
 *
 * - `translate` (the default): a registered translator carries it into the canonical
 *   body in terms the route's dialect sends on (e.g. a web search tool → Gemini's
 *   `googleSearch`); without one, or when the translator cannot serve that dialect, it
 *   is dropped.
 * - `drop`: dropped, translation or not.
 * - `error`: the request is refused with 400 naming the client's field.
 *
 * Dropped parameters are named in the reply's `x-tollgate-dropped-params` header and
 * the log row's `extra.dropped_params`. A request sent to a provider speaking its own
 * format goes as the client wrote it and never comes here.
 *
 * To add a translation, add a `[kind, translator]` pair to TRANSLATORS below.
 */

/** A client parameter the canonical form does not carry as written. */
export interface UnsupportedParam {
  /** The client's field, as a 400 under `error` names it: `tools[2]`, `messages[0].content[1].cache_control`. */
  param: string;
  /** The name the header and the log give it when dropped: the field (`thinking`, `cache_control`) or the tool/item type (`web_search`, `namespace`). */
  name: string;
  /** What it is, which picks its translator: `thinking`, `output_config`, `cache_control`, `web_search`, `server_tool`, `namespace`, `additional_tools`. */
  kind: string;
  /** The 400's message under `error`. */
  message: string;
  /** The client's value (the tool, the item, the thinking config), for a translator. */
  value: unknown;
}

/** The canonical body a route is sent. */
export type CanonicalBody = ChatRequest['body'];

/**
 * Carries one unsupported parameter into the canonical body for a dialect: the new body
 * (the input is never changed), or undefined when that dialect cannot take it (it is
 * dropped then).
 */
export type Translator = (param: UnsupportedParam, body: CanonicalBody, dialect: string) => CanonicalBody | undefined;

/** What a route does with a request's unsupported parameters. */
export interface Resolution {
  /** The canonical body with every translated parameter carried. */
  body: CanonicalBody;
  /** Names of the dropped parameters, each once, in request order. */
  dropped: string[];
  /** Names of the translated parameters, each once. */
  translated: string[];
  /** The request's reasoning (`thinking`, `output_config.effort`) was dropped: the dialect must not send it. */
  reasoningDropped: boolean;
}

/** Dialects with a web search tool of their own, fed from the canonical `web_search_options` (OpenAI's chat field). */
const SEARCH_DIALECTS = new Set(['gemini', 'anthropic-messages']);

/** A client's web search tool (Responses `web_search`, Anthropic `web_search_20250305`) → `web_search_options`, which those dialects send as their own search tool. */
const webSearch: Translator = (_p, body, dialect) => (SEARCH_DIALECTS.has(dialect) ? { ...body, web_search_options: isObject(body.web_search_options) ? body.web_search_options : {} } : undefined);

/** The separator between a namespace and a function name in the flat name a function of a namespace is declared under upstream. */
const NAMESPACE_SEPARATOR = '__';

/** The flat (upstream) name of a function declared in a namespace. */
export const flatName = (namespace: string, name: string): string => `${namespace}${NAMESPACE_SEPARATOR}${name}`;

/** A Responses function tool as a canonical function tool, under `name`. */
function canonicalFunction(t: Record<string, unknown>, name: string): Record<string, unknown> {
  return {
    type: 'function',
    function: {
      name, ...(typeof t.description === 'string' ? { description: t.description } : {}),
      parameters: isObject(t.parameters) ? t.parameters : { type: 'object', properties: {} }, ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}),
    },
  };
}

/** The function tools of a Responses `namespace` tool, each under its flat name. */
export function namespaceFunctions(ns: unknown): Array<{ flat: string; namespace: string; name: string; tool: Record<string, unknown> }> {
  if (!isObject(ns) || typeof ns.name !== 'string' || !Array.isArray(ns.tools)) return [];
  const namespace = ns.name;
  return ns.tools.filter((t): t is Record<string, unknown> => isObject(t) && t.type === 'function' && typeof t.name === 'string')
    .map((t) => ({ flat: flatName(namespace, String(t.name)), namespace, name: String(t.name), tool: canonicalFunction(t, flatName(namespace, String(t.name))) }));
}

const withTools = (body: CanonicalBody, tools: unknown[]): CanonicalBody | undefined =>
  (tools.length === 0 ? undefined : { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...tools] });

/** A `namespace` tool (Codex's grouping of function tools) → its functions as plain function tools, under their flat names; every dialect takes those. */
const namespace: Translator = (p, body) => withTools(body, namespaceFunctions(p.value).map((f) => f.tool));

/**
 * An `additional_tools` input item (Codex) → its plain function tools join the request's
 * tools. Its other tools (namespaces, built-in tools) are reported as parameters of their own.
 */
const additionalTools: Translator = (p, body) => {
  const tools = isObject(p.value) && Array.isArray(p.value.tools) ? p.value.tools : [];
  const fns = tools.filter((t): t is Record<string, unknown> => isObject(t) && t.type === 'function' && typeof t.name === 'string').map((t) => canonicalFunction(t, String(t.name)));
  return fns.length === 0 ? body : { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...fns] };
};

/**
 * `thinking` and a top-level `output_config` (its `effort`; any other key is refused off
 * Claude) travel as the request's `reasoning`, which every dialect writes in its own
 * terms (reasoning.ts): the canonical body needs no change. An `output_config` on a
 * system message has no translation.
 */
const reasoning: Translator = (p, body) => (p.param.startsWith('messages[') ? undefined : body);

/** Kinds whose translation is the request's `reasoning`: dropped, the reasoning goes too. */
const REASONING_KINDS: ReadonlySet<string> = new Set(['thinking', 'output_config']);

/**
 * The registered translations, by kind. A kind without one (`cache_control`,
 * `server_tool`) is dropped under `translate`.
 */
const TRANSLATORS: ReadonlyMap<string, Translator> = new Map<string, Translator>([
  ['thinking', reasoning],
  ['output_config', reasoning],
  ['web_search', webSearch],
  ['namespace', namespace],
  ['additional_tools', additionalTools],
]);

/**
 * The policy a route applies: the first override set (the key's project's, then
 * gateway.yaml's `settings.chat.unsupported_params`), else the model's, else its
 * provider's, else `translate`.
 */
export function policyOf(route: ModelRoute, ...overrides: Array<UnsupportedParamsPolicy | null | undefined>): UnsupportedParamsPolicy {
  return overrides.find((o) => o != null) ?? route.model.unsupportedParams ?? route.provider.unsupportedParams ?? 'translate';
}

/** How a format names a field in its 400s, and the translations to use (TRANSLATORS unless given). */
export interface ResolveOptions {
  clientParam?: (param: string) => string;
  translators?: ReadonlyMap<string, Translator>;
}

/**
 * Applies a policy to a request's unsupported parameters for a dialect. Pure. Throws the
 * 400 `invalid_request` naming the first such parameter (in the client's terms, through
 * `clientParam`) under `error`.
 */
export function resolveUnsupported(req: ChatRequest, dialect: string, policy: UnsupportedParamsPolicy, opts: ResolveOptions = {}): Resolution {
  const params = req.unsupported ?? [];
  const first = params[0];
  if (policy === 'error' && first) throw invalidField(opts.clientParam?.(first.param) ?? first.param, first.message);
  const translators = opts.translators ?? TRANSLATORS;
  let body = req.body;
  const dropped = new Set<string>();
  const translated = new Set<string>();
  let reasoningDropped = false;
  for (const p of params) {
    const translator = policy === 'translate' ? translators.get(p.kind) : undefined;
    const next = translator?.(p, body, dialect);
    if (next) {
      body = next;
      translated.add(p.name);
    } else {
      dropped.add(p.name);
      if (REASONING_KINDS.has(p.kind) && !p.param.startsWith('messages[')) reasoningDropped = true;
    }
  }
  return { body, dropped: [...dropped], translated: [...translated], reasoningDropped };
}

/** The reply header naming the dropped parameters. */
export const DROPPED_HEADER = 'x-tollgate-dropped-params';
