
import { createServer, type Server as NetServer } from 'node:net';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../simulator/server.js';
import { createKey, createOrg } from '../src/tenancy/admin.js';
import { openStore } from '../src/store/index.js';
import { startS3 } from './s3.js';
import { chat, cli, KEY, lastLine, query, serve, sleep, STACK_FRAME, useCliConfig, writeConfig } from './cli-helpers.js';

const env = useCliConfig('tollgate-cli-serve-', { eachTest: true });
let sim: Simulator;
let dir: string;
let config: string;
let db: string;
beforeAll(() => void ({ sim } = env));
beforeEach(() => void ({ dir, config, db } = env));

/** Runs an admin command against the test's config and returns its stdout; fails on a non-zero exit. */
async function admin(...args: string[]): Promise<string> {
  const r = await cli([...args, '--config', config]);
  if (r.code !== 0) throw new Error(`gateway ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

async function orgWithKey(name: string, credits: string): Promise<string> {
  await admin('orgs', 'create', name, '--credits', credits);
  const key = lastLine(await admin('keys', 'create', '--org', name));
  expect(key).toMatch(KEY);
  return key;
}

describe('admin commands against a running server (same SQLite file)', () => {
  it('a key created by the CLI works at once; `keys revoke` takes effect within 1.5 s', async () => {
    const server = await serve(config);
    const key = await orgWithKey('acme', '5');
    const ok = await chat(server.url, key);
    expect(ok.status).toBe(200);
    expect(ok.body.object).toBe('chat.completion');

    expect(await admin('keys', 'revoke', key.slice(0, 11))).toBe(`revoked key ${key.slice(0, 11)}…\n`);
    const revokedAt = Date.now();
    let last = 0;
    let body: Record<string, unknown> = {};
    for (let i = 0; i < 30 && last !== 401; i++) {
      ({ status: last, body } = await chat(server.url, key));
      if (last !== 401) {
        expect(last).toBe(200); // still cached: the revocation has not reached this key yet
        await sleep(100);
      }
    }
    expect(last).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1500);
    expect((body.error as { code: string }).code).toBe('invalid_api_key');
  });

  it('`credits add` on an org with $0 is seen by the running server within a second: 402, then 200', async () => {
    const server = await serve(config);
    const key = await orgWithKey('broke', '0');
    const refused = await chat(server.url, key);
    expect(refused.status).toBe(402);
    expect((refused.body.error as { code: string }).code).toBe('insufficient_credits');

    expect(await admin('credits', 'add', '1', '--org', 'broke')).toBe('added $1.00 to "broke"; balance is now $1.00\n');
    // The server re-reads a stored balance at most once a second: poll, bounded.
    let ok = await chat(server.url, key);
    for (let i = 0; i < 30 && ok.status === 402; i++) {
      await sleep(100);
      ok = await chat(server.url, key);
    }
    expect(ok.status).toBe(200);
    // The charge reaches the file with the next request-log batch.
    let balance = 1;
    for (let i = 0; i < 30 && balance === 1; i++) {
      await sleep(100);
      balance = Number(/balance \$(\d+\.\d{6}),/.exec(await admin('orgs', 'show', 'broke'))?.[1]);
    }
    expect(balance).toBeGreaterThan(0.99);
    expect(balance).toBeLessThan(1);
  });
});

describe('gateway sweep beside a running server (same SQLite file)', () => {
  it('sweeps an expired hosted track while the server runs, without taking its ledger', async () => {
    const s3 = await startS3();
    try {
      config = writeConfig(dir, sim.url, { storage: { s3: s3.config } });
      const server = await serve(config);
      // Written as the admin commands write, beside the server: an org, its key, and a track hosted 31 days ago.
      const store = openStore(`sqlite:${db}`);
      const orgId = (await createOrg(store, 'keeper', '1', 'standard')).id;
      const { key } = await createKey(store, 'keeper');
      const day = 86_400_000;
      await store.media.put({
        id: 'log_expired0000000000000000', requestId: 'req_expired0000000000000000', orgId, modality: 'music', model: 'tune-3-clip-preview',
        usedModel: 'lyria-3-clip-preview', usedProvider: 'google', prompt: 'old', text: '', storage: 's3', objectKey: 'music/old.mp3', bytes: 3,
        mimeType: 'audio/mpeg', costMicros: 50_000, error: false, errorCode: null, createdAt: Date.now() - 31 * day, expiresAt: Date.now() - day,
        cleanedAt: null, meta: null,
      });
      await store.close();
      // On Node 20 the AWS SDK warns once about its Node 22 plan (README, "Node versions"); that is not this test's concern.
      const r = await cli(['sweep', '--config', config], { env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout.split('\n')).toContain('music-retention-sweep: deleted 1 expired track(s)');
      expect(query<{ cleaned_at: number | null }>(db, 'SELECT cleaned_at FROM media WHERE id = ?', 'log_expired0000000000000000')[0]?.cleaned_at).toBeGreaterThan(0);
      // The server still serves (and still owns its ledger).
      expect((await chat(server.url, key)).status).toBe(200);
    } finally {
      await s3.close();
    }
  }, 60_000);
});

describe('graceful shutdown', () => {
  it('SIGTERM lets the in-flight request finish with 200, exits 0 and flushes its request log row', async () => {
    const server = await serve(config);
    const key = await orgWithKey('acme', '5');
    sim.resetCalls();
    const slow = chat(server.url, key, 'Take your time [[sim:delay_ms=1500]]');
    // Wait until the request has reached the simulator, i.e. is truly in flight.
    const route = 'POST /openai/v1/chat/completions';
    for (let i = 0; i < 100 && !sim.calls()[route]; i++) await sleep(20);
    expect(sim.calls()[route]).toBe(1);
    const sentAt = Date.now();
    expect(server.child.kill('SIGTERM')).toBe(true);

    const res = await slow;
    expect(res.status).toBe(200);
    expect(res.requestId).toMatch(/^req_/);
    expect(Date.now() - sentAt).toBeGreaterThan(1000); // it really was waiting on the upstream when SIGTERM came
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stdout()).toContain('SIGTERM: finishing in-flight requests and flushing the request log…\nstopped\n');
    expect(server.stderr()).not.toMatch(STACK_FRAME);

    const rows = query<{ status: number; cost_micros: number; org_id: string; used_model: string }>(
      db, 'SELECT * FROM request_logs WHERE request_id = ?', res.requestId,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.status).toBe(200);
    expect(rows[0]!.cost_micros).toBeGreaterThan(0);
    expect(rows[0]!.used_model).toBe('gpt-4o-mini');
    // What was billed is what was logged.
    const [charged] = query<{ s: number }>(db, "SELECT -SUM(amount_micros) AS s FROM ledger WHERE kind = 'charge' AND request_id = ?", res.requestId);
    expect(charged?.s).toBe(rows[0]!.cost_micros);
  });

  it('SIGINT (Ctrl-C) exits 0', async () => {
    const server = await serve(config);
    expect(server.child.kill('SIGINT')).toBe(true);
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stdout()).toContain('SIGINT: finishing in-flight requests and flushing the request log…\nstopped\n');
  });
});

describe('a crash (SIGKILL) on SQLite', () => {
  it('loses a charge only with its log row: the ledger equals the logged costs after a kill between log flushes', async () => {
    // Rows are written when 3 are queued, never by the timer; the kill comes long after the ledger's old 100 ms charge timer.
    config = writeConfig(dir, sim.url, { log: { level: 'silent', flush_interval_ms: 600_000, batch_size: 3 } });
    const key = await orgWithKey('acme', '5');
    const server = await serve(config);
    for (let i = 0; i < 3; i++) expect((await chat(server.url, key)).status).toBe(200);
    for (let i = 0; i < 100 && query(db, 'SELECT 1 FROM request_logs').length < 3; i++) await sleep(20);
    for (let i = 0; i < 2; i++) expect((await chat(server.url, key)).status).toBe(200);
    await sleep(1000);
    server.child.kill('SIGKILL');
    await server.exited;
    const [logged] = query<{ n: number; cost: number }>(db, 'SELECT COUNT(*) AS n, SUM(cost_micros) AS cost FROM request_logs');
    expect(logged?.n).toBe(3);
    expect(logged?.cost).toBeGreaterThan(0);
    // The two unwritten requests are gone from both, the three written ones are in both (afterEach checks every org too).
    expect(query(db, 'SELECT balance_micros FROM orgs')).toEqual([{ balance_micros: 5_000_000 - logged!.cost }]);
    expect(query(db, "SELECT COUNT(*) AS n FROM ledger WHERE kind = 'charge'")).toEqual([{ n: 3 }]);
  });
});

describe('first start (bootstrap)', () => {
  it('prints a working key once on an empty database, and no new key on the next start', async () => {
    config = writeConfig(dir, sim.url, { bootstrap: { org: 'demo', credits_usd: '10.00' } });
    const first = await serve(config);
    const lines = first.stdout().split('\n');
    const keys = lines.filter((l) => KEY.test(l));
    expect(keys).toHaveLength(1);
    expect(lines).toContain('First start: created organization "demo" with $10.00 of credits.');
    const key = keys[0]!;
    const res = await chat(first.url, key, 'Hello from curl');
    expect(res.status).toBe(200);
    expect(first.child.kill('SIGTERM')).toBe(true);
    expect(await first.exited).toEqual({ code: 0, signal: null });

    const second = await serve(config);
    expect(second.stdout()).not.toMatch(/tg_[A-Za-z0-9]/);
    expect(second.stdout()).not.toContain('First start');
    expect((await chat(second.url, key)).status).toBe(200); // the first key still works
    expect(query(db, 'SELECT name FROM orgs')).toEqual([{ name: 'demo' }]);
    // Issue 35: the demo key has a name, and the first credit says what made it (not "command line").
    expect(query(db, 'SELECT name FROM api_keys')).toEqual([{ name: 'demo key (first start)' }]);
    expect(query(db, "SELECT amount_micros, note, created_by FROM ledger WHERE kind = 'credit'"))
      .toEqual([{ amount_micros: 10_000_000, note: 'demo credits: first start (gateway.yaml bootstrap)', created_by: null }]);
    expect(query(db, 'SELECT COUNT(*) AS n FROM api_keys')).toEqual([{ n: 1 }]);
    expect(second.child.kill('SIGTERM')).toBe(true);
    expect(await second.exited).toEqual({ code: 0, signal: null });
  });
});

/** Runs `fn` while some other program holds a loopback port. */
async function withBusyPort(fn: (port: number) => Promise<void>): Promise<void> {
  const holder: NetServer = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  try {
    await fn((holder.address() as { port: number }).port);
  } finally {
    await new Promise<void>((r) => holder.close(() => r()));
  }
}

/** `serve` with these arguments exits 1 naming the busy port, the setting that chose it and the flag, without a stack. */
async function refusedForBusyPort(args: string[], port: number, setting: string, flag: string): Promise<void> {
  const r = await cli(['serve', ...args]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`127.0.0.1:${port} is in use`);
  expect(r.stderr).toContain(setting);
  expect(r.stderr).toContain(flag);
  expect(r.stderr).not.toMatch(STACK_FRAME);
}

describe('the simulator port', () => {
  /** A config that starts its own simulator on `port`, with every provider pointed at it (as gateway.yaml does). */
  const ownSimulator = (port: number): string => writeConfig(dir, `http://127.0.0.1:${port}`, { simulator: { enabled: true, port }, bootstrap: { org: 'demo', credits_usd: '1' } });

  it('a busy simulator port fails with a message naming simulator.port and --simulator-port, not a bare EADDRINUSE', () =>
    withBusyPort((port) => refusedForBusyPort(['--config', ownSimulator(port), '--port', '0'], port, 'simulator.port', '--simulator-port')));

  it('--simulator-port 0 takes any free port, and the providers pointed at the simulator follow it', () =>
    withBusyPort(async (port) => {
      const server = await serve(ownSimulator(port), 60_000, ['--simulator-port', '0']);
      const simUrl = /provider simulator listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(server.stdout());
      expect(simUrl?.[2]).toBeDefined();
      expect(Number(simUrl?.[2])).not.toBe(port);
      const key = server.stdout().split('\n').find((l) => KEY.test(l)) ?? '';
      const res = await chat(server.url, key);
      expect(res.status).toBe(200);
      expect(res.body.object).toBe('chat.completion');
    }));

  it('a busy gateway port names server.port and --port', () =>
    withBusyPort((port) => refusedForBusyPort(['--config', config, '--port', String(port)], port, 'server.port', '--port')));
});

describe('metrics listener', () => {
  it('`serve` prints where Prometheus scrapes, on its own port, and the counts move with traffic', async () => {
    config = writeConfig(dir, sim.url, { metrics: { host: '127.0.0.1', port: 0 } });
    const server = await serve(config);
    const key = await orgWithKey('scraped', '5');
    expect((await chat(server.url, key)).status).toBe(200);
    let metricsUrl: string | undefined;
    for (let i = 0; i < 100 && !metricsUrl; i++) {
      metricsUrl = /^Prometheus metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(server.stdout())?.[1];
      if (!metricsUrl) await sleep(20);
    }
    expect(metricsUrl).toBeDefined();
    expect(new URL(metricsUrl!).port).not.toBe(new URL(server.url).port);
    let text = '';
    for (let i = 0; i < 50 && !text.includes('status="200"'); i++) {
      text = await (await fetch(metricsUrl!)).text(); // the row (and the count) follow the reply by a moment
      if (!text.includes('status="200"')) await sleep(20);
    }
    expect(text).toMatch(/^tollgate_requests_total\{route="\/v1\/chat\/completions",model="gpt-4o-mini",provider="openai",status="200",code="none"\} 1$/m);
    expect(server.child.kill('SIGTERM')).toBe(true);
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });
});
