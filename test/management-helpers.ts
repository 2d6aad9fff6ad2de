import { expect } from 'vitest';
import { createUser } from '../src/tenancy/admin.js';
import type { OrgRole } from '../src/store/accounts.js';
import type { TestGateway } from './harness.js';

/** Helpers for the end-to-end tests of the management API (/api/v1), spoken to over HTTP as the console and scripts do. */

export type Obj = Record<string, unknown>;

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Obj;
}

/** A password that passes the rules, shared by the test users. */
export const PASSWORD = 'correct horse battery staple';

/** `data` of a list response. */
export const rows = (r: ApiResponse): Obj[] => r.body.data as Obj[];

/** The error code of an error response. */
export const code = (r: ApiResponse): string | undefined => (r.body.error as { code?: string } | undefined)?.code;

/**
 * A management API client with fixed headers: a browser's session (cookie and its own
 * Origin), a script's bearer token, or nothing at all.
 */
export class Api {
  constructor(readonly base: string, readonly headers: Record<string, string> = {}) {}

  async call(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...this.headers, ...extra };
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), redirect: 'manual' });
    const text = await res.text();
    let parsed: Obj = {};
    try {
      parsed = text ? (JSON.parse(text) as Obj) : {};
    } catch {
      parsed = { text };
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  get = (path: string, extra?: Record<string, string>) => this.call('GET', path, undefined, extra);
  post = (path: string, body: unknown = {}, extra?: Record<string, string>) => this.call('POST', path, body, extra);
  put = (path: string, body: unknown, extra?: Record<string, string>) => this.call('PUT', path, body, extra);
  patch = (path: string, body: unknown, extra?: Record<string, string>) => this.call('PATCH', path, body, extra);
  delete = (path: string, extra?: Record<string, string>) => this.call('DELETE', path, undefined, extra);

  /** The same client with more headers (e.g. another Origin). */
  with(headers: Record<string, string>): Api {
    return new Api(this.base, { ...this.headers, ...headers });
  }
}

/** The `name=value` of the session cookie in a sign-in response. */
export function sessionCookieOf(r: ApiResponse): string {
  const setCookie = r.headers.get('set-cookie') ?? '';
  const pair = setCookie.split(';')[0] ?? '';
  expect(pair).toMatch(/^tollgate_session=[A-Za-z0-9_-]{43}$/);
  return pair;
}

/** Signs in as a browser would (same Origin); the client sends the session cookie and the gateway's own Origin. */
export async function signIn(base: string, email: string, password = PASSWORD, headers: Record<string, string> = {}): Promise<Api> {
  const r = await new Api(base, headers).post('/api/v1/session', { email, password });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return new Api(base, { ...headers, cookie: sessionCookieOf(r), origin: base });
}

/** A client authenticated by a management token (no cookie, no Origin: a script). */
export const tokenApi = (base: string, token: string): Api => new Api(base, { authorization: `Bearer ${token}` });

/** Creates a console user (and a membership of `org`, by name) directly in the store, as `gateway users create` does. */
export async function addUser(t: TestGateway, email: string, opts: { operator?: boolean; org?: string; role?: OrgRole } = {}): Promise<string> {
  const { user } = await createUser(t.gateway.store, { email, password: PASSWORD, ...opts });
  return user.id;
}

/** What `ownerWithProject` made: the owner's session, the project as created, its path, and its key (secret and path). */
export interface OwnedProject {
  owner: Api;
  project: Obj;
  path: string;
  key: string;
  keyPath: string;
}

/**
 * A new owner of the org `org` (by name; `t.orgId` is its id), signed in, who creates the
 * project `name` and a key `keyName` in it through the API, each answered 201.
 */
export async function ownerWithProject(t: TestGateway & { orgId: string }, org: string, email: string, name: string, keyName = 'agent'): Promise<OwnedProject> {
  await addUser(t, email, { org, role: 'owner' });
  const owner = await signIn(t.url, email);
  const p = await owner.post(`/api/v1/orgs/${t.orgId}/projects`, { name });
  expect(p.status, JSON.stringify(p.body)).toBe(201);
  const path = `/api/v1/orgs/${t.orgId}/projects/${p.body.id as string}`;
  const k = await owner.post(`${path}/keys`, { name: keyName });
  expect(k.status, JSON.stringify(k.body)).toBe(201);
  return { owner, project: p.body, path, key: k.body.key as string, keyPath: `/api/v1/orgs/${t.orgId}/keys/${k.body.id as string}` };
}
