import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../lib/paths.js';

/*
 * Telemetry costs nothing when off: prom-client and the OpenTelemetry SDK are loaded by
 * `import()` only when gateway.yaml configures them. Checked on the sources: walk the
 * static (value) imports from src/gateway.ts and list the packages they load.
 */

const ROOT = packageRoot();
/** `import … from 'x'` and `export … from 'x'`, but not `import type` / `export type` (erased at build). */
const STATIC = /^(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s*['"]([^'"]+)['"]|^import\s+['"]([^'"]+)['"]/gm;

function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const m of text.matchAll(STATIC)) {
      const spec = m[1] ?? m[2] ?? '';
      if (spec.startsWith('.')) visit(relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, '.ts'));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

describe('telemetry is loaded only when configured', () => {
  const { files, packages } = staticGraph('src/gateway.ts');

  it('walks the real graph (the check is not vacuous)', () => {
    expect(files).toContain('src/telemetry/index.ts');
    expect(files).toContain('src/telemetry/metrics-server.ts');
    expect(packages).toContain('fastify');
  });

  it('the gateway loads neither prom-client nor any @opentelemetry package unless asked', () => {
    expect([...packages].filter((p) => p === 'prom-client' || p.startsWith('@opentelemetry/'))).toEqual([]);
    expect(files).not.toContain('src/telemetry/metrics.ts');
    expect(files).not.toContain('src/telemetry/tracing.ts');
  });

  it('the modules that load them are the ones src/telemetry/index.ts imports on demand', () => {
    expect(staticGraph('src/telemetry/metrics.ts').packages).toContain('prom-client');
    expect(staticGraph('src/telemetry/tracing.ts').packages).toContain('@opentelemetry/sdk-trace-base');
    const index = readFileSync(join(ROOT, 'src/telemetry/index.ts'), 'utf8');
    expect(index).toContain("await import('./metrics.js')");
    expect(index).toContain("await import('./tracing.js')");
  });
});
