/** One server-sent event: its `event:` name (if any) and its `data:` lines joined. */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * Incremental SSE decoder: feed it bytes as they arrive, get whole events out.
 * Handles `\n`, `\r\n` and events split across chunks; ignores comments and ids.
 */
export class SseDecoder {
  private buffer = '';
  private readonly decoder = new TextDecoder();

  push(chunk: Uint8Array): SseEvent[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const events: SseEvent[] = [];
    for (;;) {
      const m = /\r?\n\r?\n/.exec(this.buffer);
      if (!m) break;
      const block = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const ev = parseSseBlock(block);
      if (ev) events.push(ev);
    }
    return events;
  }

  /** An event left without its closing blank line when the stream ended. */
  end(): SseEvent[] {
    const rest = this.buffer + this.decoder.decode();
    this.buffer = '';
    const ev = rest.trim() ? parseSseBlock(rest) : undefined;
    return ev ? [ev] : [];
  }
}

/** One event's text (its lines, without the blank line that ends it), or undefined when it holds only comments. */
export function parseSseBlock(block: string): SseEvent | undefined {
  let event: string | undefined;
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith(':') || line === '') continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (event === undefined && data.length === 0) return undefined;
  return { event, data: data.join('\n') };
}

/** Formats an event for the wire. */
export function formatSse(data: string, event?: string): string {
  return event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
}
