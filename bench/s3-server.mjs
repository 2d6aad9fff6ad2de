// An S3-protocol server (s3rver) for the music scenario, in its own process so its
// CPU and memory are not counted against the gateway.
// Usage: node bench/s3-server.mjs --dir /tmp/x --bucket tollgate-music [--port 0]
import { parseArgs } from 'node:util';
import S3rver from 's3rver';

const { values: args } = parseArgs({
  options: { dir: { type: 'string' }, bucket: { type: 'string', default: 'tollgate-music' }, port: { type: 'string', default: '0' } },
});
const s3 = new S3rver({ address: '127.0.0.1', port: Number(args.port), silent: true, directory: args.dir, configureBuckets: [{ name: args.bucket }] });
const { port } = await s3.run();
console.log(`s3rver listening on http://127.0.0.1:${port} (bucket ${args.bucket})`);
process.on('SIGTERM', () => void s3.close().then(() => process.exit(0)));
