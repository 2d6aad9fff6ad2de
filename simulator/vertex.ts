/**
 * Vertex AI under `…/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}`:
 * Google's Gemini (generateContent, streamGenerateContent), its text embedding models
 * (predict, vertex-embeddings.ts) and Anthropic's Claude
 * (rawPredict, streamRawPredict: the Messages API with `anthropic_version` in the
 * body and the model in the path). Every call needs a live OAuth access token from
 * this simulator's token endpoint (google-auth.ts), for an account of the path's project.
 */

import type { ServerResponse } from 'node:http';
import { handleMessages } from './anthropic.js';
import { geminiError, geminiErrorShape } from './gemini-wire.js';
import { serveGemini } from './gemini.js';
import { bearer, sendError, type Handler, type SimRequest } from './http.js';
import { asString, parseJsonObject } from './json.js';
import { isEmbeddingModel, predictEmbeddings } from './vertex-embeddings.js';

const PATH = /\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/;

/** Whether a path is a Vertex AI publisher-model call. */
export const isVertexPath = (path: string): boolean => PATH.test(path);

const UNAUTHENTICATED = 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. '
  + 'See https://developers.google.com/identity/sign-in/web/devconsole-project.';

/** The versions the Messages API takes in the body on Vertex: its own, and the dated API versions the Anthropic SDK copies there. */
const BODY_VERSION = /^(vertex-2023-10-16|\d{4}-\d{2}-\d{2})$/;

export const handleVertex: Handler = async (req, res, env) => {
  const m = PATH.exec(req.path);
  if (!m) {
    sendError(res, geminiError(404, `The requested URL ${req.path} was not found on this server.`));
    return;
  }
  const [, project, location, publisher, rawModel, method] = m as unknown as [string, string, string, string, string, string];
  const account = env.google.accountOf(bearer(req.headers));
  if (!account) {
    sendError(res, geminiError(401, UNAUTHENTICATED));
    return;
  }
  const model = decodeURIComponent(rawModel);
  if (decodeURIComponent(project) !== account.projectId) {
    const resource = `//aiplatform.googleapis.com/projects/${project}/locations/${location}/publishers/${publisher}/models/${model}`;
    sendError(res, geminiError(403, `Permission 'aiplatform.endpoints.predict' denied on resource '${resource}' (or it may not exist).`));
    return;
  }
  // Quota and availability faults come from Vertex's front door, in Google's error shape, whatever the publisher.
  const status = req.directives.status;
  if (status !== undefined && status !== 200) {
    sendError(res, geminiErrorShape(status));
    return;
  }
  // Each publisher serves its own models only: Claude is Anthropic's, everything else here Google's.
  const own = publisher === 'anthropic' ? model.startsWith('claude-') : publisher === 'google' && !model.startsWith('claude-');
  const notFound = (): void => sendError(res, geminiError(404, `Publisher Model \`projects/${project}/locations/${location}/publishers/${publisher}/models/${model}\` was not found or your project does not have access to it.`));
  if (own && publisher === 'google' && method === 'predict' && isEmbeddingModel(model)) await predictEmbeddings(req, res, model, notFound);
  else if (own && publisher === 'google') await serveGemini(req, res, env, { model, method });
  else if (own && (method === 'rawPredict' || method === 'streamRawPredict')) await claude(req, res, env, model, method === 'streamRawPredict');
  else notFound();
};

/** Claude's Messages API: the body must name its version and must not name the model (it is in the path). */
async function claude(req: SimRequest, res: ServerResponse, env: Parameters<Handler>[2], model: string, stream: boolean): Promise<void> {
  const body = parseJsonObject(req.body);
  const fail = (message: string): void => sendError(res, { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message } } });
  if (body === undefined) return fail('There was an error parsing the body of your request.');
  const version = asString(body['anthropic_version']);
  if (version === undefined) return fail('anthropic_version: Field required');
  if (!BODY_VERSION.test(version)) return fail(`anthropic_version: Input should be 'vertex-2023-10-16'`);
  if (body['model'] !== undefined) return fail('model: Extra inputs are not permitted');
  if ((body['stream'] === true) !== stream) return fail(`stream: must be ${stream} for ${stream ? 'streamRawPredict' : 'rawPredict'}`);
  const { anthropic_version: _version, ...rest } = body;
  // The Messages handler behind it: the version as the header it reads, the model from the path.
  const headers = { ...req.headers, 'anthropic-version': version.startsWith('vertex-') ? '2023-06-01' : version };
  await handleMessages({ ...req, headers, body: Buffer.from(JSON.stringify({ ...rest, model })) }, res, env);
}
