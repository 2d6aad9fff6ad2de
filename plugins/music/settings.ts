import { settingsBlock } from '../../src/sdk.js';
/** `settings.music` in gateway.yaml. Every field has a default; the block may be omitted. */
export interface MusicSettings {
  /** How long to wait for the upstream (spec: 4 minutes), then 504. */
  timeout_ms: number;
  /** Days a hosted track is kept before the sweep deletes it (spec: 30). */
  retention_days: number;
  sweep_interval_ms: number;
  /** When set, prompt and lyrics text older than this many days is blanked too (off by default). */
  log_text_retention_days?: number;
  /** `proxy` streams the object through the gateway; `redirect` answers 302 to a presigned URL. */
  delivery: 'proxy' | 'redirect';
  presign_ttl_seconds: number;
  /** Finished tracks decoded, uploaded and sent at once (each needs ~30 MB briefly); the rest wait their turn. */
  max_concurrent_deliveries: number;
  image_fetch: {
    timeout_ms: number;
    max_bytes: number;
    /** Hosts (names or IP addresses) that may be fetched even though they resolve to private addresses. */
    allow_hosts: string[];
    /** Allow plain http:// image URLs (tests and private deployments); https only by default. */
    allow_http: boolean;
  };
}

const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

export const musicSettingsSchema = settingsBlock({
  timeout_ms: { type: 'integer', minimum: 1, default: 240_000 },
  retention_days: { type: 'integer', minimum: 1, default: 30 },
  sweep_interval_ms: { type: 'integer', minimum: 1000, default: 300_000 },
  log_text_retention_days: { type: 'integer', minimum: 1 },
  delivery: { enum: ['proxy', 'redirect'], default: 'proxy' },
  presign_ttl_seconds: { type: 'integer', minimum: 1, maximum: 604_800, default: 300 },
  max_concurrent_deliveries: { type: 'integer', minimum: 1, default: 3 },
  image_fetch: {
    type: 'object',
    additionalProperties: false,
    default: {},
    properties: {
      timeout_ms: { type: 'integer', minimum: 1, default: 10_000 },
      max_bytes: { type: 'integer', minimum: 1, maximum: MAX_IMAGE_BYTES, default: MAX_IMAGE_BYTES },
      allow_hosts: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
      allow_http: { type: 'boolean', default: false },
    },
  },
});
