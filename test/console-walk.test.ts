import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/tenancy/admin.js';
import { axeViolations } from './browser.js';
import { expectAccessible, signInThroughForm, useConsole, visit as open } from './console-helpers.js';
import { postJson } from './harness.js';
import { addUser } from './management-helpers.js';

/**
 * The walk of issue 35, as a person does it in headless Chromium: search the log by text,
 * export a day as CSV and check its sums against Usage, pick a custom date range, read
 * spend by key, see p95 latency, watch a new request appear in Logs without reloading,
 * rename a key, switch the theme, and use every page at 390 px.
 */
const OPERATOR = 'walker@acme.test';
const DAY = 86_400_000;
const today = new Date(Math.floor(Date.now() / DAY) * DAY).toISOString().slice(0, 10);
const micros = (text: string): number => {
  const [i, f = ''] = text.split('.');
  return Number(i) * 1_000_000 + Number(f.padEnd(6, '0'));
};
/** The console's one money format (docs/console.md). */
const usd = (m: number): string => `$${(m / 1e6).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })}`;

let demoKey: string;
let botKey: string;
const c = useConsole({}, async (t) => {
  const o = await t.org('acme', '10');
  demoKey = o.key;
  botKey = (await createKey(t.gateway.store, 'acme', { name: 'checkout-bot' })).key;
  await addUser(t, OPERATOR, { operator: true });
  for (const [key, words] of [[demoKey, 'hello'], [botKey, 'an order'], [botKey, 'another order'], [demoKey, 'goodbye']] as const) {
    expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: words }] }, key)).status).toBe(200);
  }
  await t.gateway.log.flush();
});
const { t } = c;
let page: typeof c.page;
beforeAll(() => {
  page = c.page;
});
const visit = (link: string, heading?: string): Promise<void> => open(page, link, heading);
const logRows = () => page.locator('table.logs tbody tr');

describe('the console walk of issue 35', { timeout: 60_000 }, () => {
  it('searches the log by text: a key name finds that key\'s requests only', async () => {
    await signInThroughForm(page, t.url, OPERATOR);
    await visit('Logs');
    await page.getByLabel('Search', { exact: true }).fill('checkout');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/q=checkout/);
    await expect.poll(() => logRows().count()).toBe(2);
    for (const text of await logRows().allTextContents()) expect(text).toContain('checkout-bot');
    await expectAccessible(page, 'logs-search');
  });

  it('exports a day of the log as CSV whose sums equal that day on the Usage page', async () => {
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('From (UTC)').fill(`${today}T00:00`);
    await page.getByLabel('To (UTC)').fill(`${new Date(Date.parse(today) + DAY).toISOString().slice(0, 10)}T00:00`);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/from=/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'CSV', exact: true }).click()]);
    expect(download.suggestedFilename()).toMatch(/^tollgate-logs-org_\w+-[\d-]+\.csv$/);
    const lines = readFileSync((await download.path()) as string, 'utf8').trimEnd().split('\r\n');
    const cost = lines[0]!.split(',').indexOf('cost_usd');
    const rows = lines.slice(1).map((l) => l.split(','));
    expect(rows.length).toBe(4);
    const sum = rows.reduce((s, r) => s + micros(r[cost]!), 0);
    expect(sum).toBeGreaterThan(0);

    await visit('Usage');
    await page.getByLabel('Range').selectOption('custom');
    await page.getByLabel('From day (UTC)').fill(today);
    await page.getByLabel('To day (UTC, included)').fill(today);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(new RegExp(`from=${today}&to=${today}`));
    await expect.poll(() => page.getByTestId('usage-cost').textContent()).toBe(usd(sum));
  });

  it('reads spend by key and p95 latency on Usage', async () => {
    await page.getByLabel('Group by').selectOption('key');
    await page.waitForURL(/by=key/);
    const bot = page.getByRole('row').filter({ hasText: 'checkout-bot' });
    await bot.waitFor();
    expect(await bot.textContent()).toMatch(/checkout-bot · tg_\w+…2/); // its name, prefix, then 2 requests
    await page.getByRole('heading', { name: 'By key', exact: true }).waitFor();
    expect(await page.getByTestId('latency-p95').textContent()).toMatch(/^\d[\d,]* ms$/);
    await page.getByRole('img', { name: /^Latency per day, ms: p50 up to \d/ }).waitFor();
    await expectAccessible(page, 'usage-by-key');
  });

  it('shows a new request in Logs without a reload while Live is on', async () => {
    await visit('Logs');
    await page.getByLabel('Live: show new requests as they arrive').check();
    const before = await logRows().count();
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'live one' }] }, demoKey);
    const id = r.headers.get('x-request-id') as string;
    await page.locator('table.logs tbody tr').filter({ hasText: id }).waitFor();
    expect(await logRows().count()).toBe(before + 1);
    await page.getByLabel('Live: show new requests as they arrive').uncheck();
  });

  it('renames a key', async () => {
    await visit('Keys');
    await page.getByRole('button', { name: 'Rename key checkout-bot' }).click();
    await page.getByLabel('New name').fill('checkout-bot v2');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('cell', { name: 'checkout-bot v2', exact: true }).waitFor();
    await expectAccessible(page, 'keys-renamed');
  });

  it('warns on the Keys page when a key\'s budget is below one request\'s bound (a request without max_tokens would be refused)', async () => {
    await createKey(t.gateway.store, 'acme', { name: 'tiny-budget', limits: { budget: { micros: 100, period: 'day' } } });
    await visit('Overview');
    await visit('Keys'); // read anew: the key was made behind the page's back
    const warning = page.getByRole('row').filter({ hasText: 'tiny-budget' }).getByTestId('budget-shortfall');
    await warning.waitFor();
    expect(await warning.textContent()).toMatch(/^Below one request's bound on \d+ of \d+ chat models: a request without max_tokens reserves its whole output window \(.+: [\d,]+ output tokens, \$[\d.,]+\) and is refused/);
    expect(await page.getByRole('row').filter({ hasText: 'checkout-bot' }).getByTestId('budget-shortfall').count()).toBe(0); // no budget, no warning
    await expectAccessible(page, 'keys-budget-shortfall');
  });

  it('shows the key form\'s examples from the catalogue and its field errors in words; each provider once on Models', async () => {
    await page.getByRole('button', { name: 'Create key' }).click();
    const models = page.getByLabel(/^Allowed models/);
    // The form loads the catalogue when it opens: the examples appear once it has come.
    await expect.poll(() => models.getAttribute('placeholder')).toMatch(/^e\.g\. [\w.-]+, [\w.-]+$/);
    const examples = (await models.getAttribute('placeholder')) ?? '';
    const catalogue = (await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${demoKey}` } })).json()) as { data: Array<{ id: string }> };
    for (const id of examples.slice(5).split(', ')) expect(catalogue.data.map((m) => m.id)).toContain(id);
    await models.fill('no-such-model');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const error = page.locator('.field-error');
    await error.waitFor();
    expect(await error.textContent()).toBe('No provider serves a model "no-such-model" (the Models page lists them)'); // the server's words, no field path
    // The browser logs the refused request (400) as a console error: that one is expected.
    expect(c.browser.takeProblems().errors).toEqual([expect.stringContaining('status of 400')]);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await visit('Models');
    const claude = page.getByRole('row').filter({ hasText: 'claude-haiku-4-5' }).first();
    expect(await claude.textContent()).not.toMatch(/anthropic, anthropic/);
  });

  it('keeps the theme chosen in the header across a reload, and is accessible in it', async () => {
    await visit('Models'); // on its own, not only after the test before it
    await page.getByLabel('Theme').selectOption('dark');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Models' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await page.getByLabel('Theme').inputValue()).toBe('dark');
    expect(await axeViolations(page), 'models (dark, chosen)').toEqual([]);
    await page.getByLabel('Theme').selectOption('system');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBeUndefined();
  });

  it('lets an operator create an organization from the Overview', async () => {
    await visit('Overview');
    await page.getByLabel('Name', { exact: true }).fill('globex');
    await page.getByLabel('Starting credits, USD (optional)').fill('2.5');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await expect.poll(() => page.getByLabel('Organization', { exact: true }).locator('option:checked').textContent()).toBe('globex');
    await page.getByText('$2.50', { exact: true }).waitFor();
    const orgs = await t.gateway.store.tenancy.listOrgs(null);
    expect(orgs.map((o) => o.org.name).sort()).toEqual(['acme', 'globex']);
  });

  it('uses every page at 390 px: every tab in view, nothing wider than the screen but scrolling tables', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const links = await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
      expect(links).toContain('Music');
      for (const link of links) {
        await visit(link, link === 'Provider keys' ? 'Provider keys' : link);
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${link}: the page scrolls sideways`).toBe(true);
        const outside = await page.evaluate(() => [...document.querySelectorAll('nav[aria-label="Console"] a')]
          .filter((a) => a.getBoundingClientRect().right > window.innerWidth || a.getBoundingClientRect().left < 0).map((a) => a.textContent));
        expect(outside, `${link}: tabs out of view`).toEqual([]);
      }
      await visit('Logs');
      await page.getByText('Scroll the table sideways for every column →').waitFor();
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });
});
