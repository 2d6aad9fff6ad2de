import { deleteExpiredMedia, type GatewayPlugin, newId, underLease } from '../../src/sdk.js';
import { serveImage } from './content.js';
import { imagesHandler } from './generate.js';
import { imagesSettingsSchema, type ImagesSettings } from './settings.js';

/**
 * Image generation (`POST /v1/images/generations`, OpenAI's format): OpenAI's
 * gpt-image-1 and DALL·E as written, any other vendor by a YAML request/response
 * transform (Google Imagen over :predict). Priced as the provider bills — per token
 * (gpt-image-1, from its usage) or per image by quality and size (pricing_variants).
 * `b64_json` replies always; `url` replies when object storage is configured: the
 * images are hosted for `url_retention_hours`, then deleted by a sweep.
 */
export const imagesPlugin: GatewayPlugin = {
  name: 'images',
  settingsSchema: imagesSettingsSchema,
  modalities: {
    image: {
      requiredPricing: [],
      dialects: [],
      checkModel(model) {
        const p = model.pricePicos;
        if (p.image === undefined && (p.prompt === undefined || p.completion === undefined)) return 'an image model must price image (per image) or prompt and completion (per token)';
        return undefined;
      },
    },
  },
  register(api) {
    const settings = api.settings as ImagesSettings;
    const deps = { settings, store: api.store, objectStore: api.objectStore, now: () => api.now() };
    api.modelRoute({ method: 'POST', url: '/v1/images/generations', handler: imagesHandler(deps) });
    api.route({ method: 'GET', url: '/v1/images/:id/content', modality: 'image', auth: true, handler: (ex, req, reply) => serveImage(deps, ex, req, reply) });
    const holder = newId('sweeper');
    api.task({
      name: 'images-retention-sweep',
      intervalMs: settings.sweep_interval_ms,
      run: () => underLease(api.store, 'images-retention-sweep', holder, settings.sweep_interval_ms * 2, deps.now, async (signal) => {
        const { deleted, failed } = await deleteExpiredMedia(deps, 'image', { signal });
        return `deleted ${deleted} expired image(s)${failed ? `, ${failed} failed (retried next run)` : ''}`;
      }),
    });
  },
};
