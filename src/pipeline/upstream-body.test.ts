import { describe, expect, it } from 'vitest';
import { UpstreamFailure } from '../providers/upstream-failure.js';
import { HIGH_WATER_BYTES, QueuedBody, type BodyFlow } from './upstream-body.js';

/** A controller that records what the body asked of the upstream. */
function flow(): BodyFlow & { paused: boolean; aborted: Error | undefined; pauses: number; resumes: number } {
  const f = {
    paused: false, aborted: undefined as Error | undefined, pauses: 0, resumes: 0,
    pause: () => {
      f.paused = true;
      f.pauses++;
    },
    resume: () => {
      f.paused = false;
      f.resumes++;
    },
    abort: (reason: Error) => {
      f.aborted = reason;
    },
  };
  return f;
}

const kib = (n: number, fill = 'a'): Buffer => Buffer.alloc(n * 1024, fill);

describe('an upstream body', () => {
  it('hands a waiting reader each chunk as it arrives, then the end, and closes', async () => {
    const body = new QueuedBody(flow());
    let closed = 0;
    body.onClose(() => closed++);
    const got: string[] = [];
    const reading = (async () => {
      for await (const chunk of body) got.push(chunk.toString());
    })();
    body.push(Buffer.from('a'));
    await Promise.resolve();
    body.push(Buffer.from('b'));
    body.push(Buffer.from('c'));
    body.end();
    await reading;
    expect(got).toEqual(['a', 'b', 'c']);
    expect(closed).toBe(1);
    body.onClose(() => closed++);
    expect(closed).toBe(2); // already closed: at once
  });

  it('pauses the upstream past 64 KiB queued and resumes it once the reader takes them', async () => {
    const f = flow();
    const body = new QueuedBody(f);
    for (let i = 0; i < 4; i++) body.push(kib(16));
    expect(f.paused).toBe(false); // exactly 64 KiB
    body.push(kib(16));
    expect(f.paused).toBe(true);
    body.push(kib(16)); // a chunk already on its way is still taken, and pauses nothing twice
    expect(f.pauses).toBe(1);
    const it = body[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    expect(f.paused).toBe(true); // 64 KiB left: not below the mark
    await it.next();
    expect(f.paused).toBe(false);
    expect(f.resumes).toBe(1);
    body.end();
    let rest = 0;
    for (let r = await it.next(); r.done !== true; r = await it.next()) rest += r.value.length;
    expect(rest).toBe(3 * 16 * 1024);
    expect(HIGH_WATER_BYTES).toBe(64 * 1024);
  });

  it('reads a whole body as UTF-8 text, a character split between chunks included', async () => {
    const body = new QueuedBody(flow());
    const bytes = Buffer.from('prix: 5 €', 'utf8');
    body.push(bytes.subarray(0, bytes.length - 2));
    body.push(bytes.subarray(bytes.length - 2));
    body.end();
    expect(await body.text()).toBe('prix: 5 €');
  });

  it('leaving a for-await early destroys it and cancels the upstream', async () => {
    const f = flow();
    const body = new QueuedBody(f);
    body.push(Buffer.from('a'));
    body.push(Buffer.from('b'));
    for await (const _chunk of body) break;
    expect(f.aborted).toBeInstanceOf(Error);
    await expect(body.next()).rejects.toThrow(/destroyed/);
  });

  it('gives a waiting reader the upstream failure, and drops what was queued', async () => {
    const body = new QueuedBody(flow());
    const reading = body.text();
    body.push(Buffer.from('part'));
    body.fail(new Error('socket hang up'));
    await expect(reading).rejects.toThrow('socket hang up');
  });

  it('a destroy with a reason is what the waiting reader gets', async () => {
    const f = flow();
    const body = new QueuedBody(f);
    const next = body.next();
    body.destroy(new Error('client gone'));
    await expect(next).rejects.toThrow('client gone');
    expect(f.aborted?.message).toBe('client gone');
  });

  it('destroying a body whose upstream already ended cancels nothing', () => {
    const f = flow();
    const body = new QueuedBody(f);
    body.push(Buffer.from('x'));
    body.end();
    body.destroy();
    expect(f.aborted).toBeUndefined();
  });

  it('dump() drops what is queued, discards the rest and resumes a paused upstream', async () => {
    const f = flow();
    const body = new QueuedBody(f);
    for (let i = 0; i < 5; i++) body.push(kib(16));
    expect(f.paused).toBe(true);
    const dumped = body.dump();
    expect(f.paused).toBe(false);
    body.push(kib(16));
    body.end();
    await dumped;
    expect(f.aborted).toBeUndefined();
  });

  it('dump() cuts a long body instead of reading it all', async () => {
    const f = flow();
    const body = new QueuedBody(f);
    const dumped = body.dump();
    for (let i = 0; i < 3; i++) body.push(kib(64));
    await dumped;
    expect(f.aborted).toBeInstanceOf(Error);
  });

  describe('firstByte', () => {
    it('resolves at the first chunk without taking it', async () => {
      const body = new QueuedBody(flow());
      const first = body.firstByte(1000, new AbortController().signal);
      body.push(Buffer.from('data: x\n\n'));
      await first;
      body.end();
      expect(await body.text()).toBe('data: x\n\n');
    });

    it('resolves at once when a chunk is already there, and for an empty body at its end', async () => {
      const a = new QueuedBody(flow());
      a.push(Buffer.from('x'));
      await a.firstByte(1, new AbortController().signal);
      const b = new QueuedBody(flow());
      const first = b.firstByte(1000, new AbortController().signal);
      b.end();
      await first;
    });

    it('a silent body times out, is destroyed, and names the limit', async () => {
      const f = flow();
      const body = new QueuedBody(f);
      const err = await body.firstByte(5, new AbortController().signal, 30).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamFailure);
      expect(err).toMatchObject({ kind: 'timeout', limitMs: 30, message: 'no first byte within 30 ms' });
      expect(f.aborted).toBeInstanceOf(Error);
    });

    it('a body that breaks first is a connection error; the signal, an abort', async () => {
      const broken = new QueuedBody(flow());
      const first = broken.firstByte(1000, new AbortController().signal);
      broken.fail(new Error('reset'));
      await expect(first).rejects.toMatchObject({ kind: 'connect_error', message: 'the response body broke: reset' });
      const ac = new AbortController();
      const f = flow();
      const left = new QueuedBody(f);
      const waiting = left.firstByte(1000, ac.signal);
      ac.abort();
      await expect(waiting).rejects.toMatchObject({ kind: 'aborted' });
      expect(f.aborted).toBeInstanceOf(Error);
    });
  });
});
