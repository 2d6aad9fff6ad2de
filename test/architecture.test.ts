import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';

/*
 * The import direction of the house (docs/architecture.md):
 *   cli → plugins, simulator, src · plugins → src/sdk.ts only · simulator → src
 *   src → nothing outside src (the core never imports a plugin)
 *   console → its own files, and type-only the request contract (src/management/api-types.ts).
 * Checked on the sources as text: every relative `import … from`, `export … from` and
 * `import(…)` is resolved to a repository path and judged by the folder it lands in.
 */

const ROOT = packageRoot();
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|[\s;(])import\s*\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** An import; `typeOnly` when it is `import type`/`export type` (erased from the built code). */
interface Edge { from: string; to: string; typeOnly?: true }

/** The management API's request contract (generated): the one file of the core the console may import, type-only. */
const CONTRACT = 'src/management/api-types';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (/\.(ts|tsx|mts|js|mjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

/** The repository-relative target of every relative import in a file (packages are not edges). */
function importsOf(file: string, text: string): Edge[] {
  const edges: Edge[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? '';
    if (!spec.startsWith('.')) continue;
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, '.ts').split('\\').join('/');
    edges.push(/^[\s;]*(?:import|export)\s+type\s/.test(m[0]) ? { from: file, to: target, typeOnly: true } : { from: file, to: target });
  }
  return edges;
}

const isTestOnly = (file: string): boolean => /\.(test|testkit)\.ts$/.test(file);
const top = (path: string): string => path.split('/')[0] ?? '';

/** Why an edge breaks the house rules, or undefined when it is allowed. */
function violation({ from, to, typeOnly }: Edge): string | undefined {
  const area = top(from);
  if (area === 'src') return top(to) === 'src' ? undefined : 'the core imports only the core';
  if (area === 'plugins') {
    if (to === 'src/sdk.ts') return undefined;
    const own = from.split('/').length > 2 ? `${from.split('/').slice(0, 2).join('/')}/` : 'plugins/';
    if (to.startsWith(own)) return undefined;
    if (isTestOnly(from) && top(to) === 'simulator') return undefined; // tests may use the fake upstream's helpers as test data
    return 'a plugin imports only src/sdk.ts and its own files';
  }
  if (area === 'simulator') return ['src', 'simulator'].includes(top(to)) ? undefined : 'the simulator imports only itself and src/';
  if (area === 'cli') return ['src', 'plugins', 'simulator', 'cli'].includes(top(to)) ? undefined : 'the CLI imports src/, plugins/ and simulator/';
  if (area === 'console') {
    if (top(to) === 'console' || (to.replace(/\.ts$/, '') === CONTRACT && typeOnly)) return undefined;
    return 'the web console is a browser client of the management API: it imports only its own files and, type-only, the request contract';
  }
  return undefined;
}

function allEdges(): Edge[] {
  return ['src', 'plugins', 'simulator', 'cli', 'console/src'].flatMap(sources).flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8')));
}

describe('the house: who may import whom', () => {
  const edges = allEdges();

  it('reads the imports of every area (the scan is not vacuous)', () => {
    expect(edges).toContainEqual({ from: 'src/gateway.ts', to: 'src/tenancy/auth.ts' });
    expect(edges).toContainEqual({ from: 'cli/index.ts', to: 'plugins/index.ts' });
    expect(edges).toContainEqual({ from: 'plugins/chat/index.ts', to: 'src/sdk.ts' });
    expect(edges.some((e) => e.from.startsWith('simulator/'))).toBe(true);
    expect(edges).toContainEqual({ from: 'console/src/app.tsx', to: 'console/src/api' });
    expect(edges).toContainEqual({ from: 'console/src/api-types.ts', to: CONTRACT, typeOnly: true });
  });

  it('flags what the rules forbid', () => {
    expect(violation({ from: 'src/gateway.ts', to: 'plugins/index.ts' })).toBeDefined();
    expect(violation({ from: 'src/cli.ts', to: 'simulator/server.ts' })).toBeDefined();
    expect(violation({ from: 'plugins/chat/index.ts', to: 'src/lib/errors.ts' })).toBeDefined();
    expect(violation({ from: 'plugins/music/index.ts', to: 'plugins/chat/request.ts' })).toBeDefined();
    expect(violation({ from: 'plugins/audio/speech.ts', to: 'simulator/mp3.ts' })).toBeDefined();
    expect(violation({ from: 'simulator/server.ts', to: 'plugins/chat/index.ts' })).toBeDefined();
    expect(violation({ from: 'simulator/server.ts', to: 'cli/index.ts' })).toBeDefined();
    expect(violation({ from: 'console/src/api.ts', to: 'src/management/views.ts' })).toBeDefined();
    expect(violation({ from: 'console/src/api.ts', to: CONTRACT })).toBeDefined();
    expect(violation({ from: 'console/src/api.ts', to: CONTRACT, typeOnly: true })).toBeUndefined();
    expect(importsOf('src/x.ts', "const m = await import('../plugins/index.js');\nexport { a } from '../bench/b.js';"))
      .toEqual([{ from: 'src/x.ts', to: 'plugins/index.ts' }, { from: 'src/x.ts', to: 'bench/b.ts' }]);
  });

  it('nothing under src/ imports plugins/, simulator/, cli/, bench/ or anything else outside src/', () => {
    expect(edges.filter((e) => top(e.from) === 'src' && violation(e)).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('plugins import the core only through src/sdk.ts', () => {
    expect(edges.filter((e) => top(e.from) === 'plugins' && violation(e)).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('the web console imports only its own files and, type-only, the request contract (it reaches the gateway over HTTP, /api/v1)', () => {
    expect(edges.filter((e) => top(e.from) === 'console' && violation(e)).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('the simulator and the CLI keep their direction', () => {
    expect(edges.filter((e) => ['simulator', 'cli'].includes(top(e.from)) && violation(e)).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });
});

/** Groups of files that import each other in a circle (type-only imports included), by Tarjan's algorithm. */
function cycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string | undefined;
    do group.push((w = stack.pop() as string)); while (w !== v);
    if (group.length > 1) out.push(group.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('the store, the limits engine and the admin service', () => {
  const edges = allEdges().filter((e) => !isTestOnly(e.from));
  const inside = (dir: string) => (e: Edge): boolean => e.from.startsWith(dir);

  it('finds a cycle where there is one (the check is not vacuous)', () => {
    expect(cycles([{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'a' }, { from: 'c', to: 'd' }])).toEqual([['a', 'b', 'c']]);
    expect(edges).toContainEqual({ from: 'src/store/sqlite.ts', to: 'src/store/sql-store.ts' });
  });

  it('limits/ imports nothing from store/ (the store reads the limit shapes; the engine needs no store)', () => {
    expect(edges.filter((e) => inside('src/limits/')(e) && e.to.startsWith('src/store/')).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('no files of store/ or limits/ import each other in a circle, type-only imports included', () => {
    expect(cycles(edges.filter((e) => ['src/store/', 'src/limits/'].some((d) => e.from.startsWith(d) && e.to.startsWith('src/'))))).toEqual([]);
  });

  it('the CLI reaches management logic through src/tenancy/admin.ts, never a route file', () => {
    expect(edges.filter((e) => inside('cli/')(e) && /^src\/management\/routes-/.test(e.to)).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });
});

/*
 * The rooms of src/, lowest first (docs/architecture.md draws them). A file may import
 * its own room and the rooms below it, never one above: the HTTP layer and the
 * management API on top, the request pipeline and the features built on its hooks
 * (cache, guardrails, telemetry) beneath them, the services it calls (routing, tenancy,
 * alerts, limits) beneath it, then object storage, the store, the provider catalogue,
 * the config, the data model and plain utilities. Entry points sit in src/ itself.
 */
const ROOMS = [
  'lib', 'model', 'config', 'providers', 'store', 'storage', 'limits', 'alerts', 'tenancy', 'routing',
  'pipeline', 'cache', 'guardrails', 'telemetry', 'management', 'http',
] as const;
/** The files allowed in src/ itself: the composition root and the plugins' one door. */
const ROOT_FILES = ['gateway.ts', 'sdk.ts'];

/** A src/ file's room: its first folder, or `root` for the entry points. */
function roomOf(path: string): string {
  const parts = path.split('/');
  return parts.length > 2 ? (parts[1] ?? '') : 'root';
}

/** Why an import inside src/ breaks the layering, or undefined. */
function layerViolation({ from, to }: Edge): string | undefined {
  if (!from.startsWith('src/') || !to.startsWith('src/')) return undefined;
  const a = roomOf(from);
  const b = roomOf(to);
  if (a === b || a === 'root') return undefined;
  if (b === 'root') return `src/${a}/ imports an entry point`;
  const rank = (r: string): number => (ROOMS as readonly string[]).indexOf(r);
  if (rank(a) < 0) return `src/${a}/ is not a room of ROOMS`;
  if (rank(b) < 0) return `src/${b}/ is not a room of ROOMS`;
  return rank(b) > rank(a) ? `src/${a}/ imports src/${b}/, a room above it` : undefined;
}

describe('the rooms of src/', () => {
  const edges = allEdges().filter((e) => !isTestOnly(e.from) && e.from.startsWith('src/'));

  it('judges edges as the rule says (the check is not vacuous)', () => {
    expect(layerViolation({ from: 'src/store/rows.ts', to: 'src/pipeline/exchange.ts' })).toMatch(/a room above it/);
    expect(layerViolation({ from: 'src/pipeline/pipeline.ts', to: 'src/store/types.ts' })).toBeUndefined();
    expect(layerViolation({ from: 'src/lib/money.ts', to: 'src/gateway.ts' })).toMatch(/entry point/);
    expect(layerViolation({ from: 'src/misc/x.ts', to: 'src/lib/money.ts' })).toMatch(/not a room/);
    expect(edges.length).toBeGreaterThan(300);
  });

  it('every folder of src/ is a room, and src/ itself holds only the entry points', () => {
    const entries = readdirSync(join(ROOT, 'src'), { withFileTypes: true });
    expect(entries.filter((e) => e.isDirectory()).map((e) => e.name).sort()).toEqual([...ROOMS].sort());
    expect(entries.filter((e) => e.isFile() && !isTestOnly(e.name)).map((e) => e.name).sort()).toEqual(ROOT_FILES);
  });

  it('no room imports a room above it', () => {
    expect(edges.flatMap((e) => (layerViolation(e) ? [`${e.from} → ${e.to}: ${layerViolation(e)}`] : []))).toEqual([]);
  });

  it('no files of src/ import each other in a circle, type-only imports included', () => {
    expect(cycles(edges.filter((e) => e.to.startsWith('src/')))).toEqual([]);
  });
});

describe('the size of a file', () => {
  it('no production file is over 400 lines (a longer one is asking to be split)', () => {
    const production = ['src', 'plugins', 'simulator', 'cli', 'console/src'].flatMap(sources).filter((f) => !isTestOnly(f));
    expect(production.length).toBeGreaterThan(300);
    const long = production.map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1 })).filter((x) => x.lines > 400);
    expect(long.map((x) => `${x.f}: ${x.lines} lines`)).toEqual([]);
  });
});
