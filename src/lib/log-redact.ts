/*
 * URLs as the server log writes them. A client may put a credential in the query string
 * (Google's REST style `?key=…`, and others' `api_key`, `token`, …); fastify's request
 * line logs `req.url`, so every such parameter's value is replaced before it is written.
 */

/** Query parameter names (lower-cased, `-` read as `_`) whose values are credentials. */
const CREDENTIAL_PARAMS: ReadonlySet<string> = new Set([
  'key', 'api_key', 'apikey', 'x_goog_api_key', 'x_api_key', 'token', 'access_token', 'id_token', 'refresh_token',
  'auth', 'authorization', 'password', 'secret', 'client_secret', 'sig', 'signature',
]);

export const REDACTED = '[REDACTED]';

/** True when a query parameter of this name carries a credential. */
function isCredentialParam(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // a malformed escape: judged as written
  }
  return CREDENTIAL_PARAMS.has(decoded.trim().toLowerCase().replace(/-/g, '_'));
}

/** The URL with the value of every credential-looking query parameter replaced by `[REDACTED]`; the rest as it came. */
function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const [query, fragment] = splitOnce(url.slice(q + 1), '#');
  const params = query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    return eq >= 0 && isCredentialParam(name) ? `${name}=${REDACTED}` : pair;
  });
  return `${url.slice(0, q)}?${params.join('&')}${fragment === undefined ? '' : `#${fragment}`}`;
}

function splitOnce(s: string, sep: string): [string, string | undefined] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}

/** fastify's request serializer, with the URL redacted. */
export function requestLogValue(req: { method: string; url: string; host?: string; ip?: string; headers?: Record<string, unknown>; socket?: { remotePort?: number } }): Record<string, unknown> {
  return {
    method: req.method, url: redactUrl(req.url), version: req.headers?.['accept-version'], host: req.host, remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}
