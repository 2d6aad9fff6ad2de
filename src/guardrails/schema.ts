import { Ajv } from 'ajv';
import { webhookUrlProblem } from '../lib/ssrf.js';
import { invalidField } from '../lib/errors.js';
import { compileMatcher, MAX_PATTERN_CHARS } from './matchers.js';
import { GUARDRAIL_STAGES, PII_ENTITIES, type BodyLogging, type GuardrailSpec } from '../model/guardrails.js';

type JsonSchema = Record<string, unknown>;

/** The most guardrails a project may have, and the most words or patterns one may hold. */
const MAX_GUARDRAILS = 20;
const MAX_ITEMS = 1000;

const common: Record<string, JsonSchema> = {
  name: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$', description: 'Name in verdicts, metrics and errors (default: the type)' },
  stages: { type: 'array', items: { type: 'string', enum: [...GUARDRAIL_STAGES] }, minItems: 1, uniqueItems: true, description: 'Default ["pre-upstream"]' },
};
const ACTION = { type: 'string', enum: ['mask', 'block'] };
const LABEL = { type: 'string', minLength: 1, maxLength: 32, pattern: '^[A-Za-z][A-Za-z0-9_]*$' };
const variant = (type: string, props: Record<string, JsonSchema>, required: string[]): JsonSchema => ({
  type: 'object', additionalProperties: false, required: ['type', ...required],
  properties: { type: { type: 'string', enum: [type] }, ...common, ...props },
});

/** One guardrail (docs/guardrails.md), by its `type`. */
const GUARDRAIL_INPUT: JsonSchema = {
  description: 'A guardrail: pii, regex, deny_list, max_input_tokens, max_input_chars, webhook or moderation (docs/guardrails.md)',
  oneOf: [
    variant('pii', { action: ACTION, entities: { type: 'array', items: { type: 'string', enum: [...PII_ENTITIES] }, minItems: 1, uniqueItems: true }, restore: { type: 'boolean' } }, ['action']),
    variant('regex', { action: ACTION, patterns: { type: 'array', items: { type: 'string', minLength: 1, maxLength: MAX_PATTERN_CHARS }, minItems: 1, maxItems: MAX_ITEMS }, label: LABEL }, ['action', 'patterns']),
    variant('deny_list', {
      action: ACTION, words: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, minItems: 1, maxItems: MAX_ITEMS },
      case_sensitive: { type: 'boolean' }, label: LABEL,
    }, ['action', 'words']),
    variant('max_input_tokens', { limit: { type: 'integer', minimum: 1 } }, ['limit']),
    variant('max_input_chars', { limit: { type: 'integer', minimum: 1 } }, ['limit']),
    variant('webhook', {
      url: { type: 'string', pattern: '^https?://', maxLength: 2000 }, timeout_ms: { type: 'integer', minimum: 1, maximum: 30_000 },
      on_error: { type: 'string', enum: ['allow', 'block'] },
    }, ['url']),
    variant('moderation', { model: { type: 'string', minLength: 1, maxLength: 200 }, categories: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 } }, []),
  ],
};

export const GUARDRAILS_INPUT: JsonSchema = {
  type: 'array', items: GUARDRAIL_INPUT, maxItems: MAX_GUARDRAILS,
  description: 'The project\'s guardrails, run in order (docs/guardrails.md); [] removes them all',
};

export const BODY_LOGGING_INPUT: JsonSchema = {
  type: ['object', 'null'], additionalProperties: false, required: ['mode'],
  description: 'Request and response bodies in the log (docs/guardrails.md); null: off',
  properties: {
    mode: { type: 'string', enum: ['off', 'on', 'redacted'] },
    retention_days: { type: 'integer', minimum: 1, maximum: 3650, description: 'Default 30' },
    max_bytes: { type: 'integer', minimum: 256, maximum: 16 * 1024 * 1024, description: 'Each body is cut here, with a marker (default 65536)' },
  },
};

/** Views (responses): the guardrails and body logging as stored. */
export const GUARDRAILS_VIEW: JsonSchema = { type: 'array', items: { type: 'object', additionalProperties: true }, description: 'The project\'s guardrails, in order (docs/guardrails.md)' };
export const BODY_LOGGING_VIEW: JsonSchema = {
  type: 'object', additionalProperties: false, required: ['mode', 'retention_days', 'max_bytes'],
  properties: { mode: { type: 'string', enum: ['off', 'on', 'redacted'] }, retention_days: { type: 'integer' }, max_bytes: { type: 'integer' } },
};
export const VERDICTS_VIEW: JsonSchema = {
  type: 'array', description: 'What each guardrail decided (never the matched values)',
  items: {
    type: 'object', additionalProperties: false, required: ['guardrail', 'stage', 'action', 'categories', 'count'],
    properties: { guardrail: { type: 'string' }, stage: { type: 'string' }, action: { type: 'string' }, categories: { type: 'array', items: { type: 'string' } }, count: { type: 'integer' } },
  },
};

/** What the schema cannot check: every regex compiles, and no webhook points inside unless allowed (a 400 naming it otherwise). */
export async function checkGuardrails(specs: readonly GuardrailSpec[], allowPrivateUrls: boolean): Promise<void> {
  for (const [i, g] of specs.entries()) {
    try {
      compileMatcher(g);
    } catch (err) {
      throw invalidField(`guardrails[${i}]`, `guardrails[${i}]: ${(err as Error).message}`);
    }
    const problem = g.type === 'webhook' ? await webhookUrlProblem(g.url, allowPrivateUrls) : undefined;
    if (problem) throw invalidField(`guardrails[${i}].url`, `guardrails[${i}].url ${problem}`);
  }
}

/**
 * Guardrails from a JSON text (the CLI's `--guardrails FILE`), checked as the management
 * API checks them; throws an Error saying what is wrong.
 */
export async function parseGuardrails(text: string, allowPrivateUrls: boolean): Promise<GuardrailSpec[]> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`the guardrails are not JSON: ${(err as Error).message}`);
  }
  const validate = new Ajv({ allErrors: false, strict: false, allowUnionTypes: true }).compile(GUARDRAILS_INPUT);
  if (!validate(value)) {
    const e = validate.errors?.[0];
    throw new Error(`the guardrails are not valid: ${e?.instancePath || '/'} ${e?.message ?? ''} (docs/guardrails.md)`);
  }
  const specs = value as GuardrailSpec[];
  await checkGuardrails(specs, allowPrivateUrls);
  return specs;
}

/** A body_logging setting from its parts (the CLI's flags): the defaults for what is left out. */
export function bodyLoggingOf(mode: BodyLogging['mode'], retentionDays?: number, maxBytes?: number): BodyLogging {
  return { mode, retention_days: retentionDays ?? 30, max_bytes: maxBytes ?? 65_536 };
}
