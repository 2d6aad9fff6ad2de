import type { GatewayError } from './errors.js';
import type { Exchange, ExchangeView } from './exchange.js';
import type { Metered, ModelRequest, RespondContext, TextSlot } from './plugin.js';
import { isStage, STAGES, type Stage } from './stages.js';

/**
 * What a `pre-upstream` hook returns to answer the request itself (a cache hit, a
 * guardrail's own reply): no upstream call is made, and the request is charged what
 * `respond` returns (0n: nothing) through the same settle and log as any other.
 * A hook that refuses a request throws a GatewayError instead: nothing is charged.
 */
export interface ShortCircuit {
  /** Writes the reply (JSON, or a stream through `ctx.openStream`) and returns what it cost. */
  respond(ctx: ShortCircuitContext): Promise<Metered>;
}

/** A short-circuit's reply context: a model request's, without an upstream response. */
export type ShortCircuitContext = Omit<RespondContext<ModelRequest>, 'upstream'>;

/** What a hook may read of a model request beyond its parsed form: its text, format-free, and the body as the client sent it. */
export interface RequestView {
  /** The request's text slots (`ModalityHandler.texts`); none when the modality carries no text. */
  texts(): TextSlot[];
  /** The client's parsed body. */
  body(): unknown;
}

/**
 * What a `pre-upstream` hook may put on the exchange (`ex.replyFilter`) to see the reply
 * before the client does, streamed or not: a modality whose reply is text (chat) runs
 * its reply through it. Texts are the reply's JSON (a body, or SSE frames).
 */
export interface ReplyFilter {
  /**
   * A whole reply body → the body to send. Throws a GatewayError to refuse it (a
   * post-upstream block): the caller charges what the upstream charged and answers the error.
   */
  body(json: string): Promise<string>;
  /** One write of a streamed reply → what to write instead. */
  frames(text: string): string;
  /** Once a streamed reply is complete: the error that ends it instead of its closing frames (a block), or undefined. */
  end(): Promise<GatewayError | undefined>;
}

/**
 * A stage hook. `request` is the validated model request on the model stages
 * (`pre-upstream` … `billing`), undefined on `pre-auth`, `auth` and `post-billing`
 * and on routes that do not call a model. Only a `pre-upstream` hook's ShortCircuit is
 * honoured; the first hook that returns one ends the stage.
 */
export type StageHook = (ex: ExchangeView, request?: ModelRequest, view?: RequestView) => void | ShortCircuit | Promise<void | ShortCircuit>;

/** The core's own hooks (the response cache, guardrails) record on the exchange itself; a plugin's StageHook is one of them. */
export type CoreStageHook = (ex: Exchange, request?: ModelRequest, view?: RequestView) => void | ShortCircuit | Promise<void | ShortCircuit>;

/** Stage hooks registered by plugins, validated against STAGES at registration (boot). */
export class HookRegistry {
  private readonly hooks = new Map<Stage, CoreStageHook[]>(STAGES.map((s) => [s, []]));

  add(plugin: string, stage: string, hook: CoreStageHook): void {
    if (!isStage(stage)) {
      throw new Error(`plugin "${plugin}" registers a hook on unknown stage "${stage}"; stages are: ${STAGES.join(', ')}`);
    }
    this.hooks.get(stage)?.push(hook);
  }

  /**
   * The stage's hooks in order; nothing to await (no promise made) when the stage has none,
   * as on most requests. Resolves to the first ShortCircuit a hook returned, if any.
   */
  run(stage: Stage, ex: Exchange, request?: ModelRequest, view?: RequestView): Promise<ShortCircuit | undefined> | undefined {
    const list = this.hooks.get(stage);
    if (!list || list.length === 0) return undefined;
    return runAll(list, ex, request, view);
  }
}

async function runAll(list: readonly CoreStageHook[], ex: Exchange, request: ModelRequest | undefined, view: RequestView | undefined): Promise<ShortCircuit | undefined> {
  for (const hook of list) {
    const outcome = await hook(ex, request, view);
    if (outcome) return outcome;
  }
  return undefined;
}
