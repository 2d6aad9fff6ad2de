import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Config } from '../config/gateway-config.js';
import type { ByteRange, ObjectBody, ObjectStore } from './object-store.js';

/** ObjectStore over the S3 protocol (AWS, MinIO, R2, s3rver…) with the official SDK. */
export class S3ObjectStore implements ObjectStore {
  private readonly client: S3Client;

  constructor(private readonly cfg: S3Config) {
    this.client = new S3Client({
      region: cfg.region,
      endpoint: cfg.endpoint,
      forcePathStyle: cfg.forcePathStyle,
      credentials: cfg.accessKeyId && cfg.secretAccessKey ? { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey } : undefined,
      maxAttempts: 2,
    });
  }

  async put(key: string, bytes: Buffer, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.cfg.bucket, Key: key, Body: bytes, ContentType: contentType, ContentLength: bytes.length }));
  }

  async get(key: string, range?: ByteRange): Promise<ObjectBody> {
    const out = await this.client.send(new GetObjectCommand({
      Bucket: this.cfg.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined,
    }));
    return { stream: out.Body as Readable, length: out.ContentLength ?? 0, contentType: out.ContentType };
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.cfg.bucket, Key: key }));
  }

  presignGet(key: string, ttlSeconds: number): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.cfg.bucket, Key: key }), { expiresIn: ttlSeconds });
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.cfg.bucket }));
  }

  close(): void {
    this.client.destroy();
  }
}
