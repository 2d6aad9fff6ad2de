import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, changeProject } from '../src/tenancy/admin.js';
import { axeViolations } from './browser.js';
import { expectAccessible as accessible, shot as screenshot, signInToOrg, useConsole, visit as open } from './console-helpers.js';
import { postJson } from './harness.js';
import { addUser, PASSWORD } from './management-helpers.js';
import { looksLikeMp3, startS3, type TestS3 } from './s3.js';

/**
 * The web console in a real browser (headless Chromium), the pages beside the key journey
 * (console.test.ts), as the owner of an org who is an operator too: the provider keys
 * (deployments), a track played and a deleted one expired, usage that sums to the logs,
 * the overview, the models, the credits, a phone width, the dark scheme, and what a
 * member sees. On every page axe-core finds nothing critical or serious, the browser logs
 * no error and asks no host but the gateway.
 */

let s3: TestS3;
let orgId: string;
let trackId: string;
const c = useConsole(async () => {
  s3 = await startS3();
  return { yaml: { storage: { s3: s3.config } } };
}, async (t) => {
  const o = await t.org('acme', '10');
  orgId = o.org.id;
  await addUser(t, 'owner@acme.test', { operator: true, org: 'acme', role: 'owner' });
  // What the key journey leaves for these pages: a limited key that has chatted, in a project with an rpm of its own.
  const e2e = await createKey(t.gateway.store, 'acme', { name: 'e2e key', limits: { rpm: 2 } });
  await changeProject(t.gateway.store, undefined, e2e.project, { limits: { rpm: 1000 } });
  for (const content of ['Hello from the console test', 'limit me']) {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }, e2e.key);
    expect(r.status).toBe(200);
  }
  // A track in object storage for the Music page, and one whose object is deleted afterwards (410).
  const made: string[] = [];
  for (const prompt of ['a console song', 'a song that expired']) {
    const r = await postJson(`${t.url}/v1/music`, { model: 'tune-3-clip-preview', prompt }, o.key);
    expect(r.status).toBe(200);
    made.push((r.body as { id: string }).id);
  }
  trackId = made[0] as string;
  for (const key of await s3.keys()) if (key.includes(made[1] as string)) await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));
  await t.gateway.log.flush();
});
const { t } = c;
let page: typeof c.page;
beforeAll(async () => {
  page = c.page;
  await signInToOrg(page, t.url, 'owner@acme.test', orgId);
});
afterAll(async () => s3?.close());

const shot = (name: string): Promise<void> => screenshot(page, name);
const visit = (link: string, heading?: string): Promise<void> => open(page, link, heading);
const expectAccessible = (name: string): Promise<void> => accessible(page, name);

// One browser, one page, steps in order (each builds on the last); a step may wait on a slow shared machine.
describe('the web console: the other pages, and what a member sees', { timeout: 45_000 }, () => {
  it('shows an operator the provider keys (deployments) and their health, and reloads the configuration', async () => {
    await visit('Deployments');
    const openai = page.locator('table tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^openai$/ }) });
    expect((await openai.locator('td').allTextContents()).slice(0, 2)).toEqual(['openai', 'default']);
    expect(await openai.locator('td').nth(6).textContent()).toBe('healthy');
    await page.getByRole('button', { name: 'Reload configuration' }).click();
    await page.getByRole('status').getByText(/^Reloaded/).waitFor();
    await expectAccessible('deployments');
  });

  it('plays music through the content route, and shows a deleted track as expired (410)', async () => {
    await visit('Music');
    const player = page.locator(`audio[src$="/music/${trackId}/content"]`);
    await player.waitFor();
    await expect.poll(() => player.evaluate((a: HTMLAudioElement) => a.readyState), { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    const src = (await player.getAttribute('src')) ?? '';
    const bytes = await c.browser.context.request.get(t.url + src, { headers: { range: 'bytes=0-1023' } });
    expect([bytes.status(), bytes.headers()['content-type']]).toEqual([206, 'audio/mpeg']);
    expect(looksLikeMp3(Buffer.from(await bytes.body()))).toBe(true);
    expect(await page.getByRole('link', { name: 'Download' }).first().getAttribute('download')).toMatch(/\.mp3$/);
    await page.getByText('Expired: this track was deleted from storage (410 Gone).').waitFor();
    // The browser reports the player's failed load (410); nothing else.
    for (const e of c.browser.takeProblems().errors) expect(e).toMatch(/status of 410/);
    await expectAccessible('music');
  });

  it('shows usage that sums to the logs, with charts', async () => {
    await visit('Usage');
    const logs = await c.browser.context.request.get(`${t.url}/api/v1/orgs/${orgId}/logs?limit=200`);
    const micros = ((await logs.json()) as { data: Array<{ cost_usd: number }> }).data.reduce((a, r) => a + Math.round(r.cost_usd * 1e6), 0);
    const total = micros / 1e6;
    expect(await page.getByTestId('usage-cost').textContent()).toBe(`$${total.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 })}`);
    expect(Math.round(total * 1e6) % 1000).not.toBe(0); // the chats' micro-dollars are there to be shown, not rounded away
    expect(await page.locator('figure.chart svg rect').count()).toBeGreaterThan(0);
    await expectAccessible('usage');
    await page.getByLabel('Group by').selectOption('project');
    await page.getByRole('heading', { name: 'Cost per day by project' }).waitFor();
  });

  it('shows the overview: balance, spend, error rate, top models', async () => {
    await visit('Overview');
    expect(await page.locator('.stats').textContent()).toContain('Balance');
    await page.getByRole('cell', { name: 'gpt-4o-mini' }).first().waitFor();
    await expectAccessible('overview');
  });

  it('lists the models with prices per million tokens and per generation', async () => {
    await visit('Models');
    expect(await page.getByRole('row').filter({ hasText: 'gpt-4o-mini' }).first().textContent()).toMatch(/\/ 1M tokens/);
    expect(await page.getByRole('row').filter({ hasText: 'tune-3-clip-preview' }).first().textContent()).toContain('$0.05 per generation');
    await expectAccessible('models');
  });

  it('shows the credit ledger and lets an operator add credits', async () => {
    await visit('Credits');
    await page.getByLabel('Amount (USD; negative removes)').fill('5');
    await page.getByLabel('Note').fill('top-up from the console test');
    await page.getByRole('button', { name: 'Add credits' }).click();
    await page.getByRole('cell', { name: 'top-up from the console test' }).waitFor();
    await expectAccessible('credits');
  });

  it('is readable at a phone width (no page-wide horizontal scrolling)', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const link of ['Overview', 'Logs', 'Keys']) {
        await visit(link);
        const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.parentElement?.closest('.scroll, nav'))
          .map((e) => `${e.tagName.toLowerCase()}.${e.className}`));
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${link}: ${wide.join(', ')}`).toBe(true);
      }
      await shot('phone-keys');
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  it('passes axe-core in the dark colour scheme too', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      for (const link of ['Overview', 'Logs', 'Keys']) {
        await visit(link);
        expect(await axeViolations(page), `${link} (dark)`).toEqual([]);
      }
    } finally {
      await page.emulateMedia({ colorScheme: 'light' });
    }
  });

  it('shows a member what a member may do: no Provider keys, no Create key or Revoke, no Add credits', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await addUser(t, 'member@acme.test', { org: 'acme', role: 'member' });
    await page.getByLabel('Email').fill('member@acme.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents())
      .toEqual(['Overview', 'Keys', 'Logs', 'Usage', 'Cache', 'Music', 'Models', 'Members', 'Credits', 'Account']);
    expect(await page.getByLabel('Organization').count()).toBe(0); // one org, no switcher
    await visit('Keys');
    await page.getByRole('row').filter({ hasText: 'e2e key' }).waitFor();
    await page.getByRole('region', { name: 'Project limits' }).getByText('1,000 requests/min').waitFor(); // limits shown, read-only
    expect(await page.getByRole('button', { name: /Create key|Revoke|Edit/ }).count()).toBe(0);
    await visit('Credits');
    await page.getByRole('cell', { name: 'top-up from the console test' }).waitFor();
    expect(await page.getByRole('button', { name: 'Add credits' }).count()).toBe(0);
    await visit('Members');
    expect(await page.getByRole('form', { name: 'Add a member' }).count()).toBe(0);
    await expectAccessible('member-members');
  });

  it('signs out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  });
});
