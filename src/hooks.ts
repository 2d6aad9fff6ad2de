import type { Exchange } from './exchange.js';
import { isStage, STAGES, type Stage } from './stages.js';

export type StageHook = (ex: Exchange) => void | Promise<void>;

/** Stage hooks registered by plugins, validated against STAGES at registration (boot). */
export class HookRegistry {
  private readonly hooks = new Map<Stage, StageHook[]>(STAGES.map((s) => [s, []]));

  add(plugin: string, stage: string, hook: StageHook): void {
    if (!isStage(stage)) {
      throw new Error(`plugin "${plugin}" registers a hook on unknown stage "${stage}"; stages are: ${STAGES.join(', ')}`);
    }
    this.hooks.get(stage)?.push(hook);
  }

  /** The stage's hooks in order; nothing to await (no promise made) when the stage has none, as on most requests. */
  run(stage: Stage, ex: Exchange): Promise<void> | undefined {
    const list = this.hooks.get(stage);
    if (!list || list.length === 0) return undefined;
    return runAll(list, ex);
  }
}

async function runAll(list: readonly StageHook[], ex: Exchange): Promise<void> {
  for (const hook of list) await hook(ex);
}
