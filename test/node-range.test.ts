import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';

/** The supported Node range is stated once in package.json; the README and CI must say the same. */
const read = (file: string): string => readFileSync(join(packageRoot(), file), 'utf8');
const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;

describe('the supported Node range', () => {
  it('is a plain floor, and the Node running this suite is within it', () => {
    const floor = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(engines);
    expect(floor, engines).not.toBeNull();
    const [major, minor, patch] = process.versions.node.split('.').map(Number) as [number, number, number];
    const [fMajor, fMinor, fPatch] = (floor ?? []).slice(1).map(Number) as [number, number, number];
    expect(major * 1e6 + minor * 1e3 + patch).toBeGreaterThanOrEqual(fMajor * 1e6 + fMinor * 1e3 + fPatch);
  });

  it('is what the README states and what CI enforces', () => {
    const version = engines.slice(2);
    expect(read('README.md')).toContain(`Needs only Node.js ${version} or later`);
    expect(read('README.md')).toContain(`\`engines\` is \`${engines}\``);
    expect(read('.ci/run')).toMatch(/^npm ci --engine-strict /m);
  });
});
