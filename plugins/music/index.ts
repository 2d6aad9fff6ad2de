import { type Exchange, type GatewayPlugin, logIdOf, type Org, Semaphore } from '../../src/sdk.js';
import { serveContent } from './content.js';
import { musicHandler } from './generate.js';
import { listHistory } from './history.js';
import { ImageFetcher } from './images.js';
import { musicSettingsSchema, type MusicSettings } from './settings.js';
import { retentionSweep } from './sweep.js';
import { musicBodyLimit } from './validate.js';

/**
 * Music generation (spec §2.1, §3, §4.1–4.3): `POST /v1/music`, the history, the
 * hosted content, and the retention sweep. The upstream mapping (Lyria over Gemini
 * generateContent) is declared in the provider YAML, not here.
 */
export const musicPlugin: GatewayPlugin = {
  name: 'music',
  settingsSchema: musicSettingsSchema,
  modalities: {
    music: {
      requiredPricing: ['audio_music_per_generation'],
      dialects: [],
      checkEndpoint(endpoint) {
        if (endpoint.retry.attempts !== 1 || endpoint.fallback) return 'music endpoints make exactly one upstream call: set retry.attempts to 1 and fallback to false';
        if (!endpoint.transforms.request || !endpoint.transforms.response) return 'music endpoints need request and response transforms (response.audio, response.text, response.blocked)';
        return undefined;
      },
    },
  },
  register(api) {
    const settings = api.settings as MusicSettings;
    const images = new ImageFetcher(settings.image_fetch);
    api.onClose(() => images.close());
    const deps = { settings, store: api.store, objectStore: api.objectStore, images, now: () => api.now(), deliveries: new Semaphore(settings.max_concurrent_deliveries) };
    api.modelRoute({
      method: 'POST', url: '/v1/music', bodyLimit: musicBodyLimit(settings.image_fetch.max_bytes),
      handler: musicHandler({ ...deps, warn: (msg, data) => api.log.warn(data, msg) }),
    });
    api.route({ method: 'GET', url: '/v1/music', modality: 'music', auth: true, handler: (ex, req, reply) => listHistory(api.store, ex.org?.id, req, reply) });
    api.route({ method: 'GET', url: '/v1/music/:id/content', modality: 'music', auth: true, handler: (ex, req, reply) => serveContent(deps, ex.org?.id, req, reply) });
    // The same history and playback for the web console, scoped by the core to the signed-in user's org.
    api.orgRoute({
      method: 'GET', url: '/music', role: 'member', tag: 'music', summary: 'Music history of the org (as GET /v1/music), newest first; audio.url plays through the console route.',
      schema: { querystring: { type: 'object', properties: { limit: { type: 'string', pattern: '^[0-9]{1,3}$', description: 'Tracks, 1–100 (default 30)' } }, additionalProperties: false } },
      handler: (ctx, req, reply) => listHistory(api.store, ctx.org.id, req, reply, (id) => `/api/v1/orgs/${ctx.org.id}/music/${id}/content`),
    });
    api.orgRoute({
      method: 'GET', url: '/music/:id/content', role: 'member', tag: 'music', summary: 'A hosted track of the org (as GET /v1/music/:id/content): Range, 404 for another org\'s, 410 once swept.',
      handler: (ctx, req, reply) => serveContent(deps, ctx.org.id, req, reply),
    });
    api.task({ name: 'music-retention-sweep', intervalMs: settings.sweep_interval_ms, run: retentionSweep(deps) });
    // Failed generations that reached the provider belong in the history too (error: true, no audio).
    const recordFailure = async (ex: Exchange, org: Org, model: string, errorCode: string): Promise<void> => {
      if (await api.store.media.get(ex.id)) return;
      await api.store.media.put({
        id: logIdOf(ex.id), requestId: ex.id, orgId: org.id, modality: 'music', model,
        usedModel: ex.route?.model.upstreamId ?? null, usedProvider: ex.route?.provider.id ?? null, prompt: ex.prompt ?? null,
        text: null, storage: 'none', objectKey: null, bytes: 0, mimeType: 'audio/mpeg', costMicros: 0, error: true,
        errorCode, createdAt: ex.startedAt, expiresAt: null, cleanedAt: null, meta: { response_format: 'mp3' },
      });
    };
    // Other requests answer at once (nothing to await).
    api.hook('post-billing', (ex) => {
      if (ex.modality !== 'music' || !ex.errorCode || !ex.org || !ex.requestedModel || ex.attempts.length === 0) return;
      return recordFailure(ex, ex.org, ex.requestedModel, ex.errorCode);
    });
  },
};
