// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function, self
// time per area (Tollgate file, npm package, Node internals, GC), and inclusive time
// of the functions on the request path.
import { fileURLToPath } from 'node:url';

const SPECIAL = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

/** Where a function lives, short enough for a table: `dist/src/auth.js`, `fastify/lib/route.js`, `node:internal/…`. */
function shortLocation(url, root) {
  if (!url) return '';
  let path = url;
  if (url.startsWith('file://')) {
    try {
      path = fileURLToPath(url);
    } catch {
      path = url;
    }
  }
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + '/node_modules/'.length);
  if (root && path.startsWith(root)) return path.slice(root.length).replace(/^\//, '');
  return path;
}

/** The area a location belongs to: a Tollgate dist file, an npm package, a Node internal module, or V8. */
function areaOf(functionName, location) {
  if (SPECIAL.has(functionName)) return functionName;
  if (!location) return '(native / V8 builtins)';
  if (location.startsWith('dist/')) return `tollgate ${location.replace(/^dist\//, '').replace(/\.js$/, '')}`;
  if (location.startsWith('node:')) {
    const parts = location.split('/');
    return parts.slice(0, Math.min(parts.length, location.startsWith('node:internal/') ? 2 : 1)).join('/').replace(/\.js$/, '');
  }
  const segments = location.split('/');
  return segments[0].startsWith('@') ? `${segments[0]}/${segments[1]}` : segments[0];
}

/**
 * `profile` is the parsed JSON; `root` the repository folder (to shorten paths);
 * samples in the first `skipMs` (boot, module loading) are left out.
 * Times are milliseconds of CPU samples; `(idle)` is excluded from the percentages.
 */
export function summariseProfile(profile, { root, top = 25, skipMs = 0 } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const { samples, timeDeltas } = profile;
  let at = 0;
  for (let i = 0; i < samples.length; i++) {
    at += timeDeltas[i] ?? 0;
    if (at / 1000 < skipMs) continue;
    const dt = timeDeltas[i + 1] ?? timeDeltas[i] ?? 0;
    self.set(samples[i], (self.get(samples[i]) ?? 0) + Math.max(dt, 0) / 1000);
  }
  const keyOf = (node) => {
    const cf = node.callFrame;
    const location = shortLocation(cf.url, root);
    const name = cf.functionName || '(anonymous)';
    return { key: `${name} ${location}:${cf.lineNumber + 1}`, name, location: location ? `${location}:${cf.lineNumber + 1}` : '', area: areaOf(name, location) };
  };
  const fnSelf = new Map();
  const areaSelf = new Map();
  let busyMs = 0;
  let idleMs = 0;
  for (const [id, ms] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const k = keyOf(node);
    if (k.name === '(idle)') {
      idleMs += ms;
      continue;
    }
    busyMs += ms;
    const f = fnSelf.get(k.key) ?? { name: k.name, location: k.location, area: k.area, selfMs: 0 };
    f.selfMs += ms;
    fnSelf.set(k.key, f);
    areaSelf.set(k.area, (areaSelf.get(k.area) ?? 0) + ms);
  }
  // Inclusive time: each function counted once per sample even when recursive.
  const inclusive = new Map();
  const totals = new Map();
  const totalOf = (node) => {
    let t = self.get(node.id) ?? 0;
    for (const c of node.children ?? []) t += totalOf(byId.get(c));
    totals.set(node.id, t);
    return t;
  };
  const rootNode = profile.nodes[0];
  totalOf(rootNode);
  const walk = (node, onStack) => {
    const k = keyOf(node);
    const fresh = !onStack.has(k.key);
    if (fresh && !SPECIAL.has(k.name)) {
      const f = inclusive.get(k.key) ?? { name: k.name, location: k.location, area: k.area, totalMs: 0 };
      f.totalMs += totals.get(node.id) ?? 0;
      inclusive.set(k.key, f);
    }
    if (fresh) onStack.add(k.key);
    for (const c of node.children ?? []) walk(byId.get(c), onStack);
    if (fresh) onStack.delete(k.key);
  };
  walk(rootNode, new Set());
  const pct = (ms) => (busyMs > 0 ? (100 * ms) / busyMs : 0);
  const round = (x) => Math.round(x * 10) / 10;
  const bySelf = [...fnSelf.values()].sort((a, b) => b.selfMs - a.selfMs).slice(0, top)
    .map((f) => ({ ...f, selfMs: round(f.selfMs), selfPct: round(pct(f.selfMs)) }));
  const byArea = [...areaSelf.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([area, ms]) => ({ area, selfMs: round(ms), selfPct: round(pct(ms)) }));
  const byInclusive = [...inclusive.values()].filter((f) => f.area.startsWith('tollgate') || f.area === 'fastify' || f.area === 'better-sqlite3' || f.area === 'undici' || f.area === 'pino')
    .sort((a, b) => b.totalMs - a.totalMs).slice(0, top)
    .map((f) => ({ ...f, totalMs: round(f.totalMs), totalPct: round(pct(f.totalMs)) }));
  const wallMs = (profile.endTime - profile.startTime) / 1000 - skipMs;
  const allAreas = Object.fromEntries([...areaSelf.entries()].map(([k, v]) => [k, round(v)]));
  return { wallMs: round(wallMs), skippedMs: round(skipMs), busyMs: round(busyMs), idleMs: round(idleMs), bySelf, byArea, byInclusive, allAreas };
}
