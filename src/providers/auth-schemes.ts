import { AwsSigV4Signer, regionOfUrl, type AwsAuthConfig, type UpstreamSigner } from './aws-sigv4.js';

/** What the auth schemes read of a provider file and its gateway.yaml override. */
interface SchemeInput {
  id: string;
  base_url: string;
  auth: { header?: string; format?: string; scheme?: string; service?: string };
}

interface SchemeOverride {
  base_url?: string;
  aws?: AwsAuthConfig;
}

/**
 * The signer for a provider file's `auth`: an AwsSigV4Signer for `scheme: aws-sigv4`,
 * none otherwise (a key header, or a scheme that makes headers: google-service-account). A string is the problem with the
 * configuration, reported at load (never at the first request).
 *
 * aws-sigv4's region: `providers.<id>.aws.region`, else the region in the base URL's
 * host (`bedrock-runtime.<region>.amazonaws.com`, the override's then the file's), else
 * AWS_REGION / AWS_DEFAULT_REGION. Its credentials: `aws.access_key_id` +
 * `aws.secret_access_key` (+ `aws.session_token`), else the standard AWS chain.
 */
export function signerFor(raw: SchemeInput, override: SchemeOverride, env: NodeJS.ProcessEnv): UpstreamSigner | string | undefined {
  const { auth } = raw;
  if (auth.scheme !== 'aws-sigv4') {
    // A key header (its header and format are checked by the catalogue) or another scheme (google-service-account).
    if (override.aws) return `providers.${raw.id}.aws is set in gateway.yaml but this provider's auth is not aws-sigv4`;
    return undefined;
  }
  if (!auth.service) return 'auth scheme aws-sigv4 needs the service to sign for (e.g. service: bedrock)';
  const aws = override.aws ?? {};
  const region = aws.region || regionOfUrl(override.base_url ?? '') || regionOfUrl(raw.base_url) || env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!region) return `no AWS region for ${raw.id}: set providers.${raw.id}.aws.region in gateway.yaml (or AWS_REGION)`;
  const { access_key_id: id, secret_access_key: secret, session_token: token } = aws;
  if (Boolean(id) !== Boolean(secret)) return `providers.${raw.id}.aws needs both access_key_id and secret_access_key (or neither, for the standard AWS credential chain)`;
  const credentials = id && secret ? { accessKeyId: id, secretAccessKey: secret, ...(token ? { sessionToken: token } : {}) } : undefined;
  return new AwsSigV4Signer({ service: auth.service, region, ...(credentials ? { credentials } : {}) });
}
