/*
 * The part of oidc-provider (v9, shipped without types) that test/sso.test.ts uses to run
 * a real OpenID provider on loopback.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Account {
    accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }
  interface Configuration {
    clients: Array<Record<string, unknown>>;
    claims?: Record<string, string[]>;
    scopes?: string[];
    cookies?: { keys: string[] };
    features?: Record<string, { enabled: boolean }>;
    ttl?: Record<string, number>;
    interactions?: { url(ctx: unknown, interaction: { uid: string }): string };
    findAccount(ctx: unknown, id: string): Account | undefined | Promise<Account | undefined>;
  }
  class Grant {
    constructor(opts: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }
  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    readonly Grant: typeof Grant;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<{ uid: string; params: Record<string, unknown> }>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, opts?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  }
}
