/**
 * A project's guardrails and body logging (docs/guardrails.md), as stored on the project
 * and set through `PATCH /api/v1/orgs/:org/projects/:project`. A guardrail sees the text
 * of a request (and of its reply), never a client format: each modality plugin lists its
 * text through `ModalityHandler.texts` (src/pipeline/plugin.ts TextSlot).
 */

/** The entities the `pii` guardrail detects (pii.ts). */
export const PII_ENTITIES = ['email', 'phone', 'card', 'iban', 'ssn', 'ip', 'secret'] as const;
export type PiiEntity = (typeof PII_ENTITIES)[number];

/** Where a guardrail runs: on the request before the upstream sees it, on the reply before the client does. */
export const GUARDRAIL_STAGES = ['pre-upstream', 'post-upstream'] as const;
export type GuardrailStage = (typeof GUARDRAIL_STAGES)[number];

export type MatchAction = 'mask' | 'block';

interface Common {
  /** The name in verdicts, metrics and errors; the type when absent. */
  name?: string;
  /** Default `['pre-upstream']`. */
  stages?: GuardrailStage[];
}

export interface PiiGuardrail extends Common {
  type: 'pii';
  action: MatchAction;
  /** Default: every entity. */
  entities?: PiiEntity[];
  /** Put the masked values back in the reply where the model repeats a placeholder. */
  restore?: boolean;
}

export interface RegexGuardrail extends Common {
  type: 'regex';
  action: MatchAction;
  patterns: string[];
  /** The category in verdicts and the placeholder's name (`[LABEL_1]`); default `REGEX`. */
  label?: string;
}

export interface DenyListGuardrail extends Common {
  type: 'deny_list';
  action: MatchAction;
  words: string[];
  case_sensitive?: boolean;
  label?: string;
}

export interface MaxInputGuardrail extends Common {
  type: 'max_input_tokens' | 'max_input_chars';
  limit: number;
}

export interface WebhookGuardrail extends Common {
  type: 'webhook';
  url: string;
  /** Default 2000 ms. */
  timeout_ms?: number;
  /** What a webhook that fails, times out or answers nonsense means; default `block`. */
  on_error?: 'allow' | 'block';
}

export interface ModerationGuardrail extends Common {
  type: 'moderation';
  /** A model of the `moderation` modality in the gateway's catalogue; default `omni-moderation-latest`. */
  model?: string;
  /** Flagged categories that block; default: any flagged category. */
  categories?: string[];
}

export type GuardrailSpec = PiiGuardrail | RegexGuardrail | DenyListGuardrail | MaxInputGuardrail | WebhookGuardrail | ModerationGuardrail;

/** `body_logging` of a project: off by default. */
export interface BodyLogging {
  mode: 'off' | 'on' | 'redacted';
  /** Bodies older than this are deleted by the `request-bodies-retention` task (the log row stays). */
  retention_days: number;
  /** Each body (request, response) is cut at this many bytes, with a marker. */
  max_bytes: number;
}

export const DEFAULT_BODY_LOGGING: BodyLogging = { mode: 'off', retention_days: 30, max_bytes: 65_536 };

/** What one guardrail decided about one request: kept in the log row. Never the matched values. */
export interface Verdict {
  guardrail: string;
  stage: GuardrailStage;
  /** `allow` (nothing found), `mask`, `block`, `rewrite` (a webhook's new text), `error` (a webhook or moderation call that failed and `on_error: allow`). */
  action: 'allow' | 'mask' | 'block' | 'rewrite' | 'error';
  categories: string[];
  /** How many matches. */
  count: number;
}

/** The name a guardrail goes by. */
export const nameOf = (g: GuardrailSpec): string => g.name ?? g.type;
export const stagesOf = (g: GuardrailSpec): readonly GuardrailStage[] => g.stages ?? ['pre-upstream'];

/** A request's bodies as stored beside its log row (`request_bodies`, never in the log list's row). */
export interface StoredBodies {
  requestId: string;
  orgId: string;
  createdAt: number;
  /** When the sweep deletes them (ms). */
  expiresAt: number;
  request: string | null;
  response: string | null;
  truncated: boolean;
}

/** A request's captured bodies as the request log reads them (src/guardrails/bodies.ts captures them). */
export interface CapturedBodies {
  stored(requestId: string, orgId: string, createdAt: number): StoredBodies;
}
