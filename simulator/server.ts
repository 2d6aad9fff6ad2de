/**
 * Provider simulator: one local `node:http` server speaking the real upstream wire
 * formats (OpenAI, Azure OpenAI, Anthropic, Gemini + Lyria, ElevenLabs, Deepgram, Bedrock) for tests, the
 * demo and benchmarks. Routing is by path suffix so any prefix works
 * (`/openai/v1/…`, `/v1/…`, `/groq/openai/v1/…`); behaviour is steered per request
 * by `[[sim:…]]` directives in the prompt (directives.ts).
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleCountTokens, handleMessages } from './anthropic.js';
import { handleAzure, handleEntraToken } from './azure.js';
import { defaultSimAws, type SimAws } from './aws-sigv4.js';
import { handleBedrock, isBedrockPath } from './bedrock.js';
import { handleListen } from './deepgram.js';
import { directivesFromBody, hasFault, withoutFaults, type Directives } from './directives.js';
import { handleTextToSpeech } from './elevenlabs.js';
import { handleGemini } from './gemini.js';
import { GoogleAuthState } from './google-auth.js';
import { BodyTooLargeError, pause, readBody, sendJson, type Handler, type SimEnv } from './http.js';
import { KeyLimits, type KeyCall } from './key-limits.js';
import { Mp3Cache } from './mp3.js';
import { handleSpeech, handleTranscription } from './openai-audio.js';
import { handleImages, handleModerations } from './openai-media.js';
import { handleResponses } from './openai-responses.js';
import { handleChat, handleEmbeddings } from './openai.js';
import { handleVertex, isVertexPath } from './vertex.js';

export interface SimulatorOptions {
  /** 0 (default) picks a free ephemeral port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Fixed delay added before every provider response (default 0). */
  latencyMs?: number;
  /** The simulated AWS account Bedrock checks signatures against (default: SIM_AWS's region and key pair). */
  aws?: SimAws;
}

export interface Simulator {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:40123`. */
  url: string;
  port: number;
  close(): Promise<void>;
  /** Calls received per route key `"<METHOD> <path without query>"`. */
  calls(): Record<string, number>;
  /** Clears the call counters, the `fail_times` attempt counters, the traceparents and the calls seen. */
  resetCalls(): void;
  /** The W3C `traceparent` headers of the latest provider calls that carried one (at most 100), oldest first. */
  traceparents(): Array<{ route: string; traceparent: string }>;
  /** The latest provider calls (at most 50), oldest first: what the gateway sent upstream, to check a translation. */
  received(): ReceivedCall[];
  /**
   * Google's service accounts and tokens: register an account's public key before it asks
   * `…/oauth2/token` for a token, `disable` it to have its tokens refused, count the token requests.
   */
  google: GoogleAuthState;
  /** Makes `key` answer 429 with Retry-After (the seconds left) for `seconds`, as a provider's per-key limit does. */
  rateLimitKey(key: string, seconds: number): void;
  /** Calls per upstream key (any provider's auth header), and how many of them were refused 429. */
  keyCalls(): Record<string, { calls: number; limited: number }>;
  /** The latest calls by key (at most 20,000), oldest first, with when they came and whether they were refused. */
  keyHistory(): KeyCall[];
}

/** One provider call as the simulator received it; a body longer than 64 KiB keeps its first and last 32 KiB (a conversation's latest turn is at its end). */
export interface ReceivedCall {
  route: string;
  headers: Record<string, string>;
  body: string;
}

/** How many traceparents the simulator remembers. */
const MAX_TRACEPARENTS = 100;
/** How many calls `received()` remembers, and how much of each body. */
const MAX_RECEIVED = 50;
const MAX_RECEIVED_BODY = 64 * 1024;

/** Transcription uploads may reach 25 MB; leave headroom for Lyria image prompts. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Picks the handler for a provider path, or undefined (404). */
function routeFor(method: string, path: string): Handler | undefined {
  if (method !== 'POST') return undefined;
  if (path.includes('/openai/deployments/')) return handleAzure;
  if (path.endsWith('/oauth2/v2.0/token')) return handleEntraToken;
  if (path.endsWith('/oauth2/token')) return (req, res, env) => Promise.resolve(env.google.handleToken(req, res));
  if (isVertexPath(path)) return handleVertex;
  if (path.endsWith('/v1/chat/completions')) return handleChat;
  if (path.endsWith('/v1/responses')) return handleResponses;
  if (path.endsWith('/v1/images/generations')) return handleImages;
  if (path.endsWith('/v1/moderations')) return handleModerations;
  if (path.endsWith('/v1/embeddings')) return handleEmbeddings;
  if (path.endsWith('/v1/audio/speech')) return handleSpeech;
  if (path.endsWith('/v1/audio/transcriptions')) return handleTranscription;
  if (path.endsWith('/v1/messages')) return handleMessages;
  if (path.endsWith('/v1/messages/count_tokens')) return handleCountTokens;
  if (path.includes('/v1beta/models/') && path.includes(':')) return handleGemini;
  if (path.includes('/v1/text-to-speech/')) return handleTextToSpeech;
  if (path.endsWith('/v1/listen')) return handleListen;
  if (isBedrockPath(path)) return handleBedrock;
  return undefined;
}

interface SimState {
  readonly calls: Map<string, number>;
  readonly traceparents: Array<{ route: string; traceparent: string }>;
  readonly received: ReceivedCall[];
  /** Requests seen per (route, directives) for `fail_times`. */
  readonly attempts: Map<string, number>;
  readonly latencyMs: number;
  readonly env: SimEnv;
  readonly keys: KeyLimits;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const host = opts.host ?? '127.0.0.1';
  let seq = 0;
  const state: SimState = {
    calls: new Map(),
    traceparents: [],
    received: [],
    attempts: new Map(),
    latencyMs: Math.max(0, opts.latencyMs ?? 0),
    keys: new KeyLimits(),
    env: { mp3: new Mp3Cache(), google: new GoogleAuthState(), nextId: () => (++seq).toString(36).padStart(6, '0'), entraTokens: new Map(), aws: opts.aws ?? defaultSimAws() },
  };
  const server = createServer({ noDelay: true }, (req, res) => {
    onRequest(req, res, state).catch((err: unknown) => failInternal(res, err));
  });
  // Outlive typical client pools (undici keeps idle sockets 4 s) so the client,
  // not the simulator, decides when an idle keep-alive socket dies.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const reset = (): void => {
    state.calls.clear();
    state.attempts.clear();
    state.traceparents.length = 0;
    state.received.length = 0;
    state.keys.reset();
  };
  return {
    url: `http://${urlHost}:${port}`,
    port,
    calls: () => Object.fromEntries(state.calls),
    resetCalls: reset,
    traceparents: () => [...state.traceparents],
    received: () => [...state.received],
    google: state.env.google,
    rateLimitKey: (key, seconds) => state.keys.limit(key, seconds),
    keyCalls: () => state.keys.calls(),
    keyHistory: () => state.keys.history(),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err === undefined ? resolve() : reject(err)));
        // Hanging and streaming requests would otherwise keep close() waiting.
        server.closeAllConnections();
        state.env.mp3.clear();
      }),
  };
}

async function onRequest(req: IncomingMessage, res: ServerResponse, state: SimState): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const method = req.method ?? 'GET';
  if (path.startsWith('/__sim/')) {
    admin(method, path, req, res, state);
    return;
  }
  const key = `${method} ${path}`;
  state.calls.set(key, (state.calls.get(key) ?? 0) + 1);
  const traceparent = req.headers.traceparent;
  if (typeof traceparent === 'string') {
    state.traceparents.push({ route: key, traceparent });
    if (state.traceparents.length > MAX_TRACEPARENTS) state.traceparents.shift();
  }
  let body: Buffer;
  try {
    body = await readBody(req, MAX_BODY_BYTES);
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
      sendJson(res, 413, { error: { message: err.message, type: 'request_too_large' } }, { connection: 'close' });
    } else {
      res.destroy();
    }
    return;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
  const kept = body.length <= MAX_RECEIVED_BODY ? body.toString('utf8')
    : `${body.subarray(0, MAX_RECEIVED_BODY / 2).toString('utf8')}…${body.subarray(body.length - MAX_RECEIVED_BODY / 2).toString('utf8')}`;
  state.received.push({ route: key, headers, body: kept });
  if (state.received.length > MAX_RECEIVED) state.received.shift();
  if (state.latencyMs > 0 && !(await pause(res, state.latencyMs))) return;
  const handler = routeFor(method, path);
  if (handler === undefined) {
    const message = `The simulator has no route for ${method} ${path}.`;
    sendJson(res, 404, { error: { message, type: 'invalid_request_error', param: null, code: 'unknown_route' } });
    return;
  }
  if (state.keys.refused(req.headers, res)) return;
  const scope = path.split('/', 2)[1];
  const directives = countedDirectives(directivesFromBody(body, scope), key, state);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  await handler({ method, path, query, headers: req.headers, body, directives }, res, state.env);
}

/** Honours `fail_times=N`: faults apply to the first N identical requests per route. */
function countedDirectives(d: Directives, routeKey: string, state: SimState): Directives {
  if (d.failTimes === undefined || !hasFault(d)) return d;
  const key = `${routeKey}\n${JSON.stringify(d)}`;
  const seen = state.attempts.get(key) ?? 0;
  state.attempts.set(key, seen + 1);
  return seen < d.failTimes ? d : withoutFaults(d);
}

function admin(method: string, path: string, req: IncomingMessage, res: ServerResponse, state: SimState): void {
  req.resume(); // admin calls carry no meaningful body; drain it for keep-alive
  if (method === 'GET' && path === '/__sim/health') {
    sendJson(res, 200, { ok: true });
  } else if (method === 'GET' && path === '/__sim/calls') {
    sendJson(res, 200, Object.fromEntries(state.calls));
  } else if (method === 'POST' && path === '/__sim/rate-limit') {
    const q = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const key = q.get('key');
    const seconds = Number(q.get('seconds'));
    if (!key || !Number.isFinite(seconds) || seconds <= 0) sendJson(res, 400, { error: { message: 'key and seconds (> 0) are required' } });
    else {
      state.keys.limit(key, seconds);
      sendJson(res, 200, { ok: true });
    }
  } else if (method === 'GET' && path === '/__sim/key-calls') {
    sendJson(res, 200, state.keys.calls());
  } else if (method === 'POST' && path === '/__sim/reset') {
    state.keys.reset();
    state.calls.clear();
    state.attempts.clear();
    state.traceparents.length = 0;
    state.received.length = 0;
    sendJson(res, 200, { ok: true });
  } else {
    sendJson(res, 404, { error: { message: `Unknown simulator admin route ${method} ${path}.` } });
  }
}

function failInternal(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const message = err instanceof Error ? err.message : String(err);
  sendJson(res, 500, { error: { message: `Simulator bug: ${message}`, type: 'simulator_error' } });
}
