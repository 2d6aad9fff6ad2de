import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/server.js';
import type { ErrorBody } from '../src/lib/errors.js';
import { expectEveryLedgerExact, expectLedgerMatchesLog, postJson, startOrgGateway, startTestGateway, type TestGateway, type TestGatewayOptions } from './harness.js';

/**
 * The gateway a test file shares, set up and torn down by vitest's hooks: one call
 * instead of the `let t` / beforeAll / afterAll block every end-to-end file repeated.
 *
 *   const t = useOrgGateway('acme', '5', {}, { ledger: true });
 *   it('…', async () => { await t.client.chat.completions.create(…); expect(await t.balance(t.orgId)).toBe(…); });
 *
 * The handle's fields are filled in by beforeAll, so read them inside tests and hooks,
 * not at the top level of the file. Options may be a function of the simulator the
 * fixture starts (for provider files that point at it); the fixture closes what it
 * started, after the gateway.
 */
export type GatewaySetup = TestGatewayOptions | ((sim: Simulator) => TestGatewayOptions | Promise<TestGatewayOptions>);

export interface FixtureOptions {
  /** After every test, the org's ledger must equal the sum of its logged costs. */
  ledger?: boolean;
}

/** A test gateway with one org, its key and the official openai client (no retries) with that key. */
export interface OrgTestGateway extends TestGateway {
  key: string;
  orgId: string;
  client: OpenAI;
}

async function started(setup: GatewaySetup | undefined): Promise<{ sim: Simulator; opts: TestGatewayOptions }> {
  const sim = await startSimulator({ port: 0 });
  try {
    return { sim, opts: { ...(typeof setup === 'function' ? await setup(sim) : setup), sim } };
  } catch (err) {
    await sim.close();
    throw err;
  }
}

/**
 * Makes the gateway's first `close()` (the fixture's, or a test file's own afterAll, which
 * runs before the fixture's) check every org of the file first: balance change = Σ logged
 * costs, nothing held. Later calls only wait for that first close.
 */
function checkLedgersOnClose(handle: TestGateway): void {
  const close = handle.close.bind(handle);
  let closing: Promise<void> | undefined;
  handle.close = () => (closing ??= (async () => {
    try {
      await expectEveryLedgerExact(handle);
    } finally {
      await close();
    }
  })());
}

/** A listening test gateway for this file (or describe block), without an org. */
export function useGateway(setup?: GatewaySetup): TestGateway {
  const handle = {} as TestGateway;
  let sim: Simulator | undefined;
  beforeAll(async () => {
    const s = await started(setup);
    sim = s.sim;
    Object.assign(handle, await startTestGateway(s.opts));
    checkLedgersOnClose(handle);
  });
  afterAll(async () => {
    await handle.close?.();
    await sim?.close();
  });
  return handle;
}

/** A listening test gateway for this file (or describe block) with an org holding `creditsUsd`. */
export function useOrgGateway(orgName: string, creditsUsd: string, setup?: GatewaySetup, fixture: FixtureOptions = {}): OrgTestGateway {
  const handle = {} as OrgTestGateway;
  let sim: Simulator | undefined;
  beforeAll(async () => {
    const s = await started(setup);
    sim = s.sim;
    const { t, key, orgId, client } = await startOrgGateway(orgName, creditsUsd, s.opts);
    Object.assign(handle, t, { key, orgId, client });
    checkLedgersOnClose(handle);
  });
  if (fixture.ledger) afterEach(async () => expectLedgerMatchesLog(handle, handle.orgId));
  afterAll(async () => {
    await handle.close?.();
    await sim?.close();
  });
  return handle;
}

/**
 * `useOrgGateway` (the org's ledger checked after every test) with gateway.yaml's entry for
 * one provider, made from the fixture's simulator:
 *
 *   const t = useProviderGateway('acme', '1', 'azure', (sim) => ({ base_url: `${sim.url}/azure/openai`, api_key: 'k' }));
 */
export function useProviderGateway(orgName: string, creditsUsd: string, provider: string, entry: (sim: Simulator) => Record<string, unknown>, opts: Omit<TestGatewayOptions, 'yaml' | 'sim'> = {}): OrgTestGateway {
  return useOrgGateway(orgName, creditsUsd, (sim) => ({ ...opts, yaml: { providers: { [provider]: entry(sim) } } }), { ledger: true });
}

/** Every call the gateway's simulator has received, on any route. */
const upstreamCalls = (t: TestGateway): number => Object.values(t.sim.calls()).reduce((a, b) => a + b, 0);

/**
 * POSTs `body` to `path` with the org's key and expects a 400 that reached no upstream and
 * charged nothing; returns the error for the case's own checks.
 */
export async function expectRefusedUncharged(t: OrgTestGateway, path: string, body: unknown): Promise<ErrorBody['error']> {
  const before = await t.balance(t.orgId);
  const calls = upstreamCalls(t);
  const r = await postJson(`${t.url}${path}`, body, t.key);
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(upstreamCalls(t)).toBe(calls);
  expect(await t.balance(t.orgId)).toBe(before);
  return (r.body as ErrorBody).error;
}
