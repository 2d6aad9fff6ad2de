/**
 * Every error a client can see is declared here once, with a stable code, an HTTP
 * status and an OpenAI-style `type`. `docs/errors.md` lists the same codes; a test
 * keeps the two in sync (the way fastify checks its FST_ERR_* table).
 */

export interface ErrorDefinition {
  readonly code: string;
  readonly status: number;
  readonly type: string;
  readonly message: string;
}

function define(code: string, status: number, type: string, message: string): ErrorDefinition {
  return { code, status, type, message };
}

export const ERRORS = {
  invalid_json: define('invalid_json', 400, 'invalid_request_error', 'The request body is not valid JSON: %s'),
  invalid_request: define('invalid_request', 400, 'invalid_request_error', '%s'),
  unsupported_media_type: define('unsupported_media_type', 415, 'invalid_request_error', 'Unsupported Content-Type %s; send application/json'),
  body_too_large: define('body_too_large', 413, 'invalid_request_error', 'The request body exceeds the limit of %s bytes'),
  missing_api_key: define('missing_api_key', 401, 'authentication_error', 'Missing API key: send it as "Authorization: Bearer <key>"'),
  invalid_api_key: define('invalid_api_key', 401, 'authentication_error', 'Invalid API key'),
  api_key_expired: define('api_key_expired', 401, 'authentication_error', 'The API key %s expired at %s'),
  model_not_allowed: define('model_not_allowed', 403, 'permission_error', 'The model `%s` is not allowed for API key %s (allowed: %s)'),
  authentication_required: define('authentication_required', 401, 'authentication_error', '%s'),
  invalid_credentials: define('invalid_credentials', 401, 'authentication_error', 'Wrong email or password'),
  invalid_token: define('invalid_token', 401, 'authentication_error', 'Invalid management token: it is malformed, unknown or revoked'),
  login_throttled: define('login_throttled', 429, 'rate_limit_error', 'Too many failed sign-ins for this %s; retry in %s s'),
  password_login_disabled: define('password_login_disabled', 403, 'permission_error', 'Password sign-in is turned off on this gateway (console.oidc.allow_password_login: false): sign in with SSO (GET /api/v1/session/oidc/start)'),
  sso_not_configured: define('sso_not_configured', 404, 'invalid_request_error', 'Single sign-on is not configured on this gateway (console.oidc in gateway.yaml)'),
  sso_failed: define('sso_failed', 401, 'authentication_error', 'SSO sign-in failed: %s. Start again from the sign-in page'),
  account_deactivated: define('account_deactivated', 401, 'authentication_error', 'This account is deactivated: an operator can reactivate it'),
  wrong_password: define('wrong_password', 403, 'permission_error', 'The current password is wrong'),
  password_not_set: define('password_not_set', 409, 'invalid_request_error', 'This account has no password: it signs in with single sign-on'),
  permission_denied: define('permission_denied', 403, 'permission_error', 'This needs the %s role; you are %s'),
  cross_origin_refused: define('cross_origin_refused', 403, 'permission_error', 'Refused a state-changing request from origin %s: signed-in browser requests must come from %s'),
  already_exists: define('already_exists', 409, 'invalid_request_error', '%s'),
  last_owner: define('last_owner', 409, 'invalid_request_error', 'An organization keeps at least one owner: make another member owner first'),
  encryption_unavailable: define('encryption_unavailable', 503, 'server_error', '%s'),
  insufficient_credits: define('insufficient_credits', 402, 'insufficient_quota', 'Insufficient credits: this request may cost up to $%s and the balance is $%s'),
  model_not_found: define('model_not_found', 404, 'invalid_request_error', 'The model `%s` does not exist or is not served at this endpoint'),
  model_deactivated: define('model_deactivated', 410, 'invalid_request_error', 'The model `%s` was deactivated on %s'),
  uri_too_long: define('uri_too_long', 414, 'invalid_request_error', 'A segment of the request path is longer than %s characters'),
  route_not_found: define('route_not_found', 404, 'invalid_request_error', 'No route %s %s'),
  method_not_allowed: define('method_not_allowed', 405, 'invalid_request_error', 'Method %s is not allowed on %s; allowed: %s'),
  not_found: define('not_found', 404, 'invalid_request_error', '%s'),
  gone: define('gone', 410, 'invalid_request_error', '%s'),
  range_not_satisfiable: define('range_not_satisfiable', 416, 'invalid_request_error', '%s'),
  guardrail_blocked: define('guardrail_blocked', 400, 'invalid_request_error', 'Blocked by the project\'s guardrail %s (%s)'),
  content_blocked: define('content_blocked', 422, 'content_filter', 'The upstream provider blocked this request: %s'),
  upstream_rate_limited: define('upstream_rate_limited', 429, 'rate_limit_error', 'The upstream provider rate-limited the request: %s'),
  upstream_error: define('upstream_error', 502, 'upstream_error', 'The upstream provider failed: %s'),
  upstream_timeout: define('upstream_timeout', 504, 'upstream_error', 'The upstream provider did not answer within %s ms'),
  upstream_unauthorized: define('upstream_unauthorized', 502, 'upstream_error', 'The upstream provider refused the gateway\'s credentials: %s'),
  no_deployment_available: define('no_deployment_available', 429, 'rate_limit_error', 'No deployment of %s can take this request now: %s'),
  config_invalid: define('config_invalid', 422, 'invalid_request_error', 'The configuration was not reloaded (the running one keeps serving): %s'),
  gateway_error: define('gateway_error', 400, 'gateway_error', '%s'),
  client_closed_request: define('client_closed_request', 499, 'invalid_request_error', 'The client closed the connection before the reply'),
  rate_limit_exceeded: define('rate_limit_exceeded', 429, 'rate_limit_error', 'Rate limit reached for %s on %s: limit %s, used %s, requested %s; %s'),
  budget_exceeded: define('budget_exceeded', 429, 'insufficient_quota', 'Budget reached for %s: this request may cost up to $%s and $%s of the %s budget of $%s is left; %s'),
  limits_unavailable: define('limits_unavailable', 503, 'server_error', 'The budget of %s cannot be checked right now (%s); nothing was charged, retry shortly'),
  drain_timeout: define('drain_timeout', 503, 'server_error', 'The gateway shut down before this reply was complete (server.shutdown_timeout_ms); what was delivered is billed'),
  stream_stalled: define('stream_stalled', 504, 'server_error', 'The client took none of this reply for %s ms (server.stream_stall_timeout_ms); the stream was cut and what was delivered is billed'),
  service_unavailable: define('service_unavailable', 503, 'server_error', 'The gateway is shutting down; retry on another instance'),
  internal_error: define('internal_error', 500, 'server_error', 'Internal gateway error (request %s)'),
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorExtras {
  param?: string | null;
  requestedModel?: string;
  usedProvider?: string;
  /** Extra headers to send with the error (e.g. Retry-After). */
  headers?: Record<string, string>;
  /** Overrides the definition's status, for codes that mirror an upstream status (gateway_error). */
  status?: number;
}

function format(template: string, args: readonly (string | number)[]): string {
  let i = 0;
  return template.replace(/%s/g, () => String(args[i++] ?? ''));
}

/** A client-visible error: carries the stable code, status and the OpenAI-style body. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly extras: ErrorExtras;

  constructor(code: ErrorCode, args: readonly (string | number)[] = [], extras: ErrorExtras = {}) {
    const def = ERRORS[code];
    super(format(def.message, args));
    this.code = code;
    this.status = extras.status ?? def.status;
    this.type = def.type;
    this.extras = extras;
  }

  /** Same error, with the routing context an upstream failure reports. */
  withContext(ctx: { requestedModel?: string; usedProvider?: string }): GatewayError {
    Object.assign(this.extras, Object.fromEntries(Object.entries(ctx).filter(([, v]) => v !== undefined)));
    return this;
  }

  toBody(): ErrorBody {
    const { param = null, requestedModel, usedProvider } = this.extras;
    return {
      error: {
        message: this.message,
        type: this.type,
        code: this.code,
        param,
        ...(usedProvider !== undefined ? { usedProvider } : {}),
        ...(requestedModel !== undefined ? { requestedModel } : {}),
      },
    };
  }
}

export interface ErrorBody {
  error: {
    message: string;
    type: string;
    code: string;
    param: string | null;
    usedProvider?: string;
    requestedModel?: string;
  };
}

/** Shorthand for the most common client mistake: a field that is missing or of the wrong type. */
export function invalidField(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', [message], { param: param || null });
}
