import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/*
 * A real OpenID provider (oidc-provider) on loopback for the SSO tests. Its login is the
 * test's: a browser (Accept: text/html) gets a small HTML form asking for the account to
 * sign in as; any other client (fetch) is signed in at once as `next`. The account's
 * groups claim is `groups.get(account)`. `tamperIdToken` flips a character of the ID
 * token's signature in token responses.
 */
export interface TestIdp {
  issuer: string;
  /** The account a non-browser client signs in as. */
  next: string;
  groups: Map<string, string[]>;
  tamperIdToken: boolean;
  /** Registers the gateway's callback and creates the provider; `idTokenTtl` in seconds (oidc-provider's default: an hour). */
  configure(redirectUri: string, opts?: { idTokenTtl?: number }): void;
  close(): Promise<void>;
}

export const CLIENT = { client_id: 'tollgate', client_secret: 'a-client-secret-of-the-test' };

/** Flips one character of the ID token's signature in a token response (same length, so Content-Length still holds). */
function tampered(body: string): string {
  const json = JSON.parse(body) as { id_token?: string };
  if (!json.id_token) return body;
  const last = json.id_token.slice(-2, -1);
  const forged = json.id_token.slice(0, -2) + (last === 'A' ? 'B' : 'A') + json.id_token.slice(-1);
  return body.replace(json.id_token, forged);
}

const escapeHtml = (s: string): string => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startIdp(): Promise<TestIdp> {
  let provider: Provider | undefined;
  const finish = async (req: IncomingMessage, res: ServerResponse, accountId: string): Promise<void> => {
    const p = provider!;
    const details = await p.interactionDetails(req, res);
    const grant = new p.Grant({ accountId, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope));
    const grantId = await grant.save();
    await p.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const p = provider!;
    const url = new URL(req.url ?? '/', idp.issuer);
    const interaction = /^\/interaction\/([^/]+)(\/login)?$/.exec(url.pathname);
    if (interaction) {
      if (req.method === 'POST' && interaction[2]) return finish(req, res, (await readForm(req)).get('login') ?? '');
      if (!(req.headers.accept ?? '').includes('text/html')) return finish(req, res, idp.next);
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><html lang="en"><title>Test provider</title><link rel="icon" href="data:,"><h1>Test provider sign-in</h1>
<form method="post" action="/interaction/${escapeHtml(interaction[1] ?? '')}/login"><label>Account <input name="login" autocomplete="username"></label><button type="submit">Continue</button></form></html>`);
      return;
    }
    if (url.pathname === '/token' && idp.tamperIdToken) {
      const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
      res.end = ((chunk?: unknown, ...rest: unknown[]) => end(typeof chunk === 'string' || Buffer.isBuffer(chunk) ? tampered(chunk.toString()) : chunk, ...rest)) as ServerResponse['end'];
    }
    p.callback()(req, res);
  };
  const server: Server = createServer((req, res) => void handle(req, res).catch((err: unknown) => {
    res.statusCode = 500;
    res.end(String(err));
  }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const idp: TestIdp = {
    issuer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    next: 'alice',
    groups: new Map(),
    tamperIdToken: false,
    configure(redirectUri, opts = {}) {
      provider = new Provider(idp.issuer, {
        clients: [{ ...CLIENT, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
        scopes: ['openid', 'email', 'groups'],
        cookies: { keys: ['test-cookie-key'] },
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        ...(opts.idTokenTtl ? { ttl: { IdToken: opts.idTokenTtl } } : {}),
        findAccount: (_ctx, id) => ({
          accountId: id,
          claims: () => ({ sub: id, email: `${id}@acme.test`, email_verified: true, groups: idp.groups.get(id) ?? [] }),
        }),
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return idp;
}

/** The gateway's console.oidc for this provider. */
export function oidcYaml(idp: TestIdp, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    issuer: idp.issuer, ...CLIENT, scopes: ['openid', 'email', 'groups'],
    role_map: { 'acme-admins': { org: 'acme', role: 'admin' }, 'acme-users': { org: 'acme', role: 'member' } },
    operator_groups: ['platform'], ...extra,
  };
}
