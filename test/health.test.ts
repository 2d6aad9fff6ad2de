import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HealthRecord } from '../src/http/health.js';
import { packageRoot } from '../src/lib/paths.js';
import { startTestGateway, type TestGateway } from './harness.js';

const version = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
const opened: TestGateway[] = [];
afterAll(async () => {
  for (const t of opened) await t.close();
});

async function gateway(redisUrl?: string): Promise<TestGateway> {
  const t = await startTestGateway({ ...(redisUrl ? { yaml: { redis: { url: redisUrl } } } : {}), checkLedgersAfterClose: true });
  opened.push(t);
  return t;
}

async function health(t: TestGateway, query = ''): Promise<{ status: number; body: HealthRecord }> {
  const r = await fetch(`${t.url}/${query}`);
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: r.status, body: (await r.json()) as HealthRecord };
}

describe('GET / health', () => {
  it('is ok with real Redis and the database, with the package version, and needs no key', async () => {
    const t = await gateway('redis://127.0.0.1:6379');
    const { status, body } = await health(t);
    expect(status).toBe(200);
    expect(body).toEqual({
      message: 'Tollgate is running',
      version,
      health: { status: 'ok', redis: { connected: true, error: '' }, database: { connected: true, error: '' } },
    });
  });

  it('reports Redis that is not configured as such, not as a failure', async () => {
    const t = await gateway();
    const { status, body } = await health(t);
    expect(status).toBe(200);
    expect(body.health.redis).toEqual({ connected: false, error: '', configured: false });
  });

  it('is 503 naming redis when Redis does not answer', async () => {
    const t = await gateway('redis://127.0.0.1:1');
    const { status, body } = await health(t);
    expect(status).toBe(503);
    expect(body.health.status).toBe('error');
    expect(body.health.redis.connected).toBe(false);
    expect(body.health.redis.error).not.toBe('');
    expect(body.message).toContain('redis');
    expect(body.health.database.connected).toBe(true);
  });

  it('skips checks named in skip=redis,database', async () => {
    const t = await gateway('redis://127.0.0.1:1');
    const { status, body } = await health(t, '?skip=redis,database');
    expect(status).toBe(200);
    expect(body.health).toEqual({
      status: 'ok', redis: { connected: false, error: '', skipped: true }, database: { connected: false, error: '', skipped: true },
    });
  });

  it('is 503 naming the database when it fails', async () => {
    const t = await gateway();
    await t.gateway.store.close();
    const { status, body } = await health(t, '?skip=redis');
    expect(status).toBe(503);
    expect(body.message).toContain('database');
    expect(body.health.database.connected).toBe(false);
  });

  it('refuses an unknown skip value with 400', async () => {
    const t = opened[0]!;
    const r = await fetch(`${t.url}/?skip=cache`);
    expect(r.status).toBe(400);
  });
});
