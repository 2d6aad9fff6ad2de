import { settingsBlock } from '../../src/sdk.js';
/** JSON Schema of `settings.chat` in gateway.yaml; every field has a default, the block may be omitted. */
export const chatSettingsSchema = settingsBlock({
  unsupported_params: {
    enum: ['error', 'drop', 'translate'],
    description: 'Overrides every provider and model unsupported_params (docs/chat.md, Unsupported parameters); a project\'s own unsupported_params wins over it. Unset: each model follows its YAML (default translate).',
  },
  default_max_tokens: {
    type: ['integer', 'null'],
    minimum: 1,
    maximum: 1_000_000,
    default: null,
    description: 'Output bound (max_tokens) sent upstream, and reserved for, when a chat request names none in its format; a project\'s default_max_tokens wins over it. null (the default): off, a Claude model without max_tokens gets Anthropic\'s 400.',
  },
  responses: {
    type: 'object',
    additionalProperties: false,
    default: {},
    description: 'Responses API responses the gateway stores (store: true, the default) for previous_response_id, item_reference and GET /v1/responses/{id}.',
    properties: {
      retention_days: { type: 'integer', minimum: 1, default: 30 },
      max_per_org: { type: 'integer', minimum: 1, default: 10_000 },
      max_stored_bytes: { type: 'integer', minimum: 1024, default: 16 * 1024 * 1024 },
      sweep_interval_ms: { type: 'integer', minimum: 1000, default: 600_000 },
    },
  },
});
