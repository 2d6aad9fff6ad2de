import { GatewayError } from '../../src/errors.js';
import { elapsedMs } from '../../src/exchange.js';
import type { GatewayPlugin, Metered, ModalityHandler, RespondContext } from '../../src/plugin.js';
import { costPicos } from '../../src/pricing.js';
import type { ModelRoute } from '../../src/providers/types.js';
import { fillPath } from '../../src/upstream.js';
import { openaiDialect } from './dialects/openai.js';
import type { ChatDialect } from './dialects/types.js';
import { chatCost, estimateTokens, promptTokenBound, usageObject } from './metering.js';
import { respondStream } from './stream.js';
import { parseChatRequest, type ChatRequest } from './validate.js';

const DIALECTS: ReadonlyMap<string, ChatDialect> = new Map([[openaiDialect.name, openaiDialect]]);
/** Output bound for a model that declares neither max_output_tokens nor a context length. */
const DEFAULT_MAX_OUTPUT = 4096;

function dialectOf(route: ModelRoute): ChatDialect {
  const d = DIALECTS.get(route.endpoint.dialect ?? 'openai');
  if (!d) throw new Error(`dialect ${route.endpoint.dialect} is not loaded`); // refused at config load
  return d;
}

const chatHandler: ModalityHandler<ChatRequest> = {
  modality: 'chat',
  parse: (body) => parseChatRequest(body),
  maxCostPicos(req, route) {
    const m = route.model;
    const completion = req.maxTokens ?? m.maxOutputTokens ?? (m.contextLength || DEFAULT_MAX_OUTPUT);
    return costPicos(m, { prompt: promptTokenBound(req.prompt ?? '', req.body.messages.length), completion });
  },
  buildUpstream(req, route) {
    const dialect = dialectOf(route);
    return {
      path: fillPath(route.endpoint.path, dialect.pathVars(req, route.model.upstreamId)),
      body: dialect.requestBody(req, route.model.upstreamId),
      contentType: 'application/json',
      headers: req.stream ? { accept: 'text/event-stream' } : { accept: 'application/json' },
    };
  },
  respond(ctx) {
    const dialect = dialectOf(ctx.route);
    return ctx.parsed.stream ? respondStream(ctx, dialect) : respondJson(ctx, dialect);
  },
};

async function respondJson(ctx: RespondContext<ChatRequest>, dialect: ChatDialect): Promise<Metered> {
  const { ex, parsed, route, upstream, reply } = ctx;
  const text = await upstream.body.text();
  let translated: ReturnType<ChatDialect['response']>;
  try {
    translated = dialect.response(text, parsed.model);
  } catch {
    throw new GatewayError('upstream_error', ['the upstream sent a malformed response']);
  }
  const { completion } = translated;
  let usage = translated.usage;
  const estimated = usage === undefined;
  if (!usage) {
    const content = JSON.stringify((completion as { choices?: unknown }).choices ?? '');
    usage = { promptTokens: estimateTokens(parsed.prompt ?? ''), completionTokens: estimateTokens(content) };
  }
  const cost = chatCost(route.model, usage);
  ex.ttfbMs = elapsedMs(ex);
  void reply.code(200).type('application/json').send(JSON.stringify({ ...completion, usage: { ...(completion.usage as object | undefined), ...usageObject(usage, cost) } }));
  return { costPicos: BigInt(cost.totalMicros) * 1_000_000n, estimated };
}

/** Chat completions (`POST /v1/chat/completions`), OpenAI format in and out. */
export const chatPlugin: GatewayPlugin = {
  name: 'chat',
  modalities: { chat: { requiredPricing: ['prompt', 'completion'], dialects: [...DIALECTS.keys()] } },
  register(api) {
    api.modelRoute({ method: 'POST', url: '/v1/chat/completions', handler: chatHandler });
  },
};
