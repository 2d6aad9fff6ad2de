import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { compileSchemas } from '../config/schemas.js';
import { newExchange, type Exchange } from '../pipeline/exchange.js';
import { loadCatalog } from '../providers/catalog.js';
import type { LogRow } from '../store/types.js';
import {
  attemptEndAttributes, attemptSpanName, attemptStartAttributes, GEN_AI, genAiProviderName, promptAllowed, requestAttributes, requestSpanName,
} from './genai.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-genai-'));
writeFileSync(join(dir, 'google.yaml'), `id: google
name: Google
base_url: https://gemini.example:8443/v1beta
auth: { header: x-goog-api-key, format: "{key}" }
endpoints:
  chat: { path: /chat/completions, dialect: openai }
models:
  - { id: flash, upstream_id: gemini-flash-001, modality: chat, pricing: { prompt: "0.000001", completion: "0.000002" } }
`);
const catalog = loadCatalog({ dir, schemas: compileSchemas(), overrides: {}, modalities: new Map([['chat', { requiredPricing: ['prompt', 'completion'], dialects: ['openai'] }]]) });
const route = catalog.routesFor('flash')[0]!;

function served(): Exchange {
  const ex = newExchange('req_abc', 'chat', 0);
  ex.requestedModel = 'flash';
  ex.route = route;
  ex.usage = { input: 12, output: 30, cachedInput: 4, reasoning: 0 };
  ex.org = { id: 'org_1', name: 'o', balanceMicros: 0, retention: 'standard', createdAt: 0 };
  return ex;
}

function rowOf(ex: Exchange, over: Partial<LogRow> = {}): LogRow {
  return {
    requestId: ex.id, orgId: 'org_1', projectId: 'prj_1', apiKeyId: 'key_1', modality: ex.modality, requestedModel: ex.requestedModel ?? null, usedModel: 'gemini-flash-001',
    usedProvider: 'google', status: 200, errorCode: null, costMicros: 1234, costEstimated: false, byok: false, durationMs: 40, ttfbMs: 12.5,
    prompt: 'the secret prompt', attempts: [{ provider: 'google', model: 'gemini-flash-001', status: 200, error: null, durationMs: 30 }], createdAt: 0, extra: null, promptTokens: 12, completionTokens: 30, ...over,
  };
}

describe('GenAI semantic conventions', () => {
  it('uses the attribute names of the convention (the incubating package, copied)', () => {
    expect(GEN_AI).toEqual({
      operationName: incubating.ATTR_GEN_AI_OPERATION_NAME,
      providerName: incubating.ATTR_GEN_AI_PROVIDER_NAME,
      requestModel: incubating.ATTR_GEN_AI_REQUEST_MODEL,
      requestStream: incubating.ATTR_GEN_AI_REQUEST_STREAM,
      responseModel: incubating.ATTR_GEN_AI_RESPONSE_MODEL,
      responseTimeToFirstChunk: incubating.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
      usageInputTokens: incubating.ATTR_GEN_AI_USAGE_INPUT_TOKENS,
      usageOutputTokens: incubating.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
      usageCacheReadInputTokens: incubating.ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
      usageReasoningOutputTokens: incubating.ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    });
  });

  it.each([
    ['google', incubating.GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI],
    ['mistral', incubating.GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI],
    ['openai', incubating.GEN_AI_PROVIDER_NAME_VALUE_OPENAI],
    ['anthropic', incubating.GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC],
    ['elevenlabs', 'elevenlabs'],
  ])('provider %s is gen_ai.provider.name %s', (id, name) => {
    expect(genAiProviderName(id)).toBe(name);
  });

  it('names the request span after the operation and the requested model, or the route for other requests', () => {
    expect(requestSpanName(served(), 'POST', '/v1/chat/completions', true)).toBe('chat flash');
    expect(requestSpanName(served(), 'POST', '/v1/chat/completions', false)).toBe('chat');
    expect(requestSpanName(newExchange('req_x', 'models', 0), 'GET', '/v1/models', false)).toBe('GET /v1/models');
  });

  it('puts the usage, cost, ids and models in the request span, and no prompt unless allowed', () => {
    const ex = served();
    const a = requestAttributes(ex, rowOf(ex), '/v1/chat/completions', false);
    expect(a).toEqual({
      'http.route': '/v1/chat/completions', 'http.response.status_code': 200, 'tollgate.request_id': 'req_abc', 'tollgate.org_id': 'org_1',
      'tollgate.cost_micros': 1234, 'tollgate.cost_usd': 0.001234, 'tollgate.attempts': 1,
      'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'flash', 'gen_ai.provider.name': 'gcp.gemini', 'gen_ai.response.model': 'gemini-flash-001',
      'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 30, 'gen_ai.usage.cache_read.input_tokens': 4,
    });
    expect(requestAttributes(ex, rowOf(ex), '/v1/chat/completions', true)['tollgate.prompt']).toBe('the secret prompt');
  });

  it('marks a stream and its time to the first chunk; an error by its code', () => {
    const ex = served();
    ex.streamed = true;
    const a = requestAttributes(ex, rowOf(ex, { status: 502, errorCode: 'upstream_error' }), '/v1/chat/completions', false);
    expect(a).toMatchObject({ 'gen_ai.request.stream': true, 'gen_ai.response.time_to_first_chunk': 0.0125, 'error.type': 'upstream_error' });
    expect(a['gen_ai.response.model']).toBeUndefined();
  });

  it('clips a made-up model name a client sent', () => {
    const ex = newExchange('req_y', 'chat', 0);
    ex.requestedModel = 'x'.repeat(10_000);
    expect(String(requestAttributes(ex, rowOf(ex, { status: 404, errorCode: 'model_not_found' }), '/v1/chat/completions', false)['gen_ai.request.model'])).toHaveLength(256);
  });

  it('describes an attempt by its upstream model, provider and server, and how it ended', () => {
    const ex = served();
    ex.attempts.push({ provider: 'google', model: 'gemini-flash-001', status: 503, error: 'busy', durationMs: 3 }); // a retry is attempt 2
    expect(attemptSpanName(ex, route)).toBe('chat gemini-flash-001');
    expect(attemptStartAttributes(ex, route)).toEqual({
      'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'gcp.gemini', 'gen_ai.request.model': 'gemini-flash-001',
      'server.address': 'gemini.example', 'server.port': 8443, 'tollgate.provider': 'google', 'tollgate.attempt': 2,
    });
    expect(attemptEndAttributes({ provider: 'google', model: 'm', status: 503, error: 'busy', durationMs: 1 }, '5xx')).toEqual({ 'http.response.status_code': 503, 'error.type': '503' });
    expect(attemptEndAttributes({ provider: 'google', model: 'm', status: null, error: 'no answer', durationMs: 1 }, 'timeout')).toEqual({ 'error.type': 'timeout' });
    expect(attemptEndAttributes({ provider: 'google', model: 'm', status: 200, error: null, durationMs: 1 }, undefined)).toEqual({ 'http.response.status_code': 200 });
  });

  it.each([
    [true, 'standard', true],
    [true, 'none', false],
    [false, 'standard', false],
    [true, undefined, false],
  ] as const)('prompt text in spans: include_prompts %s, retention %s → %s', (include, retention, allowed) => {
    expect(promptAllowed(include, retention ? { retention } : undefined)).toBe(allowed);
  });
});
