import type { FastifySchemaValidationError } from 'fastify';

/*
 * What a refused field says to a person (issue 35): the console shows the message under
 * the field, so it reads as words — "Requests per minute must be at most 1,000,000,000",
 * "Allowed models, item 2, must not be empty" — while `param` keeps the API path
 * (`limits.rpm`, `allowed_models[1]`) for programs.
 */

/** Names people know the fields by (the console's labels). */
const LABELS: Readonly<Record<string, string>> = {
  name: 'Name', email: 'Email', password: 'Password', role: 'Role', credits_usd: 'Credits', retention: 'Retention',
  allowed_models: 'Allowed models', expires_at: 'Expiry',
  'limits.rpm': 'Requests per minute', 'limits.tpm': 'Tokens per minute', 'limits.max_concurrent': 'Concurrent requests',
  'limits.budget_usd': 'Budget', 'limits.budget_period': 'Budget period', default_max_tokens: 'Default max_tokens',
  unsupported_params: 'Unsupported parameters policy', amount_usd: 'Amount', note: 'Note',
};

/** `allowed_models[1]` → `Allowed models, item 2,`; an unknown path in words (`logs filter` for `logs_filter`). */
export function fieldLabel(path: string): string {
  const item = /^(.*)\[(\d+)\]$/.exec(path);
  if (item?.[1] !== undefined && item[2] !== undefined) return `${fieldLabel(item[1])}, item ${Number(item[2]) + 1},`;
  const known = LABELS[path];
  if (known) return known;
  const words = path.replace(/\[(\d+)\]/g, (_m, n: string) => ` item ${Number(n) + 1}`).replace(/[._]/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const num = (n: unknown): string => (typeof n === 'number' ? n.toLocaleString('en-US') : String(n));
const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: 'text', integer: 'a whole number', number: 'a number', boolean: 'true or false', array: 'a list', object: 'an object', null: 'null',
};
const FORMAT_WORDS: Readonly<Record<string, string>> = {
  'date-time': 'a date-time (ISO 8601, e.g. 2027-01-31T12:00:00Z)', email: 'an email address', uri: 'a URL', date: 'a date (2027-01-31)',
};

/** An ajv error's message in words, without the field. */
export function ruleMessage(e: Pick<FastifySchemaValidationError, 'keyword' | 'params' | 'message'>): string {
  const p = (e.params ?? {}) as Record<string, unknown>;
  switch (e.keyword) {
    case 'minLength': return p.limit === 1 ? 'must not be empty' : `must be at least ${num(p.limit)} characters`;
    case 'maxLength': return `must be at most ${num(p.limit)} characters`;
    case 'minimum': return `must be at least ${num(p.limit)}`;
    case 'maximum': return `must be at most ${num(p.limit)}`;
    case 'exclusiveMinimum': return `must be more than ${num(p.limit)}`;
    case 'minItems': return p.limit === 1 ? 'must not be an empty list' : `must list at least ${num(p.limit)}`;
    case 'maxItems': return `must list at most ${num(p.limit)}`;
    case 'type': return `must be ${String(p.type).split(',').map((t) => TYPE_WORDS[t] ?? t).join(' or ')}`;
    case 'format': return `must be ${FORMAT_WORDS[String(p.format)] ?? `in the ${String(p.format)} format`}`;
    case 'enum': return `must be one of ${(p.allowedValues as unknown[] | undefined)?.map((v) => JSON.stringify(v)).join(', ') ?? 'the listed values'}`;
    case 'pattern': return p.pattern === '\\S' ? 'must not be blank' : `must match the pattern ${String(p.pattern)}`;
    default: return e.message ?? 'is invalid';
  }
}
