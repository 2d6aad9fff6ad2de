import { settingsBlock } from '../../src/sdk.js';
/** `settings.images` in gateway.yaml. Every field has a default; the block may be omitted. */
export interface ImagesSettings {
  /** Hours a hosted image (a `url` response) is kept before the sweep deletes it. */
  url_retention_hours: number;
  sweep_interval_ms: number;
}

export const imagesSettingsSchema = settingsBlock({
  url_retention_hours: { type: 'integer', minimum: 1, default: 24 },
  sweep_interval_ms: { type: 'integer', minimum: 1000, default: 300_000 },
});
