import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { copyProviders, tempDir } from './harness.js';

/**
 * The catalogue routes a requested name (model id or alias) to every model that carries
 * it, across all provider files (src/providers/catalog.ts). The same id in two files is
 * one model served twice (fallback), but an alias must never make two different models
 * answer to one name: that would bill and route a request to whichever file sorts first.
 */
interface Named { file: string; id: string }

function aliasProblems(dir: string): string[] {
  const ids = new Map<string, Named[]>();
  const aliases = new Map<string, Named[]>();
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    const doc = parse(readFileSync(join(dir, file), 'utf8')) as { models?: Array<{ id: string; aliases?: string[] }> };
    for (const m of doc.models ?? []) {
      ids.set(m.id, [...(ids.get(m.id) ?? []), { file, id: m.id }]);
      for (const a of m.aliases ?? []) aliases.set(a, [...(aliases.get(a) ?? []), { file, id: m.id }]);
    }
  }
  const problems: string[] = [];
  for (const [alias, owners] of aliases) {
    const targets = [...new Set(owners.map((o) => o.id))];
    if (targets.length > 1) {
      problems.push(`alias "${alias}" names different models: ${owners.map((o) => `${o.id} (${o.file})`).join(', ')}`);
    }
    const holders = ids.get(alias) ?? [];
    const strangers = owners.filter((o) => o.id !== alias);
    if (holders.length > 0 && strangers.length > 0) {
      problems.push(`alias "${alias}" of ${strangers.map((o) => `${o.id} (${o.file})`).join(', ')} is the id of another model (${holders.map((h) => h.file).join(', ')})`);
    }
  }
  return problems;
}

const model = (id: string, aliases: string[]): string =>
  `  - { id: ${id}, aliases: [${aliases.join(', ')}], modality: chat, pricing: { prompt: "0.000001", completion: "0.000002" } }\n`;
const provider = (id: string, models: string): string =>
  `id: ${id}\nname: ${id}\nbase_url: http://127.0.0.1:9/v1\nauth: { header: Authorization, format: "Bearer {key}" }\nendpoints:\n  chat: { path: /chat/completions, dialect: openai }\nmodels:\n${models}`;

/** The alias problems of the repo's providers/ with one more file beside them. */
function problemsBesideRepo(file: string, yaml: string): string[] {
  const dir = copyProviders(tempDir());
  writeFileSync(join(dir, file), yaml);
  return aliasProblems(dir);
}

describe('provider YAML names', () => {
  it('the shipped providers/*.yaml give every alias one model, and no alias is another model\'s id', () => {
    expect(aliasProblems(copyProviders(tempDir()))).toEqual([]);
  });

  it('finds the same alias on two different models, across files', () => {
    expect(problemsBesideRepo('zz-bad.yaml', provider('zzbad', model('zz-other-sonnet', ['claude-sonnet-4-5-20250929'])))).toEqual([
      'alias "claude-sonnet-4-5-20250929" names different models: claude-sonnet-4-5 (anthropic.yaml), zz-other-sonnet (zz-bad.yaml)',
    ]);
  });

  it('finds the same alias on two different models in one file', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'one.yaml'), provider('one', model('m-a', ['latest']) + model('m-b', ['latest'])));
    expect(aliasProblems(dir)).toEqual(['alias "latest" names different models: m-a (one.yaml), m-b (one.yaml)']);
  });

  it('finds an alias that is another model\'s id, in another provider file', () => {
    expect(problemsBesideRepo('zz-bad.yaml', provider('zzbad', model('zz-mini', ['gpt-4o-mini'])))).toEqual([
      'alias "gpt-4o-mini" of zz-mini (zz-bad.yaml) is the id of another model (azure.yaml, openai.yaml)',
    ]);
  });

  it('allows one model id served by two providers with the same alias', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.yaml'), provider('a', model('shared', ['shared-2026'])));
    writeFileSync(join(dir, 'b.yaml'), provider('b', model('shared', ['shared-2026'])));
    expect(aliasProblems(dir)).toEqual([]);
  });
});
