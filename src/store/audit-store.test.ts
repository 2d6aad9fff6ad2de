import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drivers, type DriverEnv } from './drivers.testkit.js';
import { openStore } from './index.js';
import { rawQuery } from './raw.testkit.js';
import type { Store } from './types.js';
import { COMMAND_LINE, type AuditActor, type AuditEntry } from '../model/audit.js';

/**
 * The audit store on both drivers (SQLite and PostgreSQL): append, the filters, cursor
 * paging, the append-only trigger of migration 13, and the retention sweep.
 */
const alice: AuditActor = { type: 'user', userId: 'usr_alice', email: 'alice@acme.test', tokenId: null };
const script: AuditActor = { type: 'token', userId: 'usr_bob', email: 'bob@acme.test', tokenId: 'tok_script' };

const entry = (action: string, actor: AuditActor, over: Partial<AuditEntry> = {}): AuditEntry => ({
  action, orgId: 'org_a', targetType: 'key', targetId: 'key_1', actor, ip: actor.type === 'cli' ? null : '10.0.0.7', userAgent: 'test', before: null, after: null, ...over,
});

describe.each(drivers)('$name audit store', ({ setup }) => {
  let env: DriverEnv | undefined;
  let url: string;
  let store: Store;

  beforeAll(async () => {
    env = setup();
    url = env.url('audit');
    store = openStore(url);
    await store.ping();
    const log = store.auditLog;
    await log.append(entry('key.create', alice, { after: { name: 'ci', key: 'tg_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd' } }), 1_000);
    await log.append(entry('key.update_limits', alice, { before: { limits: { rpm: 5 } }, after: { limits: { rpm: 10 } } }), 2_000);
    await log.append(entry('key.revoke', script), 3_000);
    await log.append(entry('credits.add', COMMAND_LINE, { targetType: 'org', targetId: 'org_a', after: { balance_usd: '12.00' } }), 3_000);
    await log.append(entry('project.create', alice, { orgId: 'org_b', targetType: 'project', targetId: 'prj_1' }), 4_000);
  });
  afterAll(async () => {
    await store?.close();
    await env?.teardown();
  });

  it('appends rows and reads them back newest first, before/after intact and secrets masked', async () => {
    const all = await store.auditLog.list({}, 100);
    expect(all.map((r) => r.at)).toEqual([4_000, 3_000, 3_000, 2_000, 1_000]);
    expect(all.map((r) => r.action)).toEqual(expect.arrayContaining(['project.create', 'key.revoke', 'credits.add', 'key.update_limits', 'key.create']));
    expect(all[4]?.action).toBe('key.create');
    const limits = all.find((r) => r.action === 'key.update_limits');
    expect(limits).toMatchObject({ orgId: 'org_a', targetId: 'key_1', actor: alice, ip: '10.0.0.7', before: { limits: { rpm: 5 } }, after: { limits: { rpm: 10 } } });
    const created = all.find((r) => r.action === 'key.create');
    expect(created?.after).toEqual({ name: 'ci', key: 'tg_…abcd' });
    const raw = await rawQuery<{ after_json: string }>(url, 'SELECT after_json FROM audit_log WHERE action = ?', ['key.create']);
    expect(raw[0]?.after_json).not.toContain('AbCdEf');
  });

  it('filters by org, actor (user id, token id, email, cli), action or prefix, target and time', async () => {
    const actions = async (f: Parameters<Store['auditLog']['list']>[0]): Promise<string[]> => (await store.auditLog.list(f, 100)).map((r) => r.action).sort();
    expect(await actions({ orgId: 'org_b' })).toEqual(['project.create']);
    expect(await actions({ orgId: 'org_a', actor: 'usr_alice' })).toEqual(['key.create', 'key.update_limits']);
    expect(await actions({ actor: 'tok_script' })).toEqual(['key.revoke']);
    expect(await actions({ actor: 'BOB@acme.test' })).toEqual(['key.revoke']);
    expect(await actions({ actor: 'cli' })).toEqual(['credits.add']);
    expect(await actions({ action: 'key.' })).toEqual(['key.create', 'key.revoke', 'key.update_limits']);
    expect(await actions({ action: 'key.revoke' })).toEqual(['key.revoke']);
    expect(await actions({ target: 'prj_1' })).toEqual(['project.create']);
    expect(await actions({ from: 2_000, to: 4_000 })).toEqual(['credits.add', 'key.revoke', 'key.update_limits']);
  });

  it('pages by (at, id) cursor without skipping or repeating a row, ties included', async () => {
    const all = await store.auditLog.list({}, 100);
    const seen: string[] = [];
    let cursor: { at: number; id: string } | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await store.auditLog.list({}, 2, cursor);
      seen.push(...page.map((r) => r.id));
      const last = page[page.length - 1];
      if (page.length < 2 || !last) break;
      cursor = { at: last.at, id: last.id };
    }
    expect(seen).toEqual(all.map((r) => r.id));
  });

  it('refuses an UPDATE of a row: the trigger of migration 13', async () => {
    const [row] = await store.auditLog.list({ action: 'key.update_limits' }, 1);
    await expect(rawQuery(url, 'UPDATE audit_log SET after_json = ? WHERE id = ?', ['{"limits":{"rpm":1000}}', row?.id])).rejects.toThrow(/append-only/);
    const [again] = await store.auditLog.list({ action: 'key.update_limits' }, 1);
    expect(again?.after).toEqual({ limits: { rpm: 10 } });
  });

  it('sweeps only the rows older than the cutoff', async () => {
    expect(await store.auditLog.sweep(3_000)).toBe(2);
    expect((await store.auditLog.list({}, 100)).map((r) => r.at).sort()).toEqual([3_000, 3_000, 4_000]);
    expect(await store.auditLog.sweep(3_000)).toBe(0);
  });
});
