/**
 * Azure OpenAI: the OpenAI wire format on `{resource}/openai/deployments/{deployment}/…`
 * with `?api-version=…`, the `api-key` header (or a Microsoft Entra bearer token this
 * simulator issued at `…/oauth2/v2.0/token`), and Azure's content filter: a prompt
 * `[[sim:safety_block]]` is refused with 400 `content_filter`; `[[sim:safety_finish]]`
 * cuts the reply with `finish_reason: content_filter`. Past those checks the request is
 * answered by the OpenAI handlers, with the deployment as the model when the body
 * names none.
 */

import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { bearer, header, isRejectedKey, sendError, sendJson, type ErrorReply, type Handler, type SimRequest } from './http.js';
import { handleSpeech, handleTranscription } from './openai-audio.js';
import { handleChat, handleEmbeddings } from './openai.js';
import { parseJsonObject } from './json.js';

/** The data-plane versions the simulator answers (GA and the previews around them). */
const AZURE_API_VERSIONS: ReadonlySet<string> = new Set([
  '2024-02-01', '2024-06-01', '2024-10-21', '2025-04-01-preview', '2024-12-01-preview', '2025-01-01-preview', '2025-03-01-preview',
]);

/** The scope Entra tokens for Azure OpenAI carry. */
const AZURE_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** How long an issued Entra token lives (Entra's usual 3599 s). */
const TOKEN_LIFETIME_S = 3599;

const OPERATIONS: Readonly<Record<string, Handler>> = {
  'chat/completions': handleChat,
  embeddings: handleEmbeddings,
  'audio/speech': handleSpeech,
  'audio/transcriptions': handleTranscription,
};

function azureError(status: number, code: string, message: string): ErrorReply {
  return { status, body: { error: { code, message } } };
}

/** The 400 Azure sends when its content filter refuses the prompt. */
function contentFilterError(): ErrorReply {
  const category = (filtered: boolean, severity: string) => ({ filtered, severity });
  return {
    status: 400,
    body: {
      error: {
        message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. (simulated)",
        type: null, param: 'prompt', code: 'content_filter', status: 400,
        innererror: {
          code: 'ResponsibleAIPolicyViolation',
          content_filter_result: {
            hate: category(false, 'safe'), self_harm: category(false, 'safe'), sexual: category(false, 'safe'),
            violence: category(true, 'medium'), jailbreak: { filtered: false, detected: false },
          },
        },
      },
    },
  };
}

/** Checks `api-key`, or a bearer token this simulator issued; sends Azure's 401 otherwise. */
function azureAuth(req: SimRequest, res: ServerResponse, tokens: Map<string, number>): boolean {
  const key = header(req.headers, 'api-key');
  if (key !== undefined) {
    if (!isRejectedKey(key)) return true;
    sendError(res, azureError(401, '401', 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.'));
    return false;
  }
  const token = bearer(req.headers);
  const expires = token === undefined ? undefined : tokens.get(token);
  if (expires !== undefined && expires > Date.now()) return true;
  sendError(res, azureError(401, '401', 'Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.'));
  return false;
}

export const handleAzure: Handler = async (req, res, env) => {
  const m = /\/openai\/deployments\/([^/]+)\/(.+)$/.exec(req.path);
  const handler = m ? OPERATIONS[m[2] ?? ''] : undefined;
  if (!m || !handler) {
    sendError(res, azureError(404, '404', 'Resource not found'));
    return;
  }
  const version = req.query.get('api-version');
  if (version === null || !AZURE_API_VERSIONS.has(version)) {
    sendError(res, azureError(400, 'BadRequest', version === null ? 'Missing required query parameter api-version.' : 'API version not supported'));
    return;
  }
  if (!azureAuth(req, res, env.entraTokens)) return;
  if (m[2] === 'chat/completions' && req.directives.safetyBlock) {
    sendError(res, contentFilterError());
    return;
  }
  const deployment = decodeURIComponent(m[1] ?? '');
  let body = req.body;
  const json = m[2] === 'audio/transcriptions' ? undefined : parseJsonObject(body);
  if (json && typeof json['model'] !== 'string') body = Buffer.from(JSON.stringify({ ...json, model: deployment }));
  // Past Azure's checks the OpenAI handlers answer: they check a bearer key, which Azure's was.
  await handler({ ...req, body, headers: { ...req.headers, authorization: 'Bearer azure-checked' }, azure: true }, res, env);
};

/**
 * Microsoft Entra ID's token endpoint (`POST /{tenant}/oauth2/v2.0/token`), client
 * credentials only: a rejected secret (`bad-…`, `invalid`) gets Entra's 401
 * `invalid_client`, a scope other than Azure AI services' a 400 `invalid_scope`.
 */
export const handleEntraToken: Handler = async (req, res, env) => {
  const form = new URLSearchParams(req.body.toString('utf8'));
  const fail = (status: number, error: string, description: string): void => {
    sendJson(res, status, { error, error_description: `${description} (simulated)\r\nTrace ID: 0\r\nTimestamp: ${new Date().toISOString()}`, error_codes: [7000215] });
  };
  if (!String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    fail(400, 'invalid_request', 'AADSTS900144: The request body must contain the following parameter: grant_type.');
    return;
  }
  if (form.get('grant_type') !== 'client_credentials') {
    fail(400, 'unsupported_grant_type', 'AADSTS70003: The app requested an unsupported grant type.');
    return;
  }
  const clientId = form.get('client_id') ?? '';
  const secret = form.get('client_secret') ?? '';
  if (clientId === '' || secret === '' || isRejectedKey(secret)) {
    fail(401, 'invalid_client', `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`);
    return;
  }
  if (form.get('scope') !== AZURE_SCOPE) {
    fail(400, 'invalid_scope', `AADSTS70011: The provided value for the input parameter 'scope' is not valid.`);
    return;
  }
  const token = `sim-entra-${randomBytes(12).toString('hex')}`;
  env.entraTokens.set(token, Date.now() + TOKEN_LIFETIME_S * 1000);
  sendJson(res, 200, { token_type: 'Bearer', expires_in: TOKEN_LIFETIME_S, ext_expires_in: TOKEN_LIFETIME_S, access_token: token });
};
