import type { LimitScope, LimitSpec, ScopeOwner } from './limits.js';

/** The counter name of an owner's scope: `key:<key id>` or `project:<project id>` (stored with alert crossings too). */
function scopeIdOf(owner: ScopeOwner): string {
  return `${owner.kind}:${owner.id}`;
}

/** The limits scope of a key or project: its counters, its limits, how errors name it, and its owner typed. */
export function ownerScope(owner: ScopeOwner, limits: LimitSpec, label: string): LimitScope {
  return { id: scopeIdOf(owner), limits, label, owner };
}

/** A scope id in its string form (`key:<id>`, `project:<id>`), for callers that only have the string. */
export function parseScopeId(scopeId: string): ScopeOwner {
  const m = /^(key|project):(.+)$/.exec(scopeId);
  if (!m) throw new RangeError(`not a limit scope id: ${JSON.stringify(scopeId)}`);
  return { kind: m[1] as ScopeOwner['kind'], id: m[2] as string };
}
