import type { MaskBook } from './masker.js';
import type { Matcher } from './matchers.js';
import type { BodyLogging, CapturedBodies, StoredBodies } from '../model/guardrails.js';

export type { StoredBodies };

/** Appended to a body cut at `max_bytes`. */
const TRUNCATED_MARKER = '\n…[truncated by body_logging.max_bytes]';

/** Text cut to at most `max` UTF-8 bytes (on a character boundary). */
function cutBytes(text: string, max: number): string {
  if (Buffer.byteLength(text, 'utf8') <= max) return text;
  return Buffer.from(text, 'utf8').subarray(0, max).toString('utf8').replace(/\uFFFD+$/, '');
}

/**
 * The bodies of one request, captured as the project's `body_logging` asks: masked values
 * already replaced (what the upstream saw), redacted by the project's pii rules in
 * `redacted` mode, each cut at `max_bytes`. The reply is assembled chunk by chunk (a stream)
 * and never held beyond `max_bytes`.
 */
export class BodyCapture implements CapturedBodies {
  private request: string | null = null;
  private readonly response: string[] = [];
  private responseBytes = 0;
  private truncated = false;

  constructor(private readonly config: BodyLogging, private readonly book: MaskBook, private readonly redact: Matcher | undefined) {}

  private clean(text: string): string {
    let out = this.book.scrub(text);
    if (this.config.mode === 'redacted' && this.redact) out = this.book.apply(out, this.redact(out), false);
    return out;
  }

  setRequest(json: string): void {
    const cut = cutBytes(json, this.config.max_bytes);
    if (cut.length < json.length) this.truncated = true;
    this.request = this.clean(cut) + (cut.length < json.length ? TRUNCATED_MARKER : '');
  }

  addResponse(chunk: string): void {
    if (this.responseBytes >= this.config.max_bytes) {
      this.truncated = true;
      return;
    }
    const room = this.config.max_bytes - this.responseBytes;
    const cut = cutBytes(chunk, room);
    if (cut.length < chunk.length) this.truncated = true;
    this.response.push(cut);
    this.responseBytes += Buffer.byteLength(cut, 'utf8');
  }

  /** The bodies to store; redaction runs once over the assembled reply (a value split across chunks is still found). */
  stored(requestId: string, orgId: string, createdAt: number): StoredBodies {
    const response = this.response.length > 0 ? this.clean(this.response.join('')) + (this.truncated && this.responseBytes >= this.config.max_bytes ? TRUNCATED_MARKER : '') : null;
    return { requestId, orgId, createdAt, expiresAt: createdAt + this.config.retention_days * 86_400_000, request: this.request, response, truncated: this.truncated };
  }
}
