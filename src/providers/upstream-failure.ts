/*
 * How an upstream attempt failed: the retry, fallback and cooldown decisions read it, and an
 * upstream credential scheme (Entra) throws it when its token endpoint fails.
 */

/** Why an upstream attempt failed before a usable response: decides retry and fallback. */
export type FailureKind = 'connect_error' | 'timeout' | '5xx' | '429' | '4xx' | 'aborted';

export class UpstreamFailure extends Error {
  private parsedBody: { json: unknown; message: string } | undefined;

  constructor(
    readonly kind: FailureKind, message: string, readonly status: number | null = null, readonly body: string = '',
    /** For a timeout: the limit that was hit, when not the endpoint's timeout_ms (e.g. its first-byte timeout). */
    readonly limitMs?: number,
  ) {
    super(message);
  }

  /** The error body as JSON (undefined when it is not JSON), parsed once however often it is read. */
  get json(): unknown {
    return this.parsed().json;
  }

  /** The provider's message in the error body (see `providerMessage`), from the same single parse. */
  get providerMessage(): string {
    return this.parsed().message;
  }

  private parsed(): { json: unknown; message: string } {
    this.parsedBody ??= parseErrorBody(this.body);
    return this.parsedBody;
  }
}

function parseErrorBody(body: string): { json: unknown; message: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { json: undefined, message: body.slice(0, 500).trim() };
  }
  const o = (typeof json === 'object' && json !== null ? json : {}) as { error?: { message?: unknown } | string; detail?: { message?: unknown } | string; err_msg?: unknown; message?: unknown };
  const candidates = [
    typeof o.error === 'object' ? o.error?.message : o.error,
    typeof o.detail === 'object' ? o.detail?.message : o.detail,
    o.err_msg,
    o.message,
  ];
  const found = candidates.find((c) => typeof c === 'string' && c.length > 0);
  return { json, message: typeof found === 'string' ? found : body.slice(0, 500).trim() };
}

/**
 * The human message inside a provider's error body, whatever its shape: OpenAI,
 * Anthropic and Gemini use error.message, ElevenLabs detail.message, Deepgram err_msg.
 */
export function providerMessage(body: string): string {
  return parseErrorBody(body).message;
}
