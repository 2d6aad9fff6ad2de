import type { Exchange, ExchangeView } from './exchange.js';
import type { Metered, ModelRequest, RespondContext } from './plugin.js';
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

/**
 * A stage hook. `request` is the validated model request on the model stages
 * (`pre-upstream` … `billing`), undefined on `pre-auth`, `auth` and `post-billing`
 * and on routes that do not call a model. Only a `pre-upstream` hook's ShortCircuit is
 * honoured; the first hook that returns one ends the stage.
 */
export type StageHook = (ex: ExchangeView, request?: ModelRequest) => void | ShortCircuit | Promise<void | ShortCircuit>;

/** Stage hooks registered by plugins, validated against STAGES at registration (boot). */
export class HookRegistry {
  private readonly hooks = new Map<Stage, StageHook[]>(STAGES.map((s) => [s, []]));

  add(plugin: string, stage: string, hook: StageHook): void {
    if (!isStage(stage)) {
      throw new Error(`plugin "${plugin}" registers a hook on unknown stage "${stage}"; stages are: ${STAGES.join(', ')}`);
    }
    this.hooks.get(stage)?.push(hook);
  }

  /**
   * The stage's hooks in order; nothing to await (no promise made) when the stage has none,
   * as on most requests. Resolves to the first ShortCircuit a hook returned, if any.
   */
  run(stage: Stage, ex: Exchange, request?: ModelRequest): Promise<ShortCircuit | undefined> | undefined {
    const list = this.hooks.get(stage);
    if (!list || list.length === 0) return undefined;
    return runAll(list, ex, request);
  }
}

async function runAll(list: readonly StageHook[], ex: Exchange, request: ModelRequest | undefined): Promise<ShortCircuit | undefined> {
  for (const hook of list) {
    const outcome = await hook(ex, request);
    if (outcome) return outcome;
  }
  return undefined;
}
