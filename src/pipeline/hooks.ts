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
