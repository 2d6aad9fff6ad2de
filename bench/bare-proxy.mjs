// The floor of the benchmark: a bare pass-through proxy (no auth, no billing, no log)
// in front of the simulator, doing what any proxy must: parse HTTP, forward, pipe back.
// Usage: node bench/bare-proxy.mjs --upstream http://127.0.0.1:8790/openai [--port 0]
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values: args } = parseArgs({ options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' } } });
const upstream = new URL(args.upstream);
const prefix = upstream.pathname.replace(/\/$/, '');
const pool = new Pool(upstream.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade', 'te', 'trailer', 'proxy-connection']);
const forwardable = (headers) => Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k)));

const server = createServer({ noDelay: true }, async (req, res) => {
  try {
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : req;
    const up = await pool.request({ method: req.method, path: prefix + req.url, headers: forwardable(req.headers), body });
    res.writeHead(up.statusCode, forwardable(up.headers));
    // .pipe, not stream.pipeline: pipeline aborts an AbortController (a DOMException) per request.
    up.body.on('error', () => res.destroy()).pipe(res);
    res.once('close', () => up.body.destroy());
  } catch (err) {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `bare proxy: ${err.message}`, type: 'upstream_error' } }));
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(args.port), '127.0.0.1', () => console.log(`bare proxy listening on http://127.0.0.1:${server.address().port} -> ${upstream.href}`));
process.on('SIGTERM', () => {
  server.close(() => void pool.close().then(() => process.exit(0)));
  server.closeAllConnections();
});
