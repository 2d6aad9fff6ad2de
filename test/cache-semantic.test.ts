import { afterAll, describe, expect, it } from 'vitest';
import type { CacheSetting } from '../src/model/cache.js';
import { expectEveryLedgerExact, logRow, postJson, startTestGateway, type TestGateway } from './harness.js';

/*
 * The semantic cache (issue 33, docs/cache.md "Semantic"): the last user turn embedded with
 * response_cache.semantic.embedding_model (the simulator's bag-of-words vectors: a
 * re-punctuated question is ~0.99 similar, one with words changed ~0.67), looked up among
 * the project's entries with the same earlier turns only. The embedding is billed to the
 * org as a cost line of the request; the ledger equals the logs.
 */

let t: TestGateway;
afterAll(async () => {
  await expectEveryLedgerExact(t);
  await t.close();
});

async function project(name: string, setting: CacheSetting): Promise<{ key: string; orgId: string }> {
  if (!t) t = await startTestGateway({ yaml: { response_cache: { semantic: { embedding_model: 'text-embedding-3-large', dimensions: 256 } } } });
  const { org, key } = await t.org(name, '10');
  const p = await t.gateway.store.tenancy.findProject(org.id, 'default');
  await t.gateway.store.tenancy.setCacheSetting(org.id, 'project', p?.id ?? '', setting);
  return { key, orgId: org.id };
}

const Q = 'What is the capital city of France, what is its population, and which monument there is the most famous?';
const Q_CLOSE = 'what is the capital city of france what is its population and which monument there is the most famous';
const Q_FAR = 'Tell me the capital of France, how many people live in it, and its best known monument.';
const ask = (key: string, turns: Array<[string, string]>) => postJson(`${t.url}/v1/chat/completions`, {
  model: 'gpt-4o-mini', max_tokens: 100, messages: turns.map(([role, content]) => ({ role, content })),
}, key);
const chatCalls = (): number => t.sim.calls()['POST /openai/v1/chat/completions'] ?? 0;

describe('semantic cache', () => {
  it('a paraphrase above the threshold hits (charged only its embedding, shown in the log row); one below it misses', async () => {
    const a = await project('sem-a', { mode: 'semantic' });
    const first = await ask(a.key, [['user', Q]]);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const calls = chatCalls();
    const close = await ask(a.key, [['user', Q_CLOSE]]);
    expect(close.headers.get('x-tollgate-cache')).toBe('hit');
    expect(chatCalls()).toBe(calls);
    expect((close.body as { choices: unknown }).choices).toEqual((first.body as { choices: unknown }).choices);
    const row = await logRow(t, close.headers.get('x-request-id') ?? '');
    const line = row.extra?.cache_embedding as { model: string; tokens: number; cost_usd: number };
    expect(line).toMatchObject({ model: 'text-embedding-3-large' });
    expect(line.cost_usd).toBeGreaterThan(0);
    expect(row).toMatchObject({ cache: 'hit', costMicros: Math.round(line.cost_usd * 1e6) });
    expect(row.extra?.cache_similarity).toBeGreaterThan(0.95);
    const far = await ask(a.key, [['user', Q_FAR]]);
    expect(far.headers.get('x-tollgate-cache')).toBe('miss');
    expect(chatCalls()).toBe(calls + 1);
  });

  it('with a lower threshold the same paraphrase hits; an unrelated question still misses', async () => {
    const a = await project('sem-low', { mode: 'semantic', threshold: 0.4 });
    await ask(a.key, [['user', Q]]);
    expect((await ask(a.key, [['user', Q_FAR]])).headers.get('x-tollgate-cache')).toBe('hit');
    expect((await ask(a.key, [['user', 'How do I bake bread?']])).headers.get('x-tollgate-cache')).toBe('miss');
  });

  it('earlier turns must match exactly: the same last question after a different earlier turn misses', async () => {
    const a = await project('sem-turns', { mode: 'semantic' });
    const germany: Array<[string, string]> = [['user', 'I live in Germany.'], ['assistant', 'Noted.']];
    const france: Array<[string, string]> = [['user', 'I live in France.'], ['assistant', 'Noted.']];
    expect((await ask(a.key, [...germany, ['user', 'What is the capital city of my country, and which river runs through it?']])).headers.get('x-tollgate-cache')).toBe('miss');
    expect((await ask(a.key, [...germany, ['user', 'what is the capital city of my country and which river runs through it']])).headers.get('x-tollgate-cache')).toBe('hit');
    expect((await ask(a.key, [...france, ['user', 'what is the capital city of my country and which river runs through it']])).headers.get('x-tollgate-cache')).toBe('miss');
  });

  it('never crosses orgs: the same question in another org with semantic mode misses', async () => {
    const a = await project('sem-org1', { mode: 'semantic' });
    const b = await project('sem-org2', { mode: 'semantic' });
    await ask(a.key, [['user', Q]]);
    expect((await ask(a.key, [['user', Q_CLOSE]])).headers.get('x-tollgate-cache')).toBe('hit');
    // Org b's index is its own: neither the paraphrase nor the very same question finds org a's entry.
    expect((await ask(b.key, [['user', Q_CLOSE]])).headers.get('x-tollgate-cache')).toBe('miss');
    const c = await project('sem-org3', { mode: 'semantic' });
    expect((await ask(c.key, [['user', Q]])).headers.get('x-tollgate-cache')).toBe('miss');
  });
});
