import type { Exchange } from './exchange.js';
import type { CoreStageHook, ModelRequest, RequestView, ShortCircuit } from './plugin.js';
import { isStage, STAGES, type Stage } from './stages.js';

export type { CoreStageHook, RequestView, ShortCircuit, ShortCircuitContext, StageHook } from './plugin.js';
export type { ReplyFilter } from './exchange.js';

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
   * The stage's hooks in order; nothing to await (no promise made) when none of them has
   * anything to wait for — a stage without hooks, or hooks that answer at once, as those of
   * features a request does not use. Resolves to the first ShortCircuit a hook returned, if any.
   */
  run(stage: Stage, ex: Exchange, request?: ModelRequest, view?: RequestView): Promise<ShortCircuit | undefined> | undefined {
    const list = this.hooks.get(stage);
    if (!list || list.length === 0) return undefined;
    return runFrom(list, 0, ex, request, view);
  }
}

type Outcome = ReturnType<CoreStageHook>;
/** An outcome still to come: an async hook's promise. */
type Pending = Extract<Outcome, PromiseLike<unknown>>;

/**
 * Runs the hooks from `i` on, each after the one before has finished: at once while they
 * answer at once, awaiting from the first that returns a promise. A hook that throws gives
 * a rejected promise, as an async hook's failure does.
 */
function runFrom(list: readonly CoreStageHook[], i: number, ex: Exchange, request: ModelRequest | undefined, view: RequestView | undefined): Promise<ShortCircuit | undefined> | undefined {
  for (; i < list.length; i++) {
    let outcome: Outcome;
    try {
      outcome = list[i]?.(ex, request, view);
    } catch (err) {
      return Promise.reject(err);
    }
    if (isThenable(outcome)) return awaitFrom(outcome, list, i + 1, ex, request, view);
    if (outcome) return Promise.resolve(outcome);
  }
  return undefined;
}

function isThenable(outcome: Outcome): outcome is Pending {
  return typeof outcome === 'object' && outcome !== null && typeof (outcome as { then?: unknown }).then === 'function';
}

async function awaitFrom(
  pending: Pending, list: readonly CoreStageHook[], next: number, ex: Exchange, request: ModelRequest | undefined, view: RequestView | undefined,
): Promise<ShortCircuit | undefined> {
  const outcome = await pending;
  if (outcome) return outcome;
  return runFrom(list, next, ex, request, view);
}
