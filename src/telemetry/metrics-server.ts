import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewayMetrics } from './metrics.js';

/**
 * The Prometheus listener: `GET /metrics` on its own host and port, apart from the
 * public API (no key, so it belongs on a private interface).
 */
export class MetricsServer {
  private server: Server | undefined;

  constructor(private readonly metrics: GatewayMetrics, private readonly host: string) {}

  /** Starts listening; returns the scrape URL (`http://host:port/metrics`). */
  async listen(port: number): Promise<string> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: the metrics are at GET /metrics\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
        return;
      }
      this.metrics.scrape().then(({ contentType, body }) => {
        res.writeHead(200, { 'content-type': contentType }).end(req.method === 'HEAD' ? undefined : body);
      }, (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`metrics collection failed: ${(err as Error).message}\n`);
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new Error(`the metrics listener (metrics.host, metrics.port in gateway.yaml) cannot listen on ${this.host}:${port}: ${err.message}`)));
      server.listen(port, this.host, () => {
        server.removeAllListeners('error');
        resolve();
      });
    });
    const bound = (server.address() as AddressInfo).port;
    return `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${bound}/metrics`;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
