import { describe, expect, it } from 'vitest';
import { QueuedBody, type BodyFlow } from '../pipeline/upstream-body.js';
import { captureBody } from './capture.js';

const FLOW: BodyFlow = { pause: () => undefined, resume: () => undefined, abort: () => undefined };

/** An upstream body that delivers `chunks`, then ends. */
function upstream(chunks: string[]): QueuedBody {
  const body = new QueuedBody(FLOW);
  for (const c of chunks) body.push(Buffer.from(c));
  body.end();
  return body;
}

describe("the cache's copy of an upstream body", () => {
  it('passes every chunk through as read and keeps the same bytes', async () => {
    const captured = captureBody(upstream(['data: a\n\n', 'data: b\n\n']), 1024);
    const read: string[] = [];
    for await (const chunk of captured.body) read.push(chunk.toString());
    expect(read).toEqual(['data: a\n\n', 'data: b\n\n']);
    expect(captured.bytes()?.toString()).toBe('data: a\n\ndata: b\n\n');
  });

  it('keeps no copy past its cap, of a body dumped or destroyed, or of one that broke', async () => {
    const big = captureBody(upstream(['x'.repeat(600), 'y'.repeat(600)]), 1000);
    expect(await big.body.text()).toHaveLength(1200);
    expect(big.bytes()).toBeUndefined();

    const dumped = captureBody(upstream(['a', 'b']), 1000);
    await dumped.body.dump();
    expect(dumped.bytes()).toBeUndefined();

    const destroyed = captureBody(upstream(['a', 'b']), 1000);
    for await (const _ of destroyed.body) break; // leaving the loop early destroys it
    expect(destroyed.bytes()).toBeUndefined();

    const source = new QueuedBody(FLOW);
    const broken = captureBody(source, 1000);
    source.push(Buffer.from('data: a\n\n'));
    expect((await broken.body[Symbol.asyncIterator]().next()).value?.toString()).toBe('data: a\n\n');
    source.fail(new Error('socket hang up'));
    await expect(broken.body.text()).rejects.toThrow('socket hang up');
    expect(broken.bytes()).toBeUndefined();
  });
});
