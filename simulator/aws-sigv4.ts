/**
 * What AWS checks before it reads a signed request (Signature Version 4), for the
 * simulated Bedrock: a known access key (and its session token), an `x-amz-date` within
 * 5 minutes, a credential scope for this region and service, a body matching its
 * `x-amz-content-sha256`, and a signature recomputed here from the configured secret
 * over the request exactly as received — its path, query, signed headers and body —
 * with `@smithy/signature-v4`. Failures answer as AWS does: 403 with `{"message"}` and
 * the type in `x-amzn-ErrorType`.
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from '../src/providers/aws-sigv4.js';
import { header, type SimRequest } from './http.js';

/** The simulator's fixed test credentials (configurable per simulator with `awsKeys`). */
export const SIM_AWS = {
  region: 'us-east-1',
  accessKeyId: 'AKIASIMULATOR0000001',
  secretAccessKey: 'sim/Secret+Access+Key/000000000000000000',
} as const;

/** An access key the simulated AWS knows: its secret, and the session token it must come with (temporary credentials). */
export interface SimAwsKey {
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SimAws {
  /** The region requests must be scoped to. */
  region: string;
  keys: ReadonlyMap<string, SimAwsKey>;
}

export function defaultSimAws(): SimAws {
  return { region: SIM_AWS.region, keys: new Map([[SIM_AWS.accessKeyId, { secretAccessKey: SIM_AWS.secretAccessKey }]]) };
}

/** An AWS error reply: status, type (for x-amzn-ErrorType) and message. */
export interface AwsFault {
  status: number;
  type: string;
  message: string;
}

const MAX_SKEW_MS = 5 * 60_000;
const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;
const MISMATCH = 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

function parseAmzDate(value: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]))) : undefined;
}

/** The fault of a request AWS would refuse before reading it, or undefined when its signature holds. */
export async function verifySigV4(req: SimRequest, rawQuery: string, aws: SimAws, service: string, now = Date.now()): Promise<AwsFault | undefined> {
  const authorization = header(req.headers, 'authorization');
  if (authorization === undefined) return { status: 403, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const m = AUTH.exec(authorization);
  if (!m) return { status: 403, type: 'IncompleteSignatureException', message: `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization=${authorization.split(' ')[0] ?? ''}` };
  const [, accessKeyId = '', scopeDate, region, scopeService, signedList = '', signature = ''] = m;
  const key = aws.keys.get(accessKeyId);
  const token = header(req.headers, 'x-amz-security-token');
  if (!key || (key.sessionToken ?? undefined) !== token) {
    return { status: 403, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  const amzDate = header(req.headers, 'x-amz-date') ?? '';
  const date = parseAmzDate(amzDate);
  if (!date) return { status: 403, type: 'IncompleteSignatureException', message: 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.' };
  if (Math.abs(now - date.getTime()) > MAX_SKEW_MS) {
    return { status: 403, type: 'InvalidSignatureException', message: `Signature expired: ${amzDate} is now earlier than ${new Date(now - MAX_SKEW_MS).toISOString().replace(/[-:]|\.\d{3}/g, '')} (${new Date(now).toISOString().replace(/[-:]|\.\d{3}/g, '')} - 5 min.)` };
  }
  if (scopeDate !== amzDate.slice(0, 8)) return { status: 403, type: 'InvalidSignatureException', message: `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${scopeDate}' != '${amzDate.slice(0, 8)}'` };
  if (region !== aws.region) return { status: 403, type: 'InvalidSignatureException', message: `Credential should be scoped to a valid region. ` };
  if (scopeService !== service) return { status: 403, type: 'InvalidSignatureException', message: `Credential should be scoped to correct service: '${service}'. ` };
  const signed = signedList.split(';');
  if (!signed.includes('host')) return { status: 403, type: 'InvalidSignatureException', message: MISMATCH };
  const declared = header(req.headers, 'x-amz-content-sha256');
  if (declared !== undefined && declared !== createHash('sha256').update(req.body).digest('hex')) return { status: 403, type: 'InvalidSignatureException', message: MISMATCH };
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const v = req.headers[name];
    if (v === undefined) return { status: 403, type: 'InvalidSignatureException', message: MISMATCH };
    headers[name] = Array.isArray(v) ? v.join(',') : v;
  }
  const query: Record<string, string | string[]> = {};
  const params = new URLSearchParams(rawQuery);
  for (const name of new Set(params.keys())) {
    const all = params.getAll(name);
    query[name] = all.length === 1 ? (all[0] as string) : all;
  }
  const signer = new SignatureV4({
    service: scopeService ?? service, region, sha256: NodeSha256, applyChecksum: false,
    credentials: token && signed.includes('x-amz-security-token') ? { accessKeyId, secretAccessKey: key.secretAccessKey, sessionToken: token } : { accessKeyId, secretAccessKey: key.secretAccessKey },
  });
  const expected = await signer.sign(
    { method: req.method, protocol: 'http:', hostname: 'unused', path: req.path, query, headers, body: req.body.length > 0 ? req.body : undefined },
    { signingDate: date, signableHeaders: new Set(signed) },
  );
  const got = /Signature=([0-9a-f]{64})/.exec(expected.headers.authorization ?? '')?.[1] ?? '';
  const ok = got.length === signature.length && timingSafeEqual(Buffer.from(got), Buffer.from(signature));
  return ok ? undefined : { status: 403, type: 'InvalidSignatureException', message: MISMATCH };
}
