import { beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible as accessible, signInThroughForm, useConsole } from './console-helpers.js';
import { logRow, postJson } from './harness.js';
import { addUser, signIn } from './management-helpers.js';

/**
 * Issue 34 in the web console: a project's guardrails and body logging on the Keys page
 * (edited by an admin), and a request's verdicts and logged bodies — highlighted, the
 * masked values' placeholders marked — on its detail page.
 */
const EMAIL = 'jane.doe@example.com';
let orgId = '';
let key = '';
let projectId = '';
const c = useConsole({}, async (t) => {
  const made = await t.org('acme', '10');
  orgId = made.org.id;
  key = made.key;
  await addUser(t, 'owner@acme.test', { org: 'acme', role: 'owner' });
  const api = await signIn(t.url, 'owner@acme.test');
  projectId = ((await api.get(`/api/v1/orgs/${orgId}/projects`)).body.data as Array<{ id: string }>)[0]?.id ?? '';
});
const { t } = c;

describe('the web console: guardrails and logged bodies', { timeout: 45_000 }, () => {
  beforeAll(async () => signInThroughForm(c.page, t.url, 'owner@acme.test'));

  it('edits the project\'s guardrails and body logging on the Keys page', async () => {
    const { page } = c;
    await page.goto(`${t.url}/console/orgs/${orgId}/keys?project=${projectId}`);
    const card = page.getByRole('region', { name: 'Guardrails and body logging' });
    await card.getByText('none').first().waitFor();
    await card.getByRole('button', { name: 'Edit guardrails' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit guardrails' });
    await dialog.getByLabel('Guardrails (JSON)').fill('[{"type": "regex", "action": "block", "patterns": ["(open"]}]');
    await dialog.getByRole('button', { name: 'Save guardrails' }).click();
    await dialog.getByText(/guardrails\[0\]/).waitFor(); // the server's 400, next to the field
    for (const e of c.browser.takeProblems().errors) expect(e).toMatch(/status of 400/);
    await dialog.getByLabel('Guardrails (JSON)').fill('[{"type": "pii", "action": "mask", "restore": true}]');
    await dialog.getByLabel('Body logging').selectOption('redacted');
    await dialog.getByRole('button', { name: 'Save guardrails' }).click();
    await card.getByText(/pii · mask · restored in replies/).waitFor();
    await card.getByText(/redacted, kept 30 days/).waitFor();
    await accessible(page, 'project-guardrails');
  });

  it('shows a request\'s verdicts and its bodies, the placeholders marked and no masked value', async () => {
    const { page } = c;
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `mail ${EMAIL} today [[sim:echo_placeholders]]` }] }, key);
    expect(r.status).toBe(200);
    const id = r.headers.get('x-request-id') ?? '';
    await logRow(t, id);
    await page.goto(`${t.url}/console/orgs/${orgId}/logs/${id}`);
    await page.getByRole('heading', { level: 2, name: 'Guardrails' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'pre-upstream' }).getByText('mask', { exact: true }).waitFor();
    const request = page.getByTestId('request-body');
    await request.locator('mark', { hasText: '[EMAIL_1]' }).waitFor();
    expect(await request.textContent()).not.toContain(EMAIL);
    await page.getByTestId('response-body').locator('mark', { hasText: '[EMAIL_1]' }).first().waitFor();
    expect(await page.locator('main').textContent()).not.toContain(EMAIL);
    await accessible(page, 'log-detail-bodies');
  });
});
