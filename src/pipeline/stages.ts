/**
 * The request stages, in order. This array is the one place stage names are
 * declared: registering a hook on any other name fails at boot.
 *
 *   pre-auth → auth → pre-upstream → upstream → post-upstream → billing → post-billing
 *
 * `auth`, `upstream` and `billing` are the core's own work; hooks on them run right
 * after it. `post-billing` hooks run after the reply has been sent.
 */
export const STAGES = ['pre-auth', 'auth', 'pre-upstream', 'upstream', 'post-upstream', 'billing', 'post-billing'] as const;

export type Stage = (typeof STAGES)[number];

export function isStage(name: string): name is Stage {
  return (STAGES as readonly string[]).includes(name);
}
