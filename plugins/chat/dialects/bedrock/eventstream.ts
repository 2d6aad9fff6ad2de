import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import type { EventDecoder, UpstreamEvent } from '../types.js';

/**
 * AWS's binary event-stream framing (`application/vnd.amazon.eventstream`), as
 * Bedrock's ConverseStream sends it: each message is a 4-byte total length, a 4-byte
 * headers length, a prelude CRC, headers, a payload and a message CRC. Messages are
 * cut out by their length and decoded (CRCs checked) by `@smithy/eventstream-codec`;
 * a message whose CRC fails throws, and the stream ends with an error.
 *
 * Events come out named by `:event-type` (messageStart, contentBlockDelta, …); an
 * exception by its `:exception-type` (throttlingException, …) with its JSON payload;
 * an error message (`:message-type: error`) as `error` with `{"message": …}`.
 */

const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
const fromUtf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));

/** The smallest frame (prelude, its CRC and the message CRC) and the largest one AWS sends (16 MiB). */
const MIN_FRAME = 16;
const MAX_FRAME = 16 * 1024 * 1024;

export function eventStreamCodec(): EventStreamCodec {
  return new EventStreamCodec(utf8, fromUtf8);
}

function header(m: Message, name: string): string | undefined {
  const h = m.headers[name];
  return h?.type === 'string' ? h.value : undefined;
}

/** One decoded message as a stream event. */
function eventOf(m: Message): UpstreamEvent {
  const kind = header(m, ':message-type') ?? 'event';
  if (kind === 'exception') return { event: header(m, ':exception-type') ?? 'exception', data: utf8(m.body) };
  if (kind === 'error') {
    const message = `${header(m, ':error-code') ?? 'error'}: ${header(m, ':error-message') ?? ''}`;
    return { event: 'error', data: JSON.stringify({ message }) };
  }
  return { event: header(m, ':event-type'), data: utf8(m.body) };
}

export function eventStreamDecoder(): EventDecoder {
  const codec = eventStreamCodec();
  let pending: Buffer = Buffer.alloc(0);
  return {
    push(chunk) {
      pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
      const events: UpstreamEvent[] = [];
      while (pending.length >= 4) {
        const total = pending.readUInt32BE(0);
        if (total < MIN_FRAME || total > MAX_FRAME) throw new Error(`an event-stream frame of ${total} bytes`);
        if (pending.length < total) break;
        events.push(eventOf(codec.decode(pending.subarray(0, total))));
        pending = pending.subarray(total);
      }
      return events;
    },
    end() {
      if (pending.length > 0) throw new Error(`the event stream ended inside a frame (${pending.length} bytes left)`);
      return [];
    },
  };
}
