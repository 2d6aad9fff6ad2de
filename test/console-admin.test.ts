import { beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible as accessible, signInToOrg, useConsole, visit as open } from './console-helpers.js';
import { postJson } from './harness.js';
import { addUser, PASSWORD } from './management-helpers.js';
import { Receiver, signatureValid, until } from './webhook-receiver.js';

/**
 * The web console in a real browser, the org's administration by its owner (an operator
 * too): members (add, change a role, deactivate and reactivate), the account's password,
 * provider keys, webhooks. The key journey and the read-only pages: console.test.ts.
 */

let orgId: string;
const c = useConsole({ yaml: { webhooks: { allow_private_urls: true, retry_initial_ms: 200 } } }, async (t) => {
  orgId = (await t.org('acme', '10')).org.id;
  await addUser(t, 'owner@acme.test', { operator: true, org: 'acme', role: 'owner' });
});
const { t } = c;
let page: typeof c.page;
let browser: typeof c.browser;
beforeAll(async () => {
  page = c.page;
  browser = c.browser;
  await signInToOrg(page, t.url, 'owner@acme.test', orgId);
});

const visit = (link: string, heading?: string): Promise<void> => open(page, link, heading);
const expectAccessible = (name: string): Promise<void> => accessible(page, name);

// One browser, one page, steps in order (each builds on the last); a step may wait on a slow shared machine.
describe('the web console: the org\'s administration', { timeout: 45_000 }, () => {
  it('adds a member by email with a role', async () => {
    await visit('Members');
    const form = page.getByRole('form', { name: 'Add a member' });
    await form.getByLabel('Email').fill('new@acme.test');
    await form.getByLabel('Role').selectOption('admin');
    await form.getByLabel('First password (only for a new user)').fill('a long first password');
    await form.getByRole('button', { name: 'Add member' }).click();
    await page.getByText('Added new@acme.test as admin.').waitFor();
    expect(await page.getByLabel('Role of new@acme.test').inputValue()).toBe('admin');
    await expectAccessible('members');
    // Choosing another role changes nothing until "Change role".
    await page.getByLabel('Role of new@acme.test').selectOption('member');
    const before = await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/members`);
    expect(((await before.json()) as { data: Array<{ email: string; role: string }> }).data).toContainEqual(expect.objectContaining({ email: 'new@acme.test', role: 'admin' }));
    await page.getByRole('button', { name: 'Change role' }).click();
    await page.getByRole('button', { name: 'Change role' }).waitFor({ state: 'detached' });
    const after = await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/members`);
    expect(((await after.json()) as { data: Array<{ email: string; role: string }> }).data).toContainEqual(expect.objectContaining({ email: 'new@acme.test', role: 'member' }));
  });

  it('lets an operator deactivate a member (who can no longer sign in) and reactivate them', async () => {
    await visit('Members');
    const row = page.getByRole('row').filter({ hasText: 'new@acme.test' });
    await page.getByRole('button', { name: 'Deactivate new@acme.test' }).click();
    await row.getByText('deactivated').waitFor();
    await expectAccessible('members-deactivated');
    const refused = await postJson(`${t.url}/api/v1/session`, { email: 'new@acme.test', password: 'a long first password' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(401);
    expect((refused.body as { error: { code: string } }).error.code).toBe('account_deactivated');
    await page.getByRole('button', { name: 'Reactivate new@acme.test' }).click();
    await row.getByText('active', { exact: true }).waitFor();
    expect((await postJson(`${t.url}/api/v1/session`, { email: 'new@acme.test', password: 'a long first password' })).status).toBe(200);
    // No action on one's own row.
    expect(await page.getByRole('button', { name: /activate owner@acme\.test/ }).count()).toBe(0);
  });

  it('changes the signed-in user\'s password on the Account page (a wrong current password is said so)', async () => {
    await visit('Account');
    const form = page.getByRole('form', { name: 'Change password' });
    await form.getByLabel('Current password').fill('not my password');
    await form.getByLabel('New password (at least 10 characters)').fill('a brand new password');
    await form.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toBe('The current password is wrong.');
    for (const e of browser.takeProblems().errors) expect(e).toMatch(/status of 403/);
    await form.getByLabel('Current password').fill(PASSWORD);
    await form.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Password changed. Your other sessions have been signed out.').waitFor();
    await expectAccessible('account');
    expect((await postJson(`${t.url}/api/v1/session`, { email: 'owner@acme.test', password: PASSWORD })).status).toBe(401);
    expect((await postJson(`${t.url}/api/v1/session`, { email: 'owner@acme.test', password: 'a brand new password' })).status).toBe(200);
    // This session goes on.
    await visit('Overview');
  });

  it('sets, masks and removes a provider key', async () => {
    await visit('Provider keys');
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    await page.getByLabel('API key').fill('sk-console-test-0123456789abcd');
    await page.getByRole('button', { name: 'Save key' }).click();
    const row = page.getByRole('row').filter({ hasText: 'openai' });
    await row.waitFor();
    expect(await row.textContent()).not.toContain('sk-console-test-0123456789abcd');
    expect(await row.textContent()).toContain('abcd');
    await expectAccessible('provider-keys');
    await row.getByRole('button', { name: 'Remove the openai key' }).click();
    await page.getByRole('dialog', { name: 'Remove this provider key?' }).getByRole('button', { name: 'Remove key' }).click();
    await page.getByText('Removed the key for openai.').waitFor();
  });

  it('adds a webhook (its secret shown once, with a copy button), sends a test event, shows its delivery, removes it', async () => {
    const rx = await Receiver.start(0);
    try {
      await visit('Webhooks');
      await page.getByLabel('URL').fill(`${rx.url}/console`);
      await page.getByRole('button', { name: 'Add webhook' }).click();
      const secret = (await page.getByLabel('Signing secret').textContent()) ?? '';
      expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      await page.getByRole('button', { name: 'Copy secret' }).waitFor();
      await expectAccessible('webhooks');
      await page.getByRole('button', { name: 'Done' }).click();
      expect(await page.content()).not.toContain(secret);
      const row = page.getByRole('row').filter({ hasText: `${rx.url}/console` });
      await row.getByRole('button', { name: `Send test event to ${rx.url}/console` }).click();
      await page.getByText(`Test event queued for ${rx.url}/console.`).waitFor();
      expect(await until(async () => {
        await t.gateway.runTasks();
        return rx.delivered('/console').length === 1;
      })).toBe(true);
      expect(signatureValid(secret, rx.got[0]!)).toBe(true);
      await row.getByRole('link', { name: `${rx.url}/console` }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhook deliveries' }).waitFor();
      const delivery = page.getByRole('row').filter({ hasText: String(rx.delivered('/console')[0]!.id) });
      await delivery.waitFor();
      expect(await delivery.textContent()).toMatch(/test.*delivered.*1.*200/);
      await expectAccessible('webhook-deliveries');
      await page.getByRole('link', { name: 'All webhooks' }).click();
      await page.getByRole('button', { name: `Remove the webhook ${rx.url}/console` }).click();
      await page.getByRole('dialog', { name: 'Remove this webhook?' }).getByRole('button', { name: 'Remove webhook' }).click();
      await page.getByText(`Removed the webhook ${rx.url}/console.`).waitFor();
      await page.getByText('No webhooks: alerts are not sent anywhere.').waitFor();
    } finally {
      await rx.close();
    }
  });
});
