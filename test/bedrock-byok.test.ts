import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { SIM_AWS } from '../simulator/aws-sigv4.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';

/**
 * An org's own Bedrock key (BYOK, `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`): a
 * malformed one and a wrong one are a clear upstream_unauthorized, never charged and
 * logged; a right one is served, signed with it, logged as byok and not debited.
 */
const t = useOrgGateway('bedrock-byok-host', '1', {}, { ledger: true });
const MODEL = 'bedrock/claude-haiku-4-5';
const chat = { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'Hi [[sim:tokens=3]]' }] };

async function orgWithKey(name: string, providerKey: string): Promise<{ orgId: string; key: string }> {
  const { org, key } = await t.org(name, '1');
  await t.gateway.store.providerKeys.set(org.id, 'bedrock', providerKey);
  return { orgId: org.id, key };
}

/** What the refusal of a malformed key says it should look like. */
const KEY_FORMAT = 'ACCESS_KEY_ID:SECRET_ACCESS_KEY';

describe("an org's own Bedrock key", () => {
  it.each([
    ['malformed (no secret)', 'JUST-AN-ACCESS-KEY-ID', KEY_FORMAT],
    ['malformed (too many parts)', 'AKIAORG:org-secret-2:token:extra', KEY_FORMAT],
    // A character no HTTP header may hold: signed, it would fail as a connection error (retried, then upstream_error).
    ['malformed (not ASCII)', 'AKIA€ORG:org-secret-3', KEY_FORMAT],
    ['malformed (a control character)', 'AKIA\u007fORG:org-secret-4', KEY_FORMAT],
    ['well-formed but wrong', `${SIM_AWS.accessKeyId}:not-the-org-secret`, 'signature we calculated does not match'],
  ])('%s → 502 upstream_unauthorized, nothing charged, a log row', async (name, providerKey, says) => {
    const org = await orgWithKey(`bedrock-byok-${name.replace(/\W+/g, '-')}`, providerKey);
    const r = await postJson(`${t.url}/v1/chat/completions`, chat, org.key);
    expect(r.status).toBe(502);
    const error = (r.body as ErrorBody).error;
    expect(error).toMatchObject({ code: 'upstream_unauthorized', usedProvider: 'bedrock' });
    expect(error.message).toContain(says);
    expect(JSON.stringify(r.body)).not.toMatch(/org-secret|not-the-org-secret/);
    expect(await t.balance(org.orgId)).toBe(1_000_000);
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect({ status: row.status, code: row.errorCode, cost: row.costMicros, provider: row.usedProvider }).toEqual({ status: 502, code: 'upstream_unauthorized', cost: 0, provider: 'bedrock' });
  });

  it('right: served, signed with the org key, logged as byok and not debited', async () => {
    const org = await orgWithKey('bedrock-byok-right', `${SIM_AWS.accessKeyId}:${SIM_AWS.secretAccessKey}`);
    const r = await postJson(`${t.url}/v1/chat/completions`, chat, org.key);
    expect(r.status).toBe(200);
    expect((r.body as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe('This is a');
    const row = await logRow(t, r.headers.get('x-request-id')!);
    expect({ byok: row.byok, provider: row.usedProvider, status: row.status }).toEqual({ byok: true, provider: 'bedrock', status: 200 });
    expect(row.costMicros).toBeGreaterThan(0);
    expect(await t.balance(org.orgId)).toBe(1_000_000);
  });
});
