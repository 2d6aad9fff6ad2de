import { beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import { expectAccessible as accessible, signInToOrg, useConsole, visit as open } from './console-helpers.js';
import { postJson } from './harness.js';
import { addUser } from './management-helpers.js';

/**
 * The response cache in the web console (docs/cache.md): an owner turns it on for a project
 * in the Keys page's dialog; the Cache page then shows the hit rate and the money saved per
 * project and day; the request detail shows a hit, its age and its saving.
 */

let orgId: string;
let key: string;
const c = useConsole({}, async (t) => {
  orgId = (await t.org('cachecorp', '10')).org.id;
  key = (await createKey(t.gateway.store, 'cachecorp', { name: 'app' })).key;
  await addUser(t, 'owner@cachecorp.test', { org: 'cachecorp', role: 'owner' });
});
const { t } = c;
let page: typeof c.page;
beforeAll(async () => {
  page = c.page;
  await signInToOrg(page, t.url, 'owner@cachecorp.test', orgId);
});

describe('the web console: response cache', { timeout: 45_000 }, () => {
  it('turns the cache on for a project, then shows the hit rate, the saving, and a hit in the request detail', async () => {
    await open(page, 'Keys');
    expect(await page.getByTestId('project-cache').textContent()).toBe('off');
    await page.getByRole('button', { name: 'Edit response cache', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Response cache of the project' });
    await dialog.getByLabel('Mode').selectOption('exact');
    await dialog.getByLabel('Time to live (seconds)').fill('600');
    await dialog.getByRole('button', { name: 'Save cache' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByTestId('project-cache').getByText('exact, 600 s').waitFor();
    const ask = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'console cache' }], max_tokens: 40 }, key);
    const miss = await ask();
    const hit = await ask();
    expect([miss.headers.get('x-tollgate-cache'), hit.headers.get('x-tollgate-cache')]).toEqual(['miss', 'hit']);
    await t.gateway.log.flush();
    await open(page, 'Cache', 'Response cache');
    const row = page.getByRole('row').filter({ hasText: 'default' });
    await row.getByText('50%').waitFor();
    const saved = (miss.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total;
    expect(await page.getByTestId('cache-saved').textContent()).toContain(String(saved).replace(/^0/, ''));
    await accessible(page, 'cache');
    await page.goto(`${t.url}/console/orgs/${orgId}/logs/${hit.headers.get('x-request-id') ?? ''}`);
    await page.getByTestId('response-cache').getByText(/^hit \(stored/).waitFor();
  });
});
