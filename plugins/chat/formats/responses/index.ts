import { GatewayError, type Exchange, type PlainRouteDef } from '../../../../src/sdk.js';
import type { ChatDialect, ReplyContext } from '../../dialects/types.js';
import type { ChatCost } from '../../metering.js';
import type { ChatRequest } from '../../request.js';
import type { TokenUsage } from '../../dialects/types.js';
import type { ChatCodec, ClientFormat, FormatServices } from '../types.js';
import { finishStatus, outputFromCompletion, responsesEncoder, responseShell, responsesUsage, type NamespacedNames } from './encode.js';
import { namespaceFunctions } from '../../unsupported.js';
import { loadResponse, RECORD_KIND, resolveInput, storeResponse } from './history.js';
import { nativeResponsesCodec, openaiResponsesDialect, type Finalize } from './native.js';
import { responsesChatRequest, validateResponsesRequest, type Item } from './parse.js';
import { translatedCodec } from '../translate.js';

/** Canonical field names a provider may refuse, in the Responses request's terms. */
const CLIENT_PARAMS: Readonly<Record<string, string>> = { response_format: 'text.format', max_tokens: 'max_output_tokens', n: 'model', logprobs: 'include' };

const errorBody = (err: GatewayError): unknown => err.toBody();

/** The client's request body as it was (input resolved), for the reply's echo fields. */
const clientBody = (req: ChatRequest): Item => req.native?.body ?? {};
const wantsStore = (req: ChatRequest): boolean => clientBody(req).store !== false;

/** Usage and cost into the response, then (unless `store: false`) the response stored before the client sees it. */
function finalizer(services: FormatServices, orgId: string, req: ChatRequest): Finalize {
  return async (response: Record<string, unknown>, u: TokenUsage, c: ChatCost) => {
    const done = { ...response, usage: responsesUsage(u, c) };
    if (!wantsStore(req)) return { ...done, store: false };
    const input = (clientBody(req).input as Item[] | undefined) ?? [];
    const stored = await storeResponse(services, orgId, { response: { ...done, store: true }, input });
    return { ...done, store: stored };
  };
}

/** Any dialect's canonical reply as a Response, streamed with the Responses events or not. */
/** The flat names the request's namespace tools were declared upstream under, back to the client's namespace and name. */
function namespacedNames(req: ChatRequest): NamespacedNames {
  const names = new Map<string, { namespace: string; name: string }>();
  for (const p of req.unsupported ?? []) if (p.kind === 'namespace') for (const f of namespaceFunctions(p.value)) names.set(f.flat, { namespace: f.namespace, name: f.name });
  return names;
}

function responsesCodec(dialect: ChatDialect, req: ChatRequest, ctx: ReplyContext, finalize: Finalize): ChatCodec {
  const shell = responseShell(ctx, clientBody(req), wantsStore(req));
  const names = namespacedNames(req);
  return translatedCodec(dialect, ctx, {
    render(completion, text, u, c) {
      const finish = (completion.choices as Array<{ finish_reason?: unknown }> | undefined)?.[0]?.finish_reason;
      return finalize({ ...shell, ...finishStatus(finish), output: outputFromCompletion(completion, text, ctx, names) }, u, c);
    },
    encoder() {
      const encoder = responsesEncoder(ctx, shell, names);
      return {
        chunk: (data) => encoder.chunk(data),
        async finish(u, c) {
          const { frames, output, finish } = encoder.close();
          const status = finishStatus(finish);
          const response = await finalize({ ...shell, ...status, output }, u, c);
          return [...frames, encoder.event(status.status === 'completed' ? 'response.completed' : 'response.incomplete', { response })];
        },
        fail: (err) => [encoder.fail(err, errorBody(err))],
      };
    },
  });
}

/** GET/DELETE of a stored response and its input items: the caller's org only, 404 otherwise (never 403, which would confirm the id). */
function storedRoutes(services: FormatServices): PlainRouteDef[] {
  const find = async (ex: Exchange, id: string) => {
    const found = await loadResponse(services, ex.org?.id ?? '', id);
    if (!found) throw new GatewayError('not_found', [`No response found with id '${id}'.`]);
    return found;
  };
  const idOf = (request: { params: unknown }): string => String((request.params as { id?: string }).id ?? '');
  return [
    { method: 'GET', url: '/v1/responses/:id', modality: 'chat', auth: true, handler: async (ex, request) => (await find(ex, idOf(request))).response },
    {
      method: 'DELETE', url: '/v1/responses/:id', modality: 'chat', auth: true,
      async handler(ex, request) {
        const id = idOf(request);
        if (!(await services.store.records.delete(RECORD_KIND, ex.org?.id ?? '', id))) throw new GatewayError('not_found', [`No response found with id '${id}'.`]);
        return { id, object: 'response', deleted: true };
      },
    },
    {
      method: 'GET', url: '/v1/responses/:id/input_items', modality: 'chat', auth: true,
      async handler(ex, request) {
        const id = idOf(request);
        const q = request.query as { order?: string; limit?: string };
        const limit = Math.min(Math.max(Number(q.limit ?? 20) || 20, 1), 100);
        const items = (await find(ex, id)).input.map((it, i) => ({ id: `in_${id.replace(/^resp_/, '')}_${i}`, ...it }));
        const data = (q.order === 'asc' ? items : items.reverse()).slice(0, limit);
        return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null, has_more: items.length > data.length };
      },
    },
  ];
}

/**
 * The OpenAI Responses API (`POST /v1/responses`, and GET/DELETE of stored responses):
 * what the AI SDK's `openai(model)`, `client.responses.create` and Codex-style agents
 * call. A provider that declares its own /responses endpoint (OpenAI) gets the request
 * as written; any other model is served through the canonical chat form. Responses are
 * stored (unless `store: false`) so `previous_response_id` and `item_reference` work
 * whichever provider serves the next turn.
 */
export function responsesFormat(services: FormatServices): ClientFormat {
  return {
    name: 'responses',
    urls: ['/v1/responses'],
    nativeDialect: openaiResponsesDialect.name,
    async parse(input) {
      const body = validateResponsesRequest(input.body);
      return responsesChatRequest(body, await resolveInput(services, input.orgId, body));
    },
    clientParam: (p) => CLIENT_PARAMS[p] ?? (p.startsWith('messages[') ? 'input' : p),
    codec(dialect, req, ctx, caller) {
      const finalize = finalizer(services, caller.orgId, req);
      if (dialect.name !== openaiResponsesDialect.name) return responsesCodec(dialect, req, ctx, finalize);
      const body = clientBody(req);
      const echo = { previous_response_id: body.previous_response_id ?? null, store: wantsStore(req) };
      return nativeResponsesCodec(ctx, echo, finalize, (err) => responsesEncoder(ctx, {}).fail(err, errorBody(err)));
    },
    routes: storedRoutes(services),
  };
}
