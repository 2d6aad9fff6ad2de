import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';

/*
 * Building the `gateway` program loads no heavy module (CONTRIBUTING.md, "A CLI command"):
 * every run builds it, `--help` and `keys list` too, and the CLI tests run the binary about a
 * hundred times. Checked on the sources as text: the files cli/index.ts reaches through
 * static value imports (`import type` and `await import(…)` are not followed) must not
 * include the gateway, the plugins, the simulator, the store, the config loader or the
 * management views; an action imports those when it runs.
 */

const ROOT = packageRoot();
const STATIC = /^(?:import|export)\s+(?!type\s)[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]|^import\s+['"]([^'"]+)['"]/gm;

/** What a file imports statically, for their values: repository files (resolved) and packages (as named). */
function staticImports(file: string, text: string): string[] {
  return [...text.matchAll(STATIC)].map((m) => m[1] ?? m[2] ?? '').map((spec) => (spec.startsWith('.')
    ? relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, '.ts').split('\\').join('/')
    : `package:${spec}`));
}

/** Every file and package loaded with `from` before any of its code runs. */
function startupGraph(from: string, read: (file: string) => string): Set<string> {
  const seen = new Set<string>();
  const walk = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.startsWith('package:')) for (const next of staticImports(file, read(file))) walk(next);
  };
  walk(from);
  return seen;
}

const HEAVY = [
  /^src\/gateway\.ts$/, /^plugins\//, /^simulator\//, /^src\/store\/index\.ts$/, /^src\/config\/(schemas|gateway-config|yaml-file)\.ts$/,
  /^src\/providers\/catalog\.ts$/, /^src\/tenancy\/invalidation\.ts$/, /^src\/management\/views\.ts$/, /^src\/guardrails\/schema\.ts$/,
  /^src\/limits\/index\.ts$/, /^cli\/(config|catalog|simulator)\.ts$/,
  // Packages that take tens of milliseconds to load: the server, validation, the databases, Redis, AWS, YAML.
  /^package:(fastify|@fastify\/|ajv|pg|better-sqlite3|ioredis|@aws-sdk\/|yaml|undici)/,
];

describe('the CLI at start', () => {
  it('builds the program without loading the gateway, the plugins, the simulator, the store or the config', () => {
    const graph = startupGraph('cli/index.ts', (f) => readFileSync(join(ROOT, f), 'utf8'));
    expect(graph.has('cli/lists.ts')).toBe(true); // the walk reaches the command files
    expect(graph.has('package:commander')).toBe(true); // and the packages they load
    expect([...graph].filter((f) => HEAVY.some((h) => h.test(f)))).toEqual([]);
  });

  it('follows static imports and re-exports, not type-only or dynamic ones (the check can fail)', () => {
    const files: Record<string, string> = {
      'cli/index.ts': "import { a } from './a.js';\nimport type { T } from '../src/gateway.js';\nconst m = await import('../plugins/index.js');",
      'cli/a.ts': "export { b } from './b.js';",
      'cli/b.ts': "import {\n  type X,\n  y,\n} from '../simulator/server.js';\nimport Ajv from 'ajv';",
      'simulator/server.ts': '',
    };
    const graph = [...startupGraph('cli/index.ts', (f) => files[f] ?? '')];
    expect(graph).toEqual(['cli/index.ts', 'cli/a.ts', 'cli/b.ts', 'simulator/server.ts', 'package:ajv']);
    expect(graph.filter((f) => HEAVY.some((h) => h.test(f)))).toEqual(['simulator/server.ts', 'package:ajv']);
  });
});
