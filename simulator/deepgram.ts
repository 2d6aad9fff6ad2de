/** Deepgram pre-recorded speech-to-text: `POST …/v1/listen?model=…` with a raw audio body. */

import { randomUUID } from 'node:crypto';
import { applyFaults, authScheme, isRejectedKey, sendError, sendJson, type ErrorReply, type ErrorShape, type Handler } from './http.js';
import { audioSecondsFromBytes } from './reply.js';

const DEEPGRAM_TRANSCRIPT = 'Simulated transcript.';

function dgError(status: number, code: string, message: string, requestId: string): ErrorReply {
  return { status, body: { err_code: code, err_msg: message, request_id: requestId } };
}

function deepgramErrorShape(requestId: string): ErrorShape {
  return (status) => {
    if (status === 429) return dgError(429, 'TOO_MANY_REQUESTS', 'Too many requests. Please try again later. (simulated)', requestId);
    if (status >= 500) return dgError(status, 'INTERNAL_SERVER_ERROR', 'Internal server error. (simulated)', requestId);
    return dgError(status, 'Bad Request', `Simulated error with status ${status}.`, requestId);
  };
}

export const handleListen: Handler = async (req, res) => {
  const requestId = randomUUID();
  // Deepgram keys use the `Token` scheme; short-lived tokens use `Bearer`.
  const key = authScheme(req.headers, 'token') ?? authScheme(req.headers, 'bearer');
  if (key === undefined || isRejectedKey(key)) {
    sendError(res, { status: 401, body: { err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.', request_id: requestId } });
    return;
  }
  if (req.body.length === 0) {
    const message = 'Bad Request: failed to process audio: corrupt or unsupported data';
    sendError(res, dgError(400, 'Bad Request', message, requestId));
    return;
  }
  if (await applyFaults(res, req.directives, deepgramErrorShape(requestId), false)) return;
  const duration = req.directives.usage ?? Math.round(audioSecondsFromBytes(req.body.length) * 1000) / 1000;
  const model = req.query.get('model') ?? 'nova-3';
  sendJson(res, 200, {
    metadata: {
      transaction_key: 'deprecated',
      request_id: requestId,
      created: new Date().toISOString(),
      duration,
      channels: 1,
      models: [`sim-${model}`],
    },
    results: {
      channels: [{ alternatives: [{ transcript: DEEPGRAM_TRANSCRIPT, confidence: 0.99, words: [] }] }],
    },
  });
};
