import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useOrgGateway } from './fixtures.js';

/**
 * A body over the limit gets its 413 even from a client that writes its whole body
 * before it reads (Python's http.client, many SDKs): the gateway reads and discards
 * the rest instead of closing the connection under the upload (a reset, and the
 * client never sees the answer).
 */
const t = useOrgGateway('big-bodies', '1', {
  yaml: { server: { host: '127.0.0.1', port: 0, body_limit_bytes: 1024 }, settings: { music: { image_fetch: { max_bytes: 1024 } } } },
});

/** Past what loopback socket buffers hold, so the upload is still going when the 413 is sent. */
const BIG = 6 * 1024 * 1024;
const TRIES = 50;

/** One upload written in full before reading; the status line and error code read back, or how the write failed. */
function uploadThenRead(port: number, path: string, key: string, body: Buffer, type = 'application/json'): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    let received = '';
    const done = (outcome: string): void => {
      socket.destroy();
      resolve(outcome);
    };
    socket.on('error', (err: NodeJS.ErrnoException) => done(`write failed: ${err.code ?? err.message}`));
    const head = `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\ncontent-type: ${type}\r\ncontent-length: ${body.length}\r\n\r\n`;
    socket.write(head);
    socket.write(body, (err) => {
      if (err) return;
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('utf8');
        const end = received.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(received)?.[1];
        if (end < 0 || length === undefined || received.length < end + 4 + Number(length)) return;
        const code = /"code":"([a-z_]+)"/.exec(received.slice(end))?.[1];
        done(`${received.slice(9, 12)} ${code} ${/x-request-id: req_/.test(received) ? 'with id' : 'no id'}`);
      });
      socket.on('end', () => done(`closed after ${received.length} bytes`));
      socket.resume();
    });
  });
}

describe('413 reaches a client that uploads before it reads', () => {
  it.each([
    ['/v1/chat/completions', (pad: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: pad }] })],
    ['/v1/messages', (pad: string) => ({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [{ role: 'user', content: pad }] })],
    ['/v1/embeddings', (pad: string) => ({ model: 'text-embedding-3-small', input: pad })],
    ['/v1/audio/speech', (pad: string) => ({ model: 'tts-1', voice: 'alloy', input: pad })],
    // Music's own limit follows image_fetch.max_bytes (1 KiB here: 10 base64 images + 1 MiB of text room).
    ['/v1/music', (pad: string) => ({ model: 'tune-3-pro-preview', prompt: 'x', reference_images: [`data:image/png;base64,${pad}`] })],
  ])(`%s: all ${TRIES} tries read the 413 body`, async (path, build) => {
    const body = Buffer.from(JSON.stringify(build('A'.repeat(BIG))));
    const port = Number(new URL(t.url).port);
    const outcomes: Record<string, number> = {};
    for (let batch = 0; batch < TRIES / 10; batch++) {
      for (const r of await Promise.all(Array.from({ length: 10 }, () => uploadThenRead(port, path, t.key, body)))) outcomes[r] = (outcomes[r] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ '413 body_too_large with id': TRIES });
    expect(await t.balance(t.orgId)).toBe(1_000_000);
  });
});

describe('413 on a transcription upload over 25 MB', () => {
  it('reaches a client that uploads the whole form before it reads (3 tries)', async () => {
    const boundary = 'tollgate-test-boundary';
    const file = Buffer.alloc(26 * 1024 * 1024, 0xff);
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.mp3"\r\ncontent-type: audio/mpeg\r\n\r\n`),
      file, Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const port = Number(new URL(t.url).port);
    for (let i = 0; i < 3; i++) {
      expect(await uploadThenRead(port, '/v1/audio/transcriptions', t.key, body, `multipart/form-data; boundary=${boundary}`)).toBe('413 body_too_large with id');
    }
  });
});
