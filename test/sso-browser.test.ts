import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, ensureConsoleBuilt, openBrowser, type Browser } from './browser.js';
import { useOrgGateway } from './fixtures.js';
import { oidcYaml, startIdp, type TestIdp } from './oidc-idp.js';

/*
 * Single sign-on from headless Chromium against a real OpenID provider on loopback
 * (test/oidc-idp.ts, whose login is an HTML form the browser fills in): the console's
 * "Sign in with SSO" ends on the console with the role the groups claim gives, and a
 * refused sign-in (a flow past its ten minutes, an expired ID token) ends back on the
 * sign-in page saying why. The gateway's clock (`now`) is moved while the browser is at
 * the provider.
 */
const CALLBACK = '/api/v1/session/oidc/callback';
const clock = { offsetMs: 0 };
let idp: TestIdp;
let browser: Browser;
let page: Page;

const t = useOrgGateway('acme', '5', async () => {
  ensureConsoleBuilt();
  idp = await startIdp();
  return { yaml: { console: { oidc: oidcYaml(idp) } }, now: () => Date.now() + clock.offsetMs };
});

beforeAll(async () => {
  idp.configure(t.url + CALLBACK, { idTokenTtl: 60 });
  browser = await openBrowser();
  page = browser.page;
  page.setDefaultTimeout(15_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await idp?.close();
});

afterEach(async () => {
  clock.offsetMs = 0;
  await browser.context.clearCookies(); // the next test starts signed out, at the gateway and at the provider
  expect(browser.takeProblems()).toEqual({ errors: [], foreign: [] });
});

/** From the console's sign-in page to the provider's login form, signs in there as `account`; `atProvider` runs before the form is sent. */
async function signInWithSso(account: string, atProvider: () => void = () => undefined): Promise<void> {
  await page.goto(`${t.url}/console/`);
  await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
  await page.getByRole('link', { name: 'Sign in with SSO' }).click();
  await page.getByRole('heading', { name: 'Test provider sign-in' }).waitFor();
  expect(new URL(page.url()).origin).toBe(idp.issuer);
  await page.getByLabel('Account').fill(account);
  atProvider();
  await page.getByRole('button', { name: 'Continue' }).click();
}

describe('single sign-on in the browser', { timeout: 45_000 }, () => {
  it('lands on the console with the org and the role from the groups claim', async () => {
    idp.groups.set('erin', ['acme-admins']);
    await signInWithSso('erin');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/orgs/${t.orgId}/overview`);
    expect(await page.locator('.org-name').textContent()).toBe('acme');
    expect(await page.locator('.who').textContent()).toBe('erin@acme.test · admin');
    // An admin's navigation: Provider keys is there.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Provider keys' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    // A user of single sign-on has no password: the Account page offers no password change.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Account' }).click();
    await page.getByText('You sign in with single sign-on').waitFor();
    expect(await page.getByRole('form', { name: 'Change password' }).count()).toBe(0);
  });

  /** Back on the sign-in page, which says that single sign-on failed. */
  async function expectSsoFailedAtSignIn(): Promise<void> {
    await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Single sign-on failed: /);
  }

  it('comes back to the sign-in page saying why when the flow expired at the provider (over ten minutes)', async () => {
    idp.groups.set('erin', ['acme-admins']);
    await signInWithSso('erin', () => {
      clock.offsetMs = 11 * 60_000;
    });
    await expectSsoFailedAtSignIn();
    expect(new URL(page.url()).search).toBe(''); // the reason is shown once, not kept in the address
    expect(await axeViolations(page)).toEqual([]);
    expect((await browser.context.cookies(t.url)).map((c) => c.name)).not.toContain('tollgate_session');
  });

  it('comes back to the sign-in page when the ID token has expired by the time it arrives', async () => {
    idp.groups.set('erin', ['acme-admins']);
    // The provider's ID tokens live 60 s; two minutes later the flow is still live (ten minutes), the token is not.
    await signInWithSso('erin', () => {
      clock.offsetMs = 2 * 60_000;
    });
    await expectSsoFailedAtSignIn();
    expect((await browser.context.cookies(t.url)).map((c) => c.name)).not.toContain('tollgate_session');
  });
});
