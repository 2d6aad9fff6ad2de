import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** A real S3-protocol server (s3rver) on an ephemeral loopback port, with one bucket. */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  client: S3Client;
  /** gateway.yaml `storage.s3` block for this server. */
  config: Record<string, unknown>;
  keys(): Promise<string[]>;
  exists(key: string): Promise<boolean>;
  object(key: string): Promise<Buffer>;
  close(): Promise<void>;
}

export async function startS3(bucket = 'tollgate-music', port = 0): Promise<TestS3> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-s3-'));
  const server = new S3rver({ port, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: bucket, configs: [] }] });
  const addr = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${addr.port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  return {
    endpoint, bucket, client,
    config: { bucket, endpoint, region: 'us-east-1', access_key_id: 'S3RVER', secret_access_key: 'S3RVER', force_path_style: true },
    async keys() {
      const out = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      return (out.Contents ?? []).map((o) => o.Key ?? '');
    },
    async exists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch {
        return false;
      }
    },
    async object(key) {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await out.Body!.transformToByteArray());
    },
    async close() {
      client.destroy();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** True when the bytes start like an MP3: an ID3v2 tag or an MPEG audio frame sync. */
export function looksLikeMp3(bytes: Buffer): boolean {
  if (bytes.subarray(0, 3).toString('latin1') === 'ID3') return true;
  return bytes.length > 1 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0;
}
