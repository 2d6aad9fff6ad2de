import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';


const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** A parsed service-account key. `privateKey` never leaves this module's signing. */
export interface ServiceAccount {
  clientEmail: string;
  privateKeyId: string | undefined;
  tokenUri: string;
  projectId: string | undefined;
  privateKey: KeyObject;
  /** SHA-256 of the public key: tells two keys of one account apart (a rotated key mints its own tokens). */
  fingerprint: string;
}

/**
 * Parses a service-account JSON key. Errors name the field at fault (and the account,
 * once known), never a key's content.
 */
export function parseServiceAccount(text: string): ServiceAccount {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('the service-account key is not JSON');
  }
  const o = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof o[k] === 'string' && o[k] !== '' ? (o[k] as string) : undefined);
  if (o.type !== 'service_account') throw new Error(`the key's type is ${JSON.stringify(o.type ?? null)}, not "service_account"`);
  const clientEmail = str('client_email');
  if (!clientEmail) throw new Error('the service-account key has no client_email');
  const pem = str('private_key');
  if (!pem) throw new Error(`the service-account key of ${clientEmail} has no private_key`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw new Error(`the private_key of ${clientEmail} is not a PEM private key`);
  }
  const tokenUri = str('token_uri') ?? DEFAULT_TOKEN_URI;
  if (!/^https?:\/\//.test(tokenUri)) throw new Error(`the token_uri of ${clientEmail} is not an http(s) URL`);
  const fingerprint = createHash('sha256').update(createPublicKey(privateKey).export({ type: 'spki', format: 'der' })).digest('hex');
  return { clientEmail, privateKeyId: str('private_key_id'), tokenUri, projectId: str('project_id'), privateKey, fingerprint };
}

/** `providers.<id>.google` in gateway.yaml. */
export interface GoogleSettings {
  /** The Google Cloud project in the request paths; default: the key's project_id. */
  project?: string;
  /** The region (e.g. us-central1, or global); default: read from the base URL's host. */
  location?: string;
  /** A service-account JSON key file, relative to gateway.yaml. */
  credentials_file?: string;
  /** The same JSON inline (e.g. "${env:VERTEX_SERVICE_ACCOUNT_JSON}"). */
  credentials_json?: string;
}

/** A provider's `google-service-account` auth, resolved at load. */
export interface GoogleAuthDef {
  name: 'google-service-account';
  /** The gateway's service account; undefined when none was found (then `missing` says why). */
  account: ServiceAccount | undefined;
  missing: string;
}

export interface ResolvedGoogleAuth {
  auth: GoogleAuthDef;
  /** Values of the `{project}` and `{location}` placeholders of the provider's endpoint paths. */
  pathVars: Record<string, string>;
  /** Faults of the operator's configuration (a path under `/providers/<id>/google`). */
  problems: Array<{ path: string; message: string }>;
}

/** The region of a Vertex AI host (`europe-west4-aiplatform.googleapis.com` → europe-west4; `aiplatform.googleapis.com` → global). */
function locationOfHost(baseUrl: string): string | undefined {
  let host: string;
  try {
    host = new URL(baseUrl).hostname;
  } catch {
    return undefined;
  }
  if (host === 'aiplatform.googleapis.com') return 'global';
  return /^([a-z0-9-]+)-aiplatform\.googleapis\.com$/.exec(host)?.[1];
}

/**
 * Finds a provider's service account: `credentials_json`, else `credentials_file`
 * (relative to gateway.yaml), else Application Default Credentials — the key file
 * GOOGLE_APPLICATION_CREDENTIALS names. A configured key that cannot be read is a
 * config error at boot; an ADC file that cannot be is reported per request (it may
 * be meant for another program), as is the absence of any key.
 */
export function resolveGoogleAuth(
  providerId: string, settings: GoogleSettings | undefined, opts: { baseDir: string; baseUrl: string; env: NodeJS.ProcessEnv },
): ResolvedGoogleAuth {
  const s = settings ?? {};
  const at = `/providers/${providerId}/google`;
  const problems: ResolvedGoogleAuth['problems'] = [];
  let account: ServiceAccount | undefined;
  let missing = `no Google service account is configured for provider ${providerId}: set providers.${providerId}.google.credentials_file `
    + '(or credentials_json), or GOOGLE_APPLICATION_CREDENTIALS';
  const adc = opts.env.GOOGLE_APPLICATION_CREDENTIALS;
  if (s.credentials_json !== undefined && s.credentials_file !== undefined) problems.push({ path: at, message: 'set credentials_file or credentials_json, not both' });
  if (s.credentials_json !== undefined) {
    try {
      account = parseServiceAccount(s.credentials_json);
    } catch (err) {
      problems.push({ path: `${at}/credentials_json`, message: (err as Error).message });
    }
  } else if (s.credentials_file !== undefined) {
    const file = isAbsolute(s.credentials_file) ? s.credentials_file : resolve(opts.baseDir, s.credentials_file);
    try {
      account = parseServiceAccount(readFileSync(file, 'utf8'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problems.push({ path: `${at}/credentials_file`, message: code ? `cannot read ${file}: ${code}` : `${file}: ${(err as Error).message}` });
    }
  } else if (adc) {
    try {
      account = parseServiceAccount(readFileSync(adc, 'utf8'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      missing = `GOOGLE_APPLICATION_CREDENTIALS (${adc}) is not a usable service-account key for provider ${providerId}: ${code ?? (err as Error).message}`;
    }
  }
  const project = s.project ?? account?.projectId;
  if (account && !project) problems.push({ path: `${at}/project`, message: `the key of ${account.clientEmail} has no project_id: set providers.${providerId}.google.project` });
  const location = s.location ?? locationOfHost(opts.baseUrl) ?? 'us-central1';
  // Without an account no request leaves the gateway (the auth refuses first), so the path's project is never sent.
  return { auth: { name: 'google-service-account', account, missing }, pathVars: { project: project ?? 'unconfigured', location }, problems };
}
