import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway, type OrgTestGateway } from './fixtures.js';
import { logRow, postJson } from './harness.js';
import { cli, defaultProject, KEY, lastLine, sleep, STACK_FRAME, useCliServer } from './cli-helpers.js';
import { type Api, type OwnedProject, ownerWithProject } from './management-helpers.js';

/**
 * Issue 29: `unsupported_params` overridable per project (docs/chat.md, "Unsupported
 * parameters"). The project's policy wins over gateway.yaml's
 * `settings.chat.unsupported_params`, which wins over the model's and the provider's in
 * provider YAML; null clears it. Set by the project PATCH and `gateway projects update`.
 */

const HEADER = 'x-tollgate-dropped-params';
type Body = Record<string, unknown>;

/** A Messages request with cache_control hints and a web search server tool: translated to Gemini by default. */
const messages = (model: string): Body => ({
  model, max_tokens: 50,
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello there', cache_control: { type: 'ephemeral' } }] }],
  tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }],
});

const lastUpstream = (t: { sim: OrgTestGateway['sim'] }): Body => JSON.parse(t.sim.received().at(-1)?.body ?? '{}') as Body;
const requestIdOf = (r: { headers: Headers }): string => r.headers.get('x-request-id') ?? '';

/** An owner's session and a new project (with a key) in the gateway's org; the project starts with no policy of its own. */
async function projectWithKey(t: OrgTestGateway, org: string, email: string, name: string): Promise<OwnedProject> {
  const made = await ownerWithProject(t, org, email, name);
  expect(made.project.unsupported_params).toBeNull();
  return made;
}

describe('a project\'s unsupported_params, with no gateway.yaml policy (translate)', () => {
  const t = useOrgGateway('pup-default', '5', {}, { ledger: true });
  let owner: Api;
  let path: string;
  let key: string;
  beforeAll(async () => {
    ({ owner, path, key } = await projectWithKey(t, 'pup-default', 'owner@pup.test', 'agents'));
  });

  it('unset, the project\'s key gets the default: the web search translated to googleSearch, cache_control dropped', async () => {
    const r = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(lastUpstream(t).tools).toEqual([{ googleSearch: {} }]);
    expect(r.headers.get(HEADER)).toBe('cache_control');
  });

  it('set to error by PATCH (shown by the response, GET and the list), what the default translates is refused: 400 naming the field, no upstream call', async () => {
    const p = await owner.patch(path, { unsupported_params: 'error' });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect(p.body).toMatchObject({ unsupported_params: 'error', default_max_tokens: null });
    expect(p.body.limits).toEqual({ rpm: null, tpm: null, max_concurrent: null, budget_usd: null, budget_period: null, mode: null });
    expect((await owner.get(path)).body.unsupported_params).toBe('error');
    const listed = (await owner.get(`/api/v1/orgs/${t.orgId}/projects`)).body.data as Body[];
    expect(listed.find((x) => x.name === 'agents')?.unsupported_params).toBe('error');
    expect(listed.find((x) => x.name === 'default')?.unsupported_params).toBeNull();
    const calls = t.sim.received().length;
    const r = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: { param: 'tools[0]' } });
    expect(t.sim.received().length).toBe(calls);
    const row = await logRow(t, requestIdOf(r));
    expect(row.status).toBe(400);
    // The org's other project has no policy of its own: the default applies there.
    const other = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), t.key);
    expect(other.status).toBe(200);
    expect(lastUpstream(t).tools).toEqual([{ googleSearch: {} }]);
  });

  it('set to drop, everything unsupported is dropped, even what has a translation, and named in the header and the log row', async () => {
    expect((await owner.patch(path, { unsupported_params: 'drop' })).status).toBe(200);
    const r = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(lastUpstream(t)).not.toHaveProperty('tools');
    expect(r.headers.get(HEADER)).toBe('web_search_20250305, cache_control');
    expect((await logRow(t, requestIdOf(r))).extra?.dropped_params).toEqual(['web_search_20250305', 'cache_control']);
  });

  it('PATCH refuses anything but error, drop, translate or null with a 400 naming the field, and keeps the value', async () => {
    for (const bad of ['x', 'Drop', '', 1, true, ['drop'], { policy: 'drop' }]) {
      const r = await owner.patch(path, { unsupported_params: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect((r.body as unknown as ErrorBody).error, JSON.stringify(bad)).toMatchObject({ code: 'invalid_request', param: 'unsupported_params' });
      // The message names the field in words (docs/management.md), `param` by its path.
      expect((r.body as unknown as ErrorBody).error.message).toMatch(/^Unsupported parameters policy must be (one of "error", "drop", "translate", null|text or null)$/);
    }
    expect((await owner.get(path)).body.unsupported_params).toBe('drop');
  });

  it('PATCH with other fields alone leaves it as it is', async () => {
    const r = await owner.patch(path, { limits: { rpm: 100 }, default_max_tokens: 64 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ unsupported_params: 'drop', default_max_tokens: 64, limits: { rpm: 100 } });
  });

  it('PATCH with null clears it: the default applies again', async () => {
    const r = await owner.patch(path, { unsupported_params: null });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.unsupported_params).toBeNull();
    const chat = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key);
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expect(lastUpstream(t).tools).toEqual([{ googleSearch: {} }]);
    expect(chat.headers.get(HEADER)).toBe('cache_control');
  });
});

describe('a project\'s unsupported_params wins over gateway.yaml\'s', () => {
  const t = useOrgGateway('pup-yaml', '5', { yaml: { settings: { chat: { unsupported_params: 'error' } } } }, { ledger: true });

  it('gateway.yaml says error; a project set to translate is served, translated; cleared, it is refused again', async () => {
    const { owner, path, key } = await projectWithKey(t, 'pup-yaml', 'owner@pup-yaml.test', 'lenient');
    expect((await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key)).status).toBe(400);
    expect((await owner.patch(path, { unsupported_params: 'translate' })).status).toBe(200);
    const r = await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(lastUpstream(t).tools).toEqual([{ googleSearch: {} }]);
    expect(r.headers.get(HEADER)).toBe('cache_control');
    expect((await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), t.key)).status).toBe(400); // the org's default project
    expect((await owner.patch(path, { unsupported_params: null })).status).toBe(200);
    expect((await postJson(`${t.url}/v1/messages`, messages('gemini-2.5-flash'), key)).status).toBe(400);
  });
});

describe('gateway projects update --unsupported-params', { timeout: 60_000 }, () => {
  const env = useCliServer('tollgate-cli-pup-');
  const column = (): unknown => defaultProject(env.db, 'unsupported_params')?.unsupported_params;

  it('sets it and prints it; the running server applies it to the project\'s keys', async () => {
    const key = lastLine((await cli(['keys', 'create', '--org', 'acme', '--config', env.config])).stdout);
    expect(key).toMatch(KEY);
    const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--unsupported-params', 'drop', '--config', env.config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('project "default" in "acme": unsupported_params drop\n');
    expect(column()).toBe('drop');
    let header: string | null = null;
    for (let i = 0; i < 40 && header !== 'web_search_20250305, cache_control'; i++) {
      if (i > 0) await sleep(100);
      const res = await postJson(`${env.server.url}/v1/messages`, messages('gemini-2.5-flash'), key);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      header = res.headers.get(HEADER);
    }
    expect(header).toBe('web_search_20250305, cache_control');
    expect(JSON.parse(env.sim.received().at(-1)?.body ?? '{}')).not.toHaveProperty('tools');
  });

  it('sets it beside --default-max-tokens, refuses a bad value (exit 1, nothing written) and clears it with none', async () => {
    const both = await cli(['projects', 'update', 'default', '--org', 'acme', '--unsupported-params', 'error', '--default-max-tokens', '300', '--config', env.config]);
    expect(both.stdout).toBe('project "default" in "acme": default max_tokens 300, unsupported_params error\n');
    expect(column()).toBe('error');
    const bad = await cli(['projects', 'update', 'default', '--org', 'acme', '--unsupported-params', 'ignore', '--config', env.config]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--unsupported-params.*'ignore' is invalid\. Allowed choices are error, drop, translate, none/);
    expect(bad.stderr).not.toMatch(STACK_FRAME);
    expect(column()).toBe('error');
    const none = await cli(['projects', 'update', 'default', '--org', 'acme', '--config', env.config]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/give --default-max-tokens .*, --unsupported-params .* or --body-logging/);
    const r = await cli(['projects', 'update', 'default', '--org', 'acme', '--unsupported-params', 'none', '--config', env.config]);
    expect(r.stdout).toBe('project "default" in "acme": unsupported_params none\n');
    expect(column()).toBeNull();
  });
});
