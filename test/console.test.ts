import { beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible as accessible, useConsole, visit as open } from './console-helpers.js';
import { postJson } from './harness.js';
import { addUser, PASSWORD } from './management-helpers.js';

/**
 * The web console in a real browser (headless Chromium), the journey of an operator who
 * owns an org: sign in, create a key and use it, find the request in the log with its
 * cost, limit, audit, rotate and revoke the key. On every page axe-core finds nothing
 * critical or serious, the browser logs no error and asks no host but the gateway. The
 * read-only pages, music, credits, a phone width, the dark scheme and what a member sees:
 * console-pages.test.ts. Members, the account, provider keys and webhooks: console-admin.test.ts.
 */

const OPERATOR = 'ops@acme.test';

let orgId: string;
let demoKey: string;
const c = useConsole({}, async (t) => {
  const o = await t.org('acme', '10');
  orgId = o.org.id;
  demoKey = o.key;
  await addUser(t, OPERATOR, { operator: true });
  await t.org('globex', '3');
});
const { t } = c;
let page: typeof c.page;
let browser: typeof c.browser;
beforeAll(() => {
  page = c.page;
  browser = c.browser;
});

const visit = (link: string, heading?: string): Promise<void> => open(page, link, heading);
const expectAccessible = (name: string): Promise<void> => accessible(page, name);

/** The console's one money format (docs/console.md): exact, 2 to 6 decimals. */
const usd6 = (n: number): string => `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })}`;

// One browser, one page, steps in order (each builds on the last); a step may wait on a slow shared machine.
describe('the web console', { timeout: 45_000 }, () => {
  it('is served at /console: the app for every page path, hashed assets cached for good, no bundle file outside it', async () => {
    const index = await fetch(`${t.url}/console/orgs/x/logs`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await index.text();
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const js = await fetch(t.url + asset);
    expect([js.status, js.headers.get('content-type'), js.headers.get('cache-control')])
      .toEqual([200, 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable']);
    expect((await fetch(`${t.url}/console/assets/missing.js`)).status).toBe(404);
    for (const path of ['/console/../package.json', '/console/%2e%2e/%2e%2e/package.json', '/console/..%2f..%2fpackage.json', '/console/..%5c..%5cpackage.json']) {
      const r = await fetch(t.url + path);
      expect(await r.text(), path).not.toContain('"name": "tollgate"');
    }
  });

  it('signs in, with clear messages for a wrong password and for throttling', async () => {
    await page.goto(`${t.url}/console`);
    await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
    await expectAccessible('sign-in');
    await page.getByLabel('Email').fill(OPERATOR);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Wrong email or password.');
    // Four more failures for the account, then the sixth attempt is refused even with the right password.
    for (let i = 0; i < 4; i++) await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Too many failed sign-ins\. Try again in \d+ seconds\.$/);
    // The browser reports each refused request (401, then 429) on its console: those, and nothing else.
    const { errors } = browser.takeProblems();
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toMatch(/status of (401|429)/);
  });

  it('signs the operator in with the keyboard and shows the navigation', async () => {
    const other = 'owner@acme.test';
    await addUser(t, other, { operator: true, org: 'acme', role: 'owner' });
    await page.getByLabel('Email').fill(other);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Password').press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Console' });
    expect(await nav.getByRole('link').allTextContents())
      .toEqual(['Overview', 'Keys', 'Logs', 'Usage', 'Cache', 'Music', 'Models', 'Members', 'Provider keys', 'Webhooks', 'Credits', 'Audit', 'Deployments', 'Account']);
    // An operator sees every org in the switcher.
    expect(await page.getByLabel('Organization').locator('option').allTextContents()).toEqual(expect.arrayContaining(['acme', 'globex']));
    await page.getByLabel('Organization').selectOption({ label: 'acme' });
    await page.waitForURL(`**/console/orgs/${orgId}/overview`);
    // Keyboard: the first Tab reaches "Skip to content".
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
  });

  let key = '';
  let requestId = '';
  let cost = 0;

  it('creates a key with limits (a refused value shown at its field), shows it once with a copy button, and the key works', async () => {
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
    await visit('Keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    const form = page.getByRole('form', { name: 'Create key' });
    await form.getByLabel('Name', { exact: true }).fill('e2e key');
    const rpm = form.getByLabel('Requests per minute');
    await rpm.fill('2000000000'); // above the API's maximum: its 400 names limits.rpm
    await form.getByLabel('Budget (USD)').fill('1');
    await form.getByLabel('Budget period').selectOption('day');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    await expect.poll(() => rpm.getAttribute('aria-invalid')).toBe('true');
    const described = await rpm.getAttribute('aria-describedby');
    expect(await page.locator(`[id="${described}"]`).textContent()).toMatch(/^Requests per minute must be at most 1,000,000,000/); // in words, no API path (issue 35)
    expect(await rpm.evaluate((e) => e === document.activeElement)).toBe(true); // focus moved to the refused field
    expect(await form.getByRole('alert').count()).toBe(0); // shown at the field, not as a form-wide error
    await expectAccessible('keys-field-error');
    for (const e of browser.takeProblems().errors) expect(e).toMatch(/status of 400/);
    await rpm.fill('2');
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    const shown = page.getByLabel('New API key');
    await shown.waitFor();
    key = (await shown.textContent()) ?? '';
    expect(key).toMatch(/^tg_[A-Za-z0-9]{30,}$/);
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await expectAccessible('keys');

    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the console test' }] }, key);
    expect(r.status).toBe(200);
    requestId = r.headers.get('x-request-id') ?? '';
    cost = Number((r.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total);
    expect(requestId).toMatch(/^req_/);
    expect(cost).toBeGreaterThan(0);
    await t.gateway.log.flush();

    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'e2e key' });
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
    expect(await row.textContent()).toContain('just now'); // last used
    expect(await row.textContent()).toContain('2 requests/min');
    expect(await row.textContent()).toContain('$1.00 per day');
  });

  it('finds the request in Logs, newest first, with its cost, and opens it by its req_ id', async () => {
    await visit('Logs');
    const first = page.locator('table.logs tbody tr').first();
    expect(await first.textContent()).toContain(requestId);
    expect(await first.textContent()).toContain(usd6(cost));
    await expectAccessible('logs');
    await page.getByLabel('Status', { exact: true }).selectOption('error');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No requests match.').waitFor();
    await page.getByLabel('Find a request by id').fill(requestId);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('heading', { level: 1, name: `Request ${requestId}` }).waitFor();
    expect(await page.getByTestId('cost').textContent()).toBe(usd6(cost));
    const details = await page.locator('dl.details').textContent();
    expect(details).toContain('gpt-4o-mini');
    expect(details).toContain('openai');
    expect(details).toMatch(/Time to first byte\d/);
    await expectAccessible('log-detail');
  });

  it('pages through the log by cursor: Older, then Newer, with no row twice', async () => {
    // 50 more requests (in batches of 10), so the newest page of 50 leaves older rows for the next.
    for (let batch = 0; batch < 5; batch++) {
      await Promise.all(Array.from({ length: 10 }, () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'page me' }] }, demoKey)));
    }
    await t.gateway.log.flush();
    await visit('Logs');
    await page.getByRole('button', { name: 'Clear' }).click();
    const ids = () => page.locator('table.logs tbody tr td:nth-child(2)').allTextContents();
    await expect.poll(async () => (await ids()).length).toBe(50);
    const newest = await ids();
    expect(newest).not.toContain(requestId);
    await page.getByRole('button', { name: 'Older' }).click();
    await expect.poll(async () => (await ids())[0]).not.toBe(newest[0]);
    const older = await ids();
    expect(older).toContain(requestId);
    expect(older.filter((id) => newest.includes(id))).toEqual([]);
    expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Newer' }).click();
    await expect.poll(ids).toEqual(newest);
  });

  it('limits the key: refused at rpm 2 (429), its spend on the Keys page, a raised limit applies to the next request', async () => {
    const chat = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'limit me' }] }, key);
    // The first request may have left the minute's window by now: at most three more reach the limit of 2.
    let spentMicros = Math.round(cost * 1e6);
    let refused: Awaited<ReturnType<typeof chat>> | undefined;
    for (let i = 0; i < 3 && !refused; i++) {
      const r = await chat();
      if (r.status === 429) refused = r;
      else {
        expect(r.status).toBe(200);
        spentMicros += Math.round(Number((r.body as { usage: { cost_usd_total: number } }).usage.cost_usd_total) * 1e6);
      }
    }
    expect(refused?.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect((refused?.body as { error: { code: string } } | undefined)?.error.code).toBe('rate_limit_exceeded');
    const money = (micros: number): string => `$${(micros / 1e6).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })}`;

    await visit('Keys');
    const row = page.getByRole('row').filter({ hasText: 'e2e key' });
    await expect.poll(() => row.textContent()).toContain(`${money(spentMicros)} of $1.00 this day`);
    const tomorrow = new Date(Date.now() + 86_400_000).toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', timeZone: 'UTC' });
    expect(await row.textContent()).toContain(`resets ${tomorrow}, 00:00:00 UTC`);
    await page.getByRole('region', { name: 'Project limits' }).getByText('none').waitFor();
    await expectAccessible('keys-limits');

    await row.getByRole('button', { name: 'Edit limits of key e2e key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit limits of key “e2e key”' });
    expect(await dialog.getByLabel('Requests per minute').inputValue()).toBe('2');
    expect(await dialog.getByLabel('Budget (USD)').inputValue()).toBe('1');
    await dialog.getByLabel('Requests per minute').fill('5');
    await expectAccessible('keys-edit-limits');
    await dialog.getByRole('button', { name: 'Save limits' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(() => row.textContent()).toContain('5 requests/min');
    expect(await row.textContent()).toContain('$1.00 per day'); // the budget kept
    const next = await chat();
    expect([next.status, next.headers.get('x-ratelimit-limit-requests')]).toEqual([200, '5']);

    // The project's limits, shared by its keys: a generous rpm, so the other steps' requests are not refused.
    await page.getByRole('button', { name: 'Edit project limits' }).click();
    const pd = page.getByRole('dialog', { name: 'Edit project limits' });
    await pd.getByLabel('Requests per minute').fill('1000');
    await pd.getByRole('button', { name: 'Save limits' }).click();
    await pd.waitFor({ state: 'hidden' });
    await page.getByRole('region', { name: 'Project limits' }).getByText('1,000 requests/min').waitFor();
    const projectId = (await (await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/keys`)).json() as { data: Array<{ name: string; project_id: string }> })
      .data.find((k) => k.name === 'e2e key')?.project_id;
    const project = await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/projects/${projectId}`);
    expect(((await project.json()) as { limits: { rpm: number } }).limits.rpm).toBe(1000);
  });

  it('answers who changed the key\'s limit, when, from where and from what to what, on the Audit page', async () => {
    await visit('Audit');
    await page.getByLabel('Action').fill('key.update_limits');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/\/audit\?action=key\.update_limits$/);
    const rows = page.locator('table.audit tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    const cells = await rows.first().locator('td').allTextContents();
    expect(cells[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(cells.slice(1, 4)).toEqual(['owner@acme.test', '127.0.0.1', 'key.update_limits']); // the user signed in since the keyboard step
    expect(cells[4]).toMatch(/^key key_\w+$/);
    expect(cells[5]).toBe('limits.rpm: 2 → 5');
    await expectAccessible('audit');
    // The project's limit, changed after the key's: newest first, once the filter is cleared.
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
    await expect.poll(() => rows.first().locator('td').nth(3).textContent()).toBe('project.update');
    expect(await rows.first().locator('td').nth(5).textContent()).toBe('limits.rpm: — → 1000');
  });

  it('sets the project\'s default max_tokens in the project limits dialog, keeping its limits', async () => {
    await visit('Keys');
    const region = page.getByRole('region', { name: 'Project limits' });
    await region.getByText('not set').waitFor();
    await page.getByRole('button', { name: 'Edit project limits' }).click();
    const pd = page.getByRole('dialog', { name: 'Edit project limits' });
    expect(await pd.getByLabel('Default max_tokens').inputValue()).toBe('');
    expect(await pd.getByLabel('Requests per minute').inputValue()).toBe('1000');
    await pd.getByLabel('Default max_tokens').fill('2048');
    await pd.getByRole('button', { name: 'Save limits' }).click();
    await pd.waitFor({ state: 'hidden' });
    await region.getByText('2,048').waitFor();
    await region.getByText('1,000 requests/min').waitFor(); // the limits kept
    const projectId = (await (await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/keys`)).json() as { data: Array<{ name: string; project_id: string }> })
      .data.find((k) => k.name === 'e2e key')?.project_id;
    const project = await (await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/projects/${projectId}`)).json() as { default_max_tokens: number; limits: { rpm: number } };
    expect([project.default_max_tokens, project.limits.rpm]).toEqual([2048, 1000]);
  });

  it('sets the project\'s unsupported_params in the project limits dialog, keeping its default max_tokens, and clears it', async () => {
    await visit('Keys');
    const card = page.getByRole('region', { name: 'Project limits' }).locator('dl.details'); // not the dialog's options
    await card.getByText('gateway default').waitFor();
    const projectUrl = async (): Promise<string> => {
      const keys = await (await browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/keys`)).json() as { data: Array<{ name: string; project_id: string }> };
      return `${t.url}/api/v1/orgs/${orgId}/projects/${keys.data.find((k) => k.name === 'e2e key')?.project_id ?? ''}`;
    };
    const settings = async (): Promise<unknown> => {
      const p = await (await browser.context.request.get(await projectUrl())).json() as { unsupported_params: string | null; default_max_tokens: number | null };
      return [p.unsupported_params, p.default_max_tokens];
    };
    await page.getByRole('button', { name: 'Edit project limits' }).click();
    const pd = page.getByRole('dialog', { name: 'Edit project limits' });
    expect(await pd.getByLabel('Unsupported parameters').inputValue()).toBe('');
    await pd.getByLabel('Unsupported parameters').selectOption('error');
    await pd.getByRole('button', { name: 'Save limits' }).click();
    await pd.waitFor({ state: 'hidden' });
    await card.getByText('error', { exact: true }).waitFor();
    expect(await settings()).toEqual(['error', 2048]); // the default max_tokens kept
    await page.getByRole('button', { name: 'Edit project limits' }).click();
    expect(await pd.getByLabel('Unsupported parameters').inputValue()).toBe('error');
    await pd.getByLabel('Unsupported parameters').selectOption('');
    await pd.getByRole('button', { name: 'Save limits' }).click();
    await pd.waitFor({ state: 'hidden' });
    await card.getByText('gateway default').waitFor();
    expect(await settings()).toEqual([null, 2048]);
  });

  it('rotates the key, asking the grace period: the new secret is shown once, the old one still works during the grace', async () => {
    await visit('Keys');
    await page.getByRole('button', { name: 'Rotate key e2e key' }).click();
    const form = page.getByRole('form', { name: 'Rotate key “e2e key”' });
    await form.getByLabel('Old secret keeps working for (hours, 0 to 168)').fill('1');
    await form.getByRole('button', { name: 'Rotate key' }).click();
    const shown = page.getByLabel('New API key');
    await shown.waitFor();
    const rotated = (await shown.textContent()) ?? '';
    expect(rotated).toMatch(/^tg_[A-Za-z0-9]{30,}$/);
    expect(rotated).not.toBe(key);
    const prefix = ((await page.getByRole('row').filter({ hasText: 'e2e key' }).locator('code').textContent()) ?? '').replace('…', '');
    expect(prefix.length).toBeGreaterThan(3);
    expect(rotated.startsWith(prefix) && key.startsWith(prefix)).toBe(true); // the same key: its prefix is kept
    await page.getByText(/^The old secret is accepted until /).waitFor();
    await expectAccessible('keys-rotated');
    for (const secret of [rotated, key]) {
      const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'after rotation' }] }, secret);
      expect(r.status).toBe(200);
    }
    await t.gateway.log.flush();
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(rotated);
  });

  it('revokes the key after a confirmation; the key is then refused', async () => {
    await visit('Keys');
    await page.getByRole('button', { name: 'Revoke key e2e key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this key?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('row').filter({ hasText: 'e2e key' }).getByText('revoked').waitFor();
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, key);
    expect(r.status).toBe(401);
  });
});
