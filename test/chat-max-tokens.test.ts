import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_TOKENS_HINT } from '../plugins/chat/max-tokens-hint.js';
import type { ErrorBody } from '../src/lib/errors.js';
import { useOrgGateway } from './fixtures.js';
import { expectLedgerMatchesLog, logRow, postJson } from './harness.js';

/**
 * Spec §7: an Anthropic-family model asked without max_tokens reaches the provider,
 * and the provider's 400 comes back as gateway_error (HTTP 400, mirroring the
 * upstream status) with the provider's text, usedProvider and requestedModel.
 * The gateway never invents a max_tokens, and nothing is charged.
 */

const START = 5_000_000;

const t = useOrgGateway('max-tokens', '5');
afterEach(async () => {
  expect(await t.balance(t.orgId)).toBe(START);
  await expectLedgerMatchesLog(t, t.orgId);
});

const calls = (): number => t.sim.calls()['POST /anthropic/v1/messages'] ?? 0;

describe('an Anthropic model without max_tokens', () => {
  it.each([false, true])('on /v1/chat/completions (stream: %s) → 400 gateway_error in the spec shape, after one upstream call', async (stream) => {
    const n = calls();
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-sonnet-4-5', stream, messages: [{ role: 'user', content: 'Hi' }] }, t.key);
    expect(calls()).toBe(n + 1); // it did reach the provider: no default was injected, no retry on a 4xx
    expect(r.status).toBe(400);
    const { error } = r.body as ErrorBody;
    expect(error).toEqual({
      message: `max_tokens: Field required (${MAX_TOKENS_HINT})`,
      type: 'gateway_error', code: 'gateway_error', param: null, usedProvider: 'anthropic', requestedModel: 'claude-sonnet-4-5',
    });
    const row = await logRow(t, r.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ status: 400, errorCode: 'gateway_error', costMicros: 0, usedProvider: 'anthropic' });
    expect(row.attempts).toEqual([expect.objectContaining({ provider: 'anthropic', status: 400, error: 'max_tokens: Field required' })]);
  });

  it('reaches the official openai client as a BadRequestError with the gateway code', async () => {
    const err = await t.client.chat.completions.create({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('gateway_error');
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toContain('max_tokens: Field required');
  });

  it('on /v1/messages → 400 in Anthropic\'s error shape, keeping the gateway code and routing context', async () => {
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] }, undefined, { 'x-api-key': t.key, 'anthropic-version': '2023-06-01' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required', code: 'gateway_error', usedProvider: 'anthropic', requestedModel: 'claude-haiku-4-5' },
    });
    const client = new Anthropic({ apiKey: t.key, baseURL: t.url, maxRetries: 0 });
    const err = await client.messages.create({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Hi' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.APIError>).message).toContain('max_tokens: Field required');
  });

  it('still gets the provider\'s 400 (not 402) when the balance could not cover the model\'s whole output', async () => {
    // claude-opus-4-1 could write 32000 tokens at $75/M ($2.40): without max_tokens the provider refuses,
    // so only the prompt is held and a small balance still sees the real error.
    const poor = await t.org('max-tokens-poor', '0.01');
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-opus-4-1', messages: [{ role: 'user', content: 'Hi' }] }, poor.key);
    expect(r.status).toBe(400);
    expect((r.body as ErrorBody).error.code).toBe('gateway_error');
    expect(await t.balance(poor.org.id)).toBe(10_000);
    await expectLedgerMatchesLog(t, poor.org.id);
  });

  it('with max_tokens the same model answers and is billed', async () => {
    const other = await t.org('max-tokens-ok', '1');
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'claude-sonnet-4-5', max_tokens: 3, messages: [{ role: 'user', content: 'Hi' }] }, other.key);
    expect(r.status).toBe(200);
    const usage = (r.body as { usage: Record<string, number> }).usage;
    expect(usage.completion_tokens).toBe(3); // capped by max_tokens at the provider
    const cost = Math.round(usage.cost_usd_total! * 1e6);
    expect(cost).toBe(usage.prompt_tokens! * 3 + 3 * 15); // $3/M in, $15/M out
    expect(await t.balance(other.org.id)).toBe(1_000_000 - cost);
    await expectLedgerMatchesLog(t, other.org.id);
  });
});
