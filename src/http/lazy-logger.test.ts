import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { lazyChildLogger } from './lazy-logger.js';

/** fastify's own root logger (pino) at `level`, writing into `lines`. */
function logger(level: string): { root: FastifyBaseLogger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { root: Fastify({ logger: { level, stream } }).log, lines };
}

describe('lazyChildLogger', () => {
  it('writes the lines an eager child writes, with the request id bound', () => {
    const { root, lines } = logger('info');
    const lazy = lazyChildLogger(root, { reqId: 'req_1' }, {});
    const eager = root.child({ reqId: 'req_1' }, {});
    lazy.info({ res: { statusCode: 200 } }, 'request completed');
    eager.info({ res: { statusCode: 200 } }, 'request completed');
    lazy.error({ code: 'internal_error' }, 'unexpected error');
    eager.error({ code: 'internal_error' }, 'unexpected error');
    lazy.child({ part: 'x' }).warn('nested');
    const strip = ({ time: _t, ...rest }: Record<string, unknown>) => rest;
    expect(lines.map(strip)).toEqual([
      { level: 30, pid: process.pid, hostname: expect.any(String), reqId: 'req_1', res: { statusCode: 200 }, msg: 'request completed' },
      { level: 30, pid: process.pid, hostname: expect.any(String), reqId: 'req_1', res: { statusCode: 200 }, msg: 'request completed' },
      { level: 50, pid: process.pid, hostname: expect.any(String), reqId: 'req_1', code: 'internal_error', msg: 'unexpected error' },
      { level: 50, pid: process.pid, hostname: expect.any(String), reqId: 'req_1', code: 'internal_error', msg: 'unexpected error' },
      { level: 40, pid: process.pid, hostname: expect.any(String), reqId: 'req_1', part: 'x', msg: 'nested' },
    ]);
  });

  it('builds no child for lines below the level, and one for the first line written', () => {
    const { root, lines } = logger('warn');
    let children = 0;
    const counting = Object.create(root, { child: { value: (...a: Parameters<FastifyBaseLogger['child']>) => (children++, root.child(...a)) } }) as FastifyBaseLogger;
    const lazy = lazyChildLogger(counting, { reqId: 'req_2' }, {});
    lazy.info('incoming request');
    lazy.debug('detail');
    expect(children).toBe(0);
    expect(lazy.level).toBe('warn');
    lazy.warn('stalled');
    lazy.error('cut');
    expect(children).toBe(1);
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([['req_2', 'stalled'], ['req_2', 'cut']]);
  });

  it('applies a route\'s own options at once (an eager child)', () => {
    const { root, lines } = logger('warn');
    const child = lazyChildLogger(root, { reqId: 'req_3' }, { level: 'info' });
    child.info('shown');
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([['req_3', 'shown']]);
  });
});
