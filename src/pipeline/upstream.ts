import { Readable } from 'node:stream';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { AuthSchemeError, type SignableRequest, type UpstreamSigner } from '../providers/aws-sigv4.js';
import { GatewayError } from '../lib/errors.js';
import { EntraTokenSource } from '../providers/entra.js';
import type { ModelRoute, ProviderDef } from '../providers/types.js';
import { AuthFailure, UpstreamAuth } from '../providers/upstream-auth.js';
import { providerMessage, UpstreamFailure, type FailureKind } from '../providers/upstream-failure.js';
import { QueuedBody, type UpstreamBody } from './upstream-body.js';

export { providerMessage, UpstreamFailure, type FailureKind };

/** What a modality plugin asks the core to send for one route. */
export interface UpstreamRequest {
  /** Path relative to the provider's base URL, already filled in (see `fillPath`). */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** A Readable streams the body (e.g. an uploaded file from a temp file); build a new one per attempt. */
  body?: string | Buffer | Uint8Array | Readable;
  contentType?: string;
  /** A streamed reply: the endpoint's first-byte timeout applies (a whole reply may rightly take long to start). */
  stream?: boolean;
}

/** An upstream reply: its status and headers once they arrived, and its body as it streams in. */
export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: UpstreamBody;
}


/**
 * `{model}` and other `{name}` placeholders in an endpoint path template. Each value is
 * percent-encoded into its one segment (`/`, `?`, `#` cannot leave it), and a value
 * that URL parsing would still resolve as a segment of its own (empty, `.`, `..`)
 * is refused with 400 naming the placeholder: a `voice` of `..` would otherwise send
 * the gateway's key to the provider's parent path.
 */
export function fillPath(template: string, vars: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = vars[name] ?? '';
    if (value === '' || value === '.' || value === '..') {
      throw new GatewayError('invalid_request', [`${name} ${JSON.stringify(value)} is not a valid ${name}`], { param: name });
    }
    return encodeURIComponent(value);
  });
}

/**
 * The one way the core talks to providers: a shared keep-alive undici Agent (one
 * pool per origin), the route's timeout, its auth header, and cancellation when the
 * client goes away.
 */
/** Per-attempt settings of `UpstreamClient.send`. */
export interface SendOptions {
  /** Overall timeout (headers and between body chunks); the endpoint's `timeout_ms` when absent. */
  timeoutMs?: number;
  /** A stream's first-byte timeout (`first_byte_timeout_ms`): a shorter wait for the response headers. */
  firstByteMs?: number;
  /** W3C `traceparent` (when tracing is on), continuing the request's trace upstream. */
  traceHeaders?: Record<string, string>;
  /** The deployment's own base URL (gateway.yaml `keys[].base_url`): another region or resource; default the provider's. */
  baseUrl?: string;
}

/** Distinct base URL + path pairs whose origin and path are kept (paths may hold client values, e.g. a voice id). */
const MAX_TARGETS = 10_000;

export class UpstreamClient {
  private readonly agent: Agent;
  /** `base_url` + path → its origin and path, so a call without query parameters parses no URL. */
  private readonly targets = new Map<string, { origin: string; path: string }>();
  /** Each provider's Microsoft Entra tokens (`auth.entra`), minted on first use. */
  private readonly entraTokens = new WeakMap<ProviderDef, EntraTokenSource>();
  private readonly now: () => number;
  /** Credentials minted for providers whose `auth` names a scheme (Google access tokens), shared by this client's requests. */
  readonly auth: UpstreamAuth;

  constructor(opts: { connections?: number; now?: () => number } = {}) {
    this.agent = new Agent({ connections: opts.connections ?? 256, keepAliveTimeout: 30_000, pipelining: 1 });
    this.now = opts.now ?? Date.now;
    this.auth = new UpstreamAuth(async (url, form, signal) => {
      const u = new URL(url);
      const res = await this.agent.request({
        origin: u.origin, path: u.pathname + u.search, method: 'POST', signal, body: form,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      });
      return { status: res.statusCode, text: await res.body.text() };
    }, opts.now);
  }

  /**
   * Sends one attempt. Resolves with the response (any status); rejects with an
   * UpstreamFailure for connection errors, timeouts and aborts. `traceHeaders` (W3C
   * `traceparent`, when tracing is on) continue the request's trace upstream.
   */
  async send(route: ModelRoute, req: UpstreamRequest, apiKey: string | undefined, signal: AbortSignal, opts: SendOptions = {}): Promise<UpstreamResponse> {
    const { timeoutMs, firstByteMs, traceHeaders } = opts;
    const { provider, endpoint } = route;
    const { origin, path } = this.target((opts.baseUrl ?? provider.baseUrl) + req.path, endpoint.query, req.query);
    const headers: Record<string, string> = { ...provider.headers, ...req.headers, ...traceHeaders };
    if (req.contentType) headers['content-type'] = req.contentType;
    // Credentials, one kind per provider: a signature over the request (aws-sigv4), a scheme's
    // headers (a Google access token), the key in its header, or an Entra token.
    let schemeHeaders: Record<string, string> | undefined;
    let sent = headers;
    if (provider.signer) sent = await signed(provider.signer, { method: endpoint.method, origin, path, headers, body: req.body }, apiKey);
    else if (provider.auth.scheme) {
      try {
        schemeHeaders = await this.auth.headersFor(provider, apiKey, signal);
      } catch (err) {
        throw authFailure(err, signal);
      }
      Object.assign(headers, schemeHeaders);
    } else if (apiKey) headers[provider.auth.header.toLowerCase()] = provider.auth.format.replace('{key}', apiKey);
    else if (provider.entra) headers.authorization = `Bearer ${await this.entraToken(provider)}`;
    const timeout = timeoutMs ?? endpoint.timeoutMs;
    const headersTimeout = firstByteMs !== undefined ? Math.min(timeout, firstByteMs) : timeout;
    try {
      const response = await new Promise<UpstreamResponse>((resolve, reject) => {
        const opts = { origin, path, method: endpoint.method, headers: sent, body: req.body, headersTimeout, bodyTimeout: timeout };
        this.agent.dispatch(opts, new ResponseHandler(resolve, reject, signal, req.body));
      });
      if (schemeHeaders && response.statusCode === 401) this.auth.refused(provider, schemeHeaders);
      return response;
    } catch (err) {
      if (firstByteMs !== undefined && firstByteMs <= timeout && err instanceof undiciErrors.HeadersTimeoutError) {
        throw new UpstreamFailure('timeout', `no first byte within ${firstByteMs} ms`, null, '', firstByteMs);
      }
      throw classify(err, headersTimeout, signal);
    }
  }

  /** The provider's current Entra token; an UpstreamFailure when Entra refuses the credentials or cannot be reached. */
  private entraToken(provider: ProviderDef): Promise<string> {
    let source = this.entraTokens.get(provider);
    if (!source && provider.entra) this.entraTokens.set(provider, (source = new EntraTokenSource(provider.entra, this.agent, this.now)));
    if (!source) throw new Error(`provider ${provider.id} has no Entra credentials`);
    return source.get();
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private target(href: string, ...queries: Array<Record<string, string> | undefined>): { origin: string; path: string } {
    if (queries.some((q) => q && Object.keys(q).length > 0)) {
      const url = new URL(href);
      for (const q of queries) for (const [k, v] of Object.entries(q ?? {})) url.searchParams.set(k, v);
      return { origin: url.origin, path: url.pathname + url.search };
    }
    let known = this.targets.get(href);
    if (!known) {
      const url = new URL(href);
      known = { origin: url.origin, path: url.pathname + url.search };
      if (this.targets.size >= MAX_TARGETS) this.targets.clear();
      this.targets.set(href, known);
    }
    return known;
  }
}

/**
 * The headers of a request signed by its provider's auth scheme (aws-sigv4): the body
 * signed is the one sent, so it must be in memory. Credentials that cannot be had fail
 * the attempt as the provider refusing them would (401, upstream_unauthorized), and a
 * stream body that cannot be signed as a 400.
 */
async function signed(signer: UpstreamSigner, req: Omit<SignableRequest, 'body'> & { body: UpstreamRequest['body'] }, key: string | undefined): Promise<Record<string, string>> {
  const body = req.body;
  if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) {
    throw new UpstreamFailure('4xx', 'a streamed body cannot be signed', 400, JSON.stringify({ message: 'this provider signs each request: a streamed upload cannot be sent to it' }));
  }
  try {
    return await signer.sign({ ...req, body }, key);
  } catch (err) {
    if (!(err instanceof AuthSchemeError)) throw err;
    throw new UpstreamFailure('4xx', 'no credentials', 401, JSON.stringify({ message: err.message }));
  }
}

/**
 * One upstream request's undici dispatch handler: resolves with the response once its
 * headers arrived, then feeds its body (a QueuedBody, which pauses and resumes the
 * socket for backpressure). A failure before the headers rejects with undici's error
 * (classified by `send`); after them, the body's reader gets it. The exchange's signal
 * has one listener (this object) from the dispatch to the end of the body: it cancels
 * the request, or destroys the body once there is one.
 */
class ResponseHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private body: QueuedBody | undefined;
  private listening = false;

  constructor(
    private readonly resolve: (r: UpstreamResponse) => void,
    private readonly reject: (err: Error) => void,
    private readonly signal: AbortSignal,
    private readonly upload: UpstreamRequest['body'],
  ) {
    if (!signal.aborted) {
      signal.addEventListener('abort', this);
      this.listening = true;
    }
  }

  /** The exchange's signal aborted (the client left, the drain cut it). */
  handleEvent(): void {
    const reason = abortReason(this.signal);
    if (this.body) this.body.destroy(reason);
    else this.controller?.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(abortReason(this.signal));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // informational (103 Early Hints): the response is still to come
    this.body = new QueuedBody(controller);
    this.resolve({ statusCode, headers, body: this.body });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.stopListening();
    this.body?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.stopListening();
    if (this.body) this.body.fail(err);
    else this.reject(err);
    // An upload still being read (a spooled file) is closed with the request, as undici's request() does.
    if (this.upload instanceof Readable && !this.upload.destroyed) this.upload.on('error', () => undefined).destroy(err);
  }

  private stopListening(): void {
    if (!this.listening) return;
    this.listening = false;
    this.signal.removeEventListener('abort', this);
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new undiciErrors.RequestAbortedError();
}

/**
 * Credentials an auth scheme could not get: refused or missing ones are the provider
 * refusing the gateway (401, so upstream_unauthorized, never retried); an unreachable
 * token endpoint is a connection error (retried and fallen back from like one).
 */
function authFailure(err: unknown, signal: AbortSignal): UpstreamFailure {
  if (signal.aborted) return new UpstreamFailure('aborted', 'request aborted');
  if (!(err instanceof AuthFailure)) throw err;
  if (!err.refused) return new UpstreamFailure('connect_error', err.message);
  return new UpstreamFailure('4xx', err.message, 401, JSON.stringify({ error: { message: err.message } }));
}

function classify(err: unknown, timeout: number, signal: AbortSignal): UpstreamFailure {
  if (signal.aborted) return new UpstreamFailure('aborted', 'request aborted');
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
    return new UpstreamFailure('timeout', `no answer within ${timeout} ms`, null, '', timeout);
  }
  const code = (err as { code?: string }).code ?? '';
  return new UpstreamFailure('connect_error', `connection failed${code ? ` (${code})` : ''}`);
}

/**
 * The whole body of a 2xx upstream reply, for a plugin's `respond`: a client that left
 * meanwhile, or a body that broke, becomes the error the client (or the log) sees.
 */
export async function upstreamText(response: UpstreamResponse, signal: AbortSignal): Promise<string> {
  try {
    return await response.body.text();
  } catch (err) {
    if (signal.aborted) throw signal.reason instanceof GatewayError ? signal.reason : new GatewayError('client_closed_request');
    throw new GatewayError('upstream_error', [`the upstream reply broke: ${(err as Error).message}`]);
  }
}

/** Classifies a completed response's status for retry and fallback decisions. */
export function statusKind(status: number): FailureKind | undefined {
  if (status === 429) return '429';
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  return undefined;
}

/**
 * Maps a final upstream failure to the error the client sees: 429 stays 429, 5xx
 * becomes 502, a timeout 504, refused credentials 502, other 4xx keep their status as
 * `gateway_error` carrying the provider's message.
 */
export function upstreamError(f: UpstreamFailure, providerMessage: string, timeoutMs: number): GatewayError {
  switch (f.kind) {
    case 'timeout': return new GatewayError('upstream_timeout', [f.limitMs ?? timeoutMs]);
    case 'aborted': return new GatewayError('client_closed_request');
    case 'connect_error': return new GatewayError('upstream_error', [f.message]);
    case '429': return new GatewayError('upstream_rate_limited', [providerMessage || 'rate limited']);
    case '5xx': return new GatewayError('upstream_error', [`status ${f.status}: ${providerMessage || 'no message'}`]);
    case '4xx':
      if (f.status === 401 || f.status === 403) return new GatewayError('upstream_unauthorized', [providerMessage || `status ${f.status}`]);
      return new GatewayError('gateway_error', [providerMessage || `upstream status ${f.status}`], { status: f.status ?? 400 });
  }
}
