// A local OTLP/HTTP trace sink for the benchmark: accepts JSON exports at POST /v1/traces,
// counts their spans (in all, and request spans apart), and answers GET /count. It stands in for an OpenTelemetry collector.
// Usage: node bench/otlp-sink.mjs [--port 0]
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({ options: { port: { type: 'string', default: '0' } } });
let spans = 0;
/** Spans of kind SERVER: one per request (the others are its upstream attempts). */
let requestSpans = 0;
let exports = 0;
let bad = 0;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ spans, requestSpans, exports, bad }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) {
          for (const span of ss.spans ?? []) {
            spans++;
            if (span.kind === 2) requestSpans++;
          }
        }
      }
      exports++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    } catch {
      bad++;
      res.writeHead(400).end();
    }
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(args.port), '127.0.0.1', () => console.log(`otlp sink listening on http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
