import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';

/*
 * The guides name files; a file that moves leaves its guide pointing at nothing. Every
 * repository path these documents name in backticks (`src/pipeline/hooks.ts`,
 * `plugins/chat/formats/`, `dist/src/http/server.js` as built from `src/http/server.ts`)
 * must exist, a shorter one (`rows.ts`, `limits/types.ts`) must be the end of some file's
 * path, and every relative link must reach a file. A placeholder (`<name>`, `*`, `…`, `NNN`)
 * is a pattern, not a path, and is skipped.
 */

const ROOT = packageRoot();
const DOCUMENTS = ['CONTRIBUTING.md', 'docs/architecture.md', 'docs/benchmarks.md'];
const ROOTS = ['src', 'plugins', 'simulator', 'cli', 'console', 'test', 'bench', 'config', 'providers', 'docs', 'bin', 'examples', 'dist', '.ci'];
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist', 'data']);
/** A span that names a file or folder: no spaces, a slash or a source extension. */
const PATHLIKE = /^[\w.@+-]+(?:\/[\w.@+-]+)*\/?(?::\d+)?$/;
const EXTENSION = /\.(?:ts|tsx|mts|js|mjs|json|yaml|yml|md|css|html|sql)$/;
const PLACEHOLDER = /[<>*…{}]|NNN|\bx\.(?:test\.)?ts$/;

function walk(dir: string, out: string[]): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP_DIRS.has(e.name)) continue;
    const p = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) {
      out.push(`${p}/`);
      walk(p, out);
    } else out.push(p);
  }
  return out;
}

const FILES = walk('', []);

/** `dist/src/x.js` is built from `src/x.ts`; `dist/console/` from `console/`. */
function sourceOf(path: string): string {
  if (!path.startsWith('dist/')) return path;
  const rest = path.slice('dist/'.length);
  return rest.endsWith('.js') ? `${rest.slice(0, -3)}.ts` : rest;
}

/** Why a backticked span names nothing, or undefined when it is fine (or no path at all). */
function missing(span: string): string | undefined {
  // An import specifier (`./migration.js`) is relative to a file the text names elsewhere.
  if (PLACEHOLDER.test(span) || !PATHLIKE.test(span) || span.startsWith('./') || span.startsWith('../')) return undefined;
  const path = span.replace(/:\d+$/, '');
  const first = path.split('/')[0] ?? '';
  if (ROOTS.includes(first) && path.includes('/')) {
    const source = sourceOf(path);
    return existsSync(join(ROOT, source)) || source === '' ? undefined : `no ${source}`;
  }
  // A shorter name: a file name or the end of a path, judged only when it looks like one.
  if (!EXTENSION.test(path) && !(path.endsWith('/') && path.length > 1)) return undefined;
  if (!path.includes('/') && !EXTENSION.test(path)) return undefined;
  return FILES.some((f) => f === path || f.endsWith(`/${path}`)) ? undefined : `no file ends with ${path}`;
}

/** Every problem in one document: `line: span — why`. */
function problems(doc: string): string[] {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/`([^`\n]+)`/g)) {
      const why = missing(m[1] ?? '');
      if (why) out.push(`${doc}:${i + 1}: \`${m[1]}\` — ${why}`);
    }
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = (m[1] ?? '').split('#')[0] ?? '';
      if (target === '' || /^[a-z]+:/.test(target)) continue;
      const resolved = relative(ROOT, join(ROOT, dirname(doc), target));
      if (!existsSync(join(ROOT, resolved))) out.push(`${doc}:${i + 1}: link ${m[1]} — no ${resolved}`);
    }
  });
  return out;
}

describe('the paths the guides name', () => {
  it.each(DOCUMENTS)('every path %s names exists', (doc) => {
    expect(problems(doc)).toEqual([]);
  });

  it('catches a stale path, a stale short name and a broken link, and skips placeholders', () => {
    expect(missing('src/pipeline/hooks.ts')).toBeUndefined();
    expect(missing('dist/src/http/server.js:12')).toBeUndefined();
    expect(missing('plugins/chat/formats/')).toBeUndefined();
    expect(missing('rows.ts')).toBeUndefined();
    expect(missing('src/pipeline.ts')).toBe('no src/pipeline.ts');
    expect(missing('dist/src/server.js')).toBe('no src/server.ts');
    expect(missing('limits/types.ts')).toBe('no file ends with limits/types.ts');
    expect(missing('plugins/<name>/index.ts')).toBeUndefined();
    expect(missing('src/store/migrations/NNN-what.ts')).toBeUndefined();
    expect(missing('npm run lint')).toBeUndefined();
    expect(missing('application/json')).toBeUndefined();
    expect(missing('./migration.js')).toBeUndefined();
  });
});
