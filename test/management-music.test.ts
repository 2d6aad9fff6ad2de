import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useGateway } from './fixtures.js';
import { postJson } from './harness.js';
import { addUser, Api, code, type Obj, rows, signIn } from './management-helpers.js';
import { looksLikeMp3, startS3, type TestS3 } from './s3.js';

/**
 * The console's music history and playback (a route the music plugin adds through
 * PluginApi.orgRoute): the same rules as /v1/music (spec §4.2, §4.3), scoped to the
 * signed-in user's org by the core.
 */
const DAY = 86_400_000;
let clock = Date.UTC(2026, 10, 1);
let s3: TestS3;
const t = useGateway(async () => {
  s3 = await startS3();
  return { now: () => clock, yaml: { storage: { s3: s3.config } } };
});
afterAll(async () => s3?.close());

let alice: { orgId: string; key: string };
let bob: { orgId: string };
let aliceApi: Api;
let bobApi: Api;
let track: { id: string; mp3: Buffer };

beforeAll(async () => {
  const a = await t.org('alice', '10');
  const b = await t.org('bob', '10');
  alice = { orgId: a.org.id, key: a.key };
  bob = { orgId: b.org.id };
  await addUser(t, 'member@alice.test', { org: 'alice', role: 'member' });
  await addUser(t, 'owner@bob.test', { org: 'bob', role: 'owner' });
  aliceApi = await signIn(t.url, 'member@alice.test');
  bobApi = await signIn(t.url, 'owner@bob.test');
  const r = await postJson(`${t.url}/v1/music`, { model: 'tune-3-clip-preview', prompt: 'a console song' }, alice.key);
  expect(r.status).toBe(200);
  const g = r.body as { id: string; audio: { base64: string } };
  track = { id: g.id, mp3: Buffer.from(g.audio.base64, 'base64') };
});

describe('music in the console', () => {
  it("lists the org's tracks like GET /v1/music, with a URL the console can play", async () => {
    const r = await aliceApi.get(`/api/v1/orgs/${alice.orgId}/music?limit=5`);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(rows(r)).toEqual([expect.objectContaining({
      id: track.id, object: 'music.generation', model: 'tune-3-clip-preview', prompt: 'a console song', expired: false, error: false,
      audio: { mime_type: 'audio/mpeg', storage: 's3', url: `/api/v1/orgs/${alice.orgId}/music/${track.id}/content` },
    })]);
    expect(rows(await bobApi.get(`/api/v1/orgs/${bob.orgId}/music`))).toEqual([]);
    const bad = await aliceApi.get(`/api/v1/orgs/${alice.orgId}/music?limit=0`);
    expect([bad.status, (bad.body.error as Obj).param]).toEqual([400, 'limit']);
  });

  it('plays the track through the session, with Range', async () => {
    const url = `${t.url}/api/v1/orgs/${alice.orgId}/music/${track.id}/content`;
    const whole = await fetch(url, { headers: aliceApi.headers });
    expect(whole.status).toBe(200);
    const bytes = Buffer.from(await whole.arrayBuffer());
    expect(bytes.equals(track.mp3)).toBe(true);
    expect(looksLikeMp3(bytes)).toBe(true);
    const part = await fetch(url, { headers: { ...aliceApi.headers, range: 'bytes=0-99' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(track.mp3.subarray(0, 100))).toBe(true);
  });

  it("is 404 for another org's track or org, 401 without a session", async () => {
    const viaOwnOrg = await bobApi.get(`/api/v1/orgs/${bob.orgId}/music/${track.id}/content`);
    expect([viaOwnOrg.status, code(viaOwnOrg)]).toEqual([404, 'not_found']);
    const viaTheirOrg = await bobApi.get(`/api/v1/orgs/${alice.orgId}/music`);
    expect([viaTheirOrg.status, code(viaTheirOrg)]).toEqual([404, 'not_found']);
    const anonymous = await new Api(t.url).get(`/api/v1/orgs/${alice.orgId}/music/${track.id}/content`);
    expect([anonymous.status, code(anonymous)]).toEqual([401, 'authentication_required']);
  });

  it('is 410 once the retention sweep deleted the track, and the history says expired', async () => {
    clock += 31 * DAY;
    await t.gateway.runTasks();
    aliceApi = await signIn(t.url, 'member@alice.test'); // a month later the session has long ended
    const r = await aliceApi.get(`/api/v1/orgs/${alice.orgId}/music/${track.id}/content`);
    expect([r.status, code(r)]).toEqual([410, 'gone']);
    expect(rows(await aliceApi.get(`/api/v1/orgs/${alice.orgId}/music`))[0]).toMatchObject({ id: track.id, audio: null, expired: true });
  });
});
