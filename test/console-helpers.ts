import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { packageRoot } from '../src/lib/paths.js';
import { axeViolations, ensureConsoleBuilt, openBrowser, type Browser } from './browser.js';
import { type GatewaySetup, useGateway } from './fixtures.js';
import type { TestGateway } from './harness.js';
import { PASSWORD } from './management-helpers.js';

/**
 * The web console in a real browser (headless Chromium), for the console test files: a
 * gateway, one browser with one page, and after each step no console error, no uncaught
 * exception and no request to another host. `TOLLGATE_SCREENSHOTS=1` (npm run screenshots)
 * saves each checked page to docs/console/.
 */
export interface ConsoleHandle {
  /** The gateway (filled in by its own hooks). */
  t: TestGateway;
  /** Filled in by beforeAll, after `prepare`. */
  browser: Browser;
  page: Page;
}

export function useConsole(setup: GatewaySetup, prepare: (t: TestGateway) => Promise<void> = async () => undefined): ConsoleHandle {
  const t = useGateway(async (sim) => {
    ensureConsoleBuilt();
    return typeof setup === 'function' ? setup(sim) : setup;
  });
  const handle = { t } as ConsoleHandle;
  beforeAll(async () => {
    await prepare(t);
    handle.browser = await openBrowser();
    handle.page = handle.browser.page;
    handle.page.setDefaultTimeout(15_000); // a missing element fails naming its locator, before the test's own timeout
  }, 60_000);
  afterAll(async () => {
    await handle.browser?.close();
  });
  afterEach(() => {
    expect(handle.browser.takeProblems()).toEqual({ errors: [], foreign: [] });
  });
  return handle;
}

export async function shot(page: Page, name: string): Promise<void> {
  if (process.env.TOLLGATE_SCREENSHOTS !== '1') return;
  const dir = join(packageRoot(), 'docs', 'console');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

/** Opens a page from the navigation and waits for it: its heading, its data loaded. */
export async function visit(page: Page, link: string, heading = link): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await page.getByText('Loading…').first().waitFor({ state: 'detached' });
}

/** axe-core finds nothing critical or serious on the page; then its screenshot. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  expect(await axeViolations(page), name).toEqual([]);
  await shot(page, name);
}

/** Signs in through the sign-in page (the user's password is PASSWORD) and waits for the Overview. */
export async function signInThroughForm(page: Page, url: string, email: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Password').press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Signs in through the form, then opens the org's Overview (an operator may land on another org's). */
export async function signInToOrg(page: Page, url: string, email: string, orgId: string): Promise<void> {
  await signInThroughForm(page, url, email);
  await page.goto(`${url}/console/orgs/${orgId}/overview`);
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}
