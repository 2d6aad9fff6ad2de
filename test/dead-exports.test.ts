import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';

/*
 * No dead exports: every name a file exports is mentioned by another file. Over src,
 * plugins, cli, simulator, test, bench and console/src, checked on the sources as text: a
 * name counts as used when it is a word of another file (a same-named local elsewhere keeps
 * it, so the check errs towards keeping). Left out on purpose: the public surfaces
 * (src/sdk.ts, src/gateway.ts), `default` exports, and types their own file uses (nearly
 * always in the signature of an exported function or class). A name only its own file uses
 * loses its `export`; a name nothing uses goes.
 */

const ROOT = packageRoot();
const DIRS = ['src', 'plugins', 'cli', 'simulator', 'test', 'bench', 'console/src'];
const PUBLIC = new Set(['src/sdk.ts', 'src/gateway.ts']);
const CONFIGS = ['vitest.config.ts', 'console/vite.config.ts'];

interface Source { path: string; text: string }
interface Exported { name: string; kind: string }

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name === 'results') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (/\.(ts|tsx|mts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** `export function|const|class|type|interface|enum X` and `export { a, b as c }` (not re-exports `… from`). */
function exportsOf(text: string): Exported[] {
  const out: Exported[] = [];
  const declared = /^export\s+(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(function\*?|const|let|var|class|type|interface|enum)\s+([A-Za-z_$][\w$]*)/gm;
  for (const m of text.matchAll(declared)) out.push({ kind: m[1] ?? '', name: m[2] ?? '' });
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}(?!\s*from)/gm)) {
    for (const part of (m[1] ?? '').split(',')) {
      const name = part.trim().split(/\s+as\s+/).pop()?.replace(/^type\s+/, '');
      if (name) out.push({ kind: 'list', name });
    }
  }
  return out.filter((e) => e.name !== 'default');
}

function deadExports(): string[] {
  const files: Source[] = DIRS.flatMap((d) => sources(d)).map((path) => ({ path: relative(ROOT, join(ROOT, path)), text: readFileSync(join(ROOT, path), 'utf8') }));
  const words = new Map<string, Set<string>>();
  for (const f of [...files, ...CONFIGS.map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }))]) {
    words.set(f.path, new Set(f.text.match(/[A-Za-z_$][\w$]*/g) ?? []));
  }
  const dead: string[] = [];
  for (const f of files) {
    if (PUBLIC.has(f.path)) continue;
    for (const { name, kind } of exportsOf(f.text)) {
      if ([...words].some(([path, set]) => path !== f.path && set.has(name))) continue;
      const uses = f.text.match(new RegExp(`(?<![\\w$])${name.replace(/\$/g, '\\$')}(?![\\w$])`, 'g'))?.length ?? 0;
      if ((kind === 'type' || kind === 'interface') && uses > 1) continue;
      dead.push(`${f.path}: ${name} (${uses > 1 ? 'used only in its file: drop the export' : 'used nowhere: delete it'})`);
    }
  }
  return dead;
}

describe('exports', () => {
  it('every exported name is mentioned by another file', () => {
    expect(deadExports()).toEqual([]);
  });

  it('finds an export nothing else names (the check can fail)', () => {
    expect(exportsOf('export function used() {}\nexport const NEVER_NAMED_ELSEWHERE_XYZ = 1;\nexport { a as b };')).toEqual([
      { kind: 'function', name: 'used' }, { kind: 'const', name: 'NEVER_NAMED_ELSEWHERE_XYZ' }, { kind: 'list', name: 'b' },
    ]);
  });
});
