import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST a receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status it answered. */
  status: number;
}

/**
 * A webhook receiver on loopback for the tests: records every POST; a path starting with
 * `/flaky` answers 500 to the first `failures` attempts of each event id, then 200.
 * `down` makes every answer a 503 (a receiver that is away).
 */
export class Receiver {
  readonly got: Received[] = [];
  down = false;
  private readonly server: Server;
  private readonly attempts = new Map<string, number>();

  private constructor(readonly failures: number) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const id = String(req.headers['x-tollgate-event-id']);
        const n = (this.attempts.get(`${req.url}|${id}`) ?? 0) + 1;
        this.attempts.set(`${req.url}|${id}`, n);
        const status = this.down ? 503 : req.url?.startsWith('/flaky') && n <= this.failures ? 500 : 200;
        this.got.push({ path: req.url ?? '', headers: req.headers, body, status });
        res.writeHead(status).end();
      });
    });
  }

  /** `port`: a fixed port (a receiver that comes up where a refused webhook points); 0 for any. */
  static async start(failures = 2, port = 0): Promise<Receiver> {
    const r = new Receiver(failures);
    await new Promise<void>((ok) => r.server.listen(port, '127.0.0.1', ok));
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The bodies answered 2xx on `path`, parsed. */
  delivered(path: string): Array<Record<string, unknown>> {
    return this.got.filter((g) => g.path === path && g.status === 200).map((g) => JSON.parse(g.body) as Record<string, unknown>);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

/** Checks `x-tollgate-signature` as a receiver would: recomputes the HMAC of "t.body" with the secret. */
export function signatureValid(secret: string, g: Received): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(g.headers['x-tollgate-signature']));
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${g.body}`).digest('hex');
  return expected === m[2] && Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
}

/** Polls `cond` every 50 ms for at most `ms`. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}
