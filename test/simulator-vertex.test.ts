import { sign } from 'node:crypto';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { GoogleGenAI } from '@google/genai';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedText, toFloatList } from '../simulator/vectors.js';
import { tempDir } from './harness.js';
import { serviceAccount, type TestServiceAccount } from './vertex-helpers.js';
import { startSimulator, type Simulator } from '../simulator/server.js';

/**
 * The simulator's Google token endpoint and Vertex AI routes verify what Google does
 * (the assertion's signature, audience and lifetime; live tokens of the path's project),
 * and the official clients work against them unchanged.
 */
let sim: Simulator;
let sa: TestServiceAccount;
const dir = tempDir();
const PROJECT = 'tollgate-test';

beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
  sa = serviceAccount(sim, dir, { projectId: PROJECT });
});
afterAll(() => sim.close());

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

/** A JWT assertion signed with `pem`, claims overridable. */
function assertion(pem: string, claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({
    iss: sa.email, scope: 'https://www.googleapis.com/auth/cloud-platform', aud: `${sim.url}/oauth2/token`, iat: now, exp: now + 3600, ...claims,
  })}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), pem).toString('base64url')}`;
}

async function tokenRequest(jwt: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sim.url}/oauth2/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: jwt }).toString(),
  });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

async function token(): Promise<string> {
  const r = await tokenRequest(assertion(sa.privateKeyPem));
  expect(r.status).toBe(200);
  return r.body.access_token as string;
}

const geminiPath = (project = PROJECT): string => `${sim.url}/vertex/v1/projects/${project}/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent`;
const generate = (bearer: string | undefined, project?: string): Promise<Response> => fetch(geminiPath(project), {
  method: 'POST', headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
  body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
});

describe('the token endpoint', () => {
  it('issues a short-lived bearer token for a well-signed assertion', async () => {
    const r = await tokenRequest(assertion(sa.privateKeyPem));
    expect(r).toMatchObject({ status: 200, body: { token_type: 'Bearer', expires_in: 3599 } });
  });

  it.each([
    ['signed with another key', () => assertion(serviceAccount(sim, dir, { register: false }).privateKeyPem), 'Invalid JWT Signature.'],
    ['for another audience', () => assertion(sa.privateKeyPem, { aud: 'https://oauth2.googleapis.com/token' }), 'Failed audience check'],
    ['expired', () => assertion(sa.privateKeyPem, { iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }), 'short-lived'],
    ['living over an hour', () => assertion(sa.privateKeyPem, { exp: Math.floor(Date.now() / 1000) + 7200 }), 'short-lived'],
    ['for an unknown account', () => assertion(sa.privateKeyPem, { iss: 'nobody@x.iam.gserviceaccount.com' }), 'account not found'],
    ['with its signature cut', () => `${assertion(sa.privateKeyPem).slice(0, -8)}AAAAAAAA`, 'Invalid JWT Signature.'],
  ])('refuses an assertion %s with invalid_grant', async (_name, jwt, description) => {
    const r = await tokenRequest(jwt());
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_grant');
    expect(r.body.error_description).toContain(description);
  });

  it('refuses a disabled account, and its tokens stop working', async () => {
    const other = serviceAccount(sim, dir, { projectId: PROJECT });
    const r = await tokenRequest(assertion(other.privateKeyPem, { iss: other.email }));
    const live = r.body.access_token as string;
    expect((await generate(live)).status).toBe(200);
    sim.google.disable(other.email);
    expect((await generate(live)).status).toBe(401);
    expect(await tokenRequest(assertion(other.privateKeyPem, { iss: other.email }))).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid grant: account not found' } });
  });
});

describe('the Vertex AI routes', () => {
  it('take only the live tokens the endpoint issued, for the account\'s own project', async () => {
    expect((await generate(undefined)).status).toBe(401);
    const forged = await generate('ya29.sim-made-up');
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
    const live = await token();
    expect((await generate(live)).status).toBe(200);
    const denied = await generate(live, 'someone-elses-project');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ error: { status: 'PERMISSION_DENIED' } });
  });

  it('expire their tokens', async () => {
    sim.google.tokenTtlSeconds = 1;
    try {
      const short = await token();
      expect((await generate(short)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await generate(short)).status).toBe(401);
    } finally {
      sim.google.tokenTtlSeconds = 3599;
    }
  });

  it('refuse a Claude body that names the model or lacks anthropic_version', async () => {
    const url = `${sim.url}/vertex/v1/projects/${PROJECT}/locations/us-central1/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict`;
    const send = async (body: unknown): Promise<{ status: number; message: unknown }> => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${await token()}` }, body: JSON.stringify(body) });
      return { status: res.status, message: ((await res.json()) as { error?: { message?: unknown } }).error?.message };
    };
    const messages = [{ role: 'user', content: 'hi' }];
    expect(await send({ messages, max_tokens: 10 })).toEqual({ status: 400, message: 'anthropic_version: Field required' });
    expect(await send({ anthropic_version: 'vertex-2023-10-16', model: 'claude-haiku-4-5', messages, max_tokens: 10 })).toEqual({ status: 400, message: 'model: Extra inputs are not permitted' });
    expect((await send({ anthropic_version: 'vertex-2023-10-16', messages, max_tokens: 10 })).status).toBe(200);
  });
});

/** google-auth-library's hook for a token minted elsewhere: an OAuth2 client holding it (it never posts to Google's fixed token URL). */
async function authClient(): Promise<OAuth2Client> {
  const client = new OAuth2Client();
  client.setCredentials({ access_token: await token() });
  return client;
}

describe('the official clients, pointed straight at the simulator', () => {
  it('@anthropic-ai/vertex-sdk: a message and a stream (rawPredict, streamRawPredict)', async () => {
    const client = new AnthropicVertex({ region: 'us-central1', projectId: PROJECT, baseURL: `${sim.url}/vertex/v1`, authClient: await authClient(), maxRetries: 0 });
    const msg = await client.messages.create({ model: 'claude-haiku-4-5@20251001', max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }] });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: 'This is a simulated reply. This is a' });
    expect(msg.usage.output_tokens).toBe(8);
    let text = '';
    for await (const ev of client.messages.stream({ model: 'claude-haiku-4-5@20251001', max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }] })) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    }
    expect(text).toBe('This is a simulated reply. This is a');
    const routes = Object.keys(sim.calls());
    expect(routes).toContain(`POST /vertex/v1/projects/${PROJECT}/locations/us-central1/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict`);
    expect(routes).toContain(`POST /vertex/v1/projects/${PROJECT}/locations/us-central1/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict`);
  });

  it('@google/genai in Vertex mode: generateContent and a stream', async () => {
    const ai = new GoogleGenAI({
      vertexai: true, project: PROJECT, location: 'us-central1',
      googleAuthOptions: { authClient: await authClient() }, httpOptions: { baseUrl: `${sim.url}/vertex`, apiVersion: 'v1' },
    });
    const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hello' });
    expect(r.text).toBe('This is a simulated reply. This is a');
    expect(r.usageMetadata?.candidatesTokenCount).toBe(8);
    let text = '';
    for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hello' })) text += chunk.text ?? '';
    expect(text).toBe('This is a simulated reply. This is a');
  });

  it('@google/genai in Vertex mode: embedContent is :predict, one instance for gemini-embedding-001, a batch in order for text-embedding-005', async () => {
    const ai = new GoogleGenAI({
      vertexai: true, project: PROJECT, location: 'us-central1',
      googleAuthOptions: { authClient: await authClient() }, httpOptions: { baseUrl: `${sim.url}/vertex`, apiVersion: 'v1' },
    });
    const one = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: 'Hello there', config: { outputDimensionality: 64, taskType: 'RETRIEVAL_QUERY' } });
    expect(one.embeddings?.[0]?.values).toEqual(toFloatList(embedText('Hello there', 64)));
    expect(one.embeddings?.[0]?.statistics).toMatchObject({ tokenCount: 3, truncated: false });
    const sent = sim.received().at(-1);
    expect(sent?.route).toBe(`POST /vertex/v1/projects/${PROJECT}/locations/us-central1/publishers/google/models/gemini-embedding-001:predict`);
    expect(JSON.parse(sent?.body ?? '{}')).toEqual({ instances: [{ content: 'Hello there', task_type: 'RETRIEVAL_QUERY' }], parameters: { outputDimensionality: 64 } });
    await expect(ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['a', 'b'] })).rejects.toMatchObject({ status: 400 });
    const batch = await ai.models.embedContent({ model: 'text-embedding-005', contents: ['first text', 'second text'] });
    expect(batch.embeddings?.map((e) => e.values)).toEqual([toFloatList(embedText('first text', 768)), toFloatList(embedText('second text', 768))]);
    expect(batch.embeddings?.map((e) => e.statistics?.tokenCount)).toEqual([3, 3]);
    await expect(ai.models.embedContent({ model: 'text-embedding-005', contents: 'x', config: { outputDimensionality: 769 } })).rejects.toMatchObject({ status: 400 });
  });

  it('the clients get 401 with a token the simulator never issued', async () => {
    const client = new OAuth2Client();
    client.setCredentials({ access_token: 'ya29.not-issued' });
    const vertex = new AnthropicVertex({ region: 'us-central1', projectId: PROJECT, baseURL: `${sim.url}/vertex/v1`, authClient: client, maxRetries: 0 });
    await expect(vertex.messages.create({ model: 'claude-haiku-4-5@20251001', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 401 });
    const embed = await fetch(`${sim.url}/vertex/v1/projects/${PROJECT}/locations/us-central1/publishers/google/models/gemini-embedding-001:predict`, {
      method: 'POST', headers: { authorization: 'Bearer ya29.not-issued', 'content-type': 'application/json' }, body: JSON.stringify({ instances: [{ content: 'x' }] }),
    });
    expect(embed.status).toBe(401);
  });
});
