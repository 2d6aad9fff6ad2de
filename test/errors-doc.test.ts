import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../src/lib/errors.js';
import { packageRoot } from '../src/lib/paths.js';

/** Rows of the docs/errors.md table: code, status (first number), type. */
function documented(): Map<string, { status: number; type: string }> {
  const text = readFileSync(join(packageRoot(), 'docs', 'errors.md'), 'utf8');
  const rows = new Map<string, { status: number; type: string }>();
  for (const line of text.split('\n')) {
    const m = /^\| `([a-z_]+)` \| (\d{3})[^|]* \| ([a-z_]+) \|/.exec(line);
    if (m) rows.set(m[1]!, { status: Number(m[2]), type: m[3]! });
  }
  return rows;
}

describe('docs/errors.md', () => {
  it('lists every error code with its status and type, and nothing else', () => {
    const docs = documented();
    const code = new Map(Object.values(ERRORS).map((e) => [e.code, { status: e.status, type: e.type }]));
    expect([...docs.keys()].sort()).toEqual([...code.keys()].sort());
    for (const [c, def] of code) expect(docs.get(c), c).toEqual(def);
  });
});
