import { GatewayError } from '../lib/errors.js';
import { formatUsd } from '../lib/money.js';
import { formatDuration, retryAfterSeconds } from './duration.js';
import type { AdmitRequest, LimitHeaders, LimitKind, LimitScope, RefusedBy, ScopeUsage } from '../model/limits.js';

/** A wait that no amount of waiting ends (a limit of 0, a request above a total budget). */
export const NEVER = Number.POSITIVE_INFINITY;
/** What a refused `retry-after` says for NEVER: come back tomorrow, after an operator raised the limit. */
const NEVER_RETRY_MS = 86_400_000;

interface WindowReading {
  /** Requests or tokens in the window before this request. */
  used: number;
  /** Time of the oldest entry still in the window, or null when it is empty. */
  oldest: number | null;
  /** null: this request fits; else ms until it could (or NEVER). */
  wait: number | null;
}

/**
 * What a driver read for one scope, before applying the request: the common language
 * of both drivers, from which the headers, the error and `usage()` are built here once.
 * A kind is present exactly when the scope limits it.
 */
export interface ScopeReading {
  rpm?: WindowReading;
  tpm?: WindowReading;
  concurrency?: { used: number; wait: number | null };
  budget?: { spent: number; held: number; periodStart: number; periodEnd: number | null; wait: number | null };
}

/** True when some limit of the scope refuses the request. */
export function refuses(r: ScopeReading): boolean {
  return r.rpm?.wait != null || r.tpm?.wait != null || r.concurrency?.wait != null || r.budget?.wait != null;
}

export interface Moment {
  now: number;
  windowMs: number;
}

/**
 * The tokens a request reserves against a tpm: its bound, but never more than the whole
 * limit. Without the cap a request whose worst case exceeds the tpm (max_tokens left
 * out on a long-context model) could never be admitted; with it such a request waits for
 * an empty window, and the metered count, corrected at settle, is what stays counted.
 */
export function tokenReservation(tokens: number, tpm: number): number {
  return Math.min(tokens, tpm);
}

/** The kinds a scope's limits name, in the order errors prefer them. */
export function limitedKinds(scopes: readonly LimitScope[]): LimitKind[] {
  const kinds = new Set<LimitKind>();
  for (const { limits } of scopes) {
    if (limits.budget) kinds.add('budget');
    if (limits.rpm !== undefined) kinds.add('rpm');
    if (limits.tpm !== undefined) kinds.add('tpm');
    if (limits.maxConcurrent !== undefined) kinds.add('concurrency');
  }
  return [...kinds];
}

/**
 * The `x-ratelimit-*` headers: for requests and for tokens separately, the scope with
 * the fewest remaining (the tighter one) is reported. After an admitted request its own
 * reservation is already counted, so remaining goes down with every request. `reset`
 * is when the oldest counted entry leaves the window, i.e. when remaining next goes up.
 */
export function limitHeaders(req: AdmitRequest, readings: readonly ScopeReading[], at: Moment, admitted: boolean): LimitHeaders {
  const headers: LimitHeaders = {};
  const requests = tightest(req.scopes.map((s, i) => window(s.limits.rpm, readings[i]?.rpm, admitted ? 1 : 0, at, admitted)));
  if (requests) setWindowHeaders(headers, REQUEST_HEADERS, requests);
  const tokens = tightest(req.scopes.map((s, i) => {
    const tpm = s.limits.tpm;
    return window(tpm, readings[i]?.tpm, admitted && tpm !== undefined ? tokenReservation(req.tokens, tpm) : 0, at, admitted);
  }));
  if (tokens) setWindowHeaders(headers, TOKEN_HEADERS, tokens);
  return headers;
}

interface WindowState {
  limit: number;
  remaining: number;
  resetMs: number;
}

function window(limit: number | undefined, r: WindowReading | undefined, added: number, at: Moment, admitted: boolean): WindowState | undefined {
  if (limit === undefined || !r) return undefined;
  const oldest = r.oldest ?? (admitted ? at.now : null);
  return { limit, remaining: Math.max(0, limit - r.used - added), resetMs: oldest === null ? 0 : Math.max(0, oldest + at.windowMs - at.now) };
}

function tightest(states: Array<WindowState | undefined>): WindowState | undefined {
  let best: WindowState | undefined;
  for (const s of states) {
    if (s && (!best || s.remaining < best.remaining || (s.remaining === best.remaining && s.limit < best.limit))) best = s;
  }
  return best;
}

/** The limit, remaining and reset header names of one window (built once, not per request). */
const windowHeaderNames = (name: 'requests' | 'tokens') => [`x-ratelimit-limit-${name}`, `x-ratelimit-remaining-${name}`, `x-ratelimit-reset-${name}`] as const;
const REQUEST_HEADERS = windowHeaderNames('requests');
const TOKEN_HEADERS = windowHeaderNames('tokens');

function setWindowHeaders(headers: LimitHeaders, [limit, remaining, reset]: ReturnType<typeof windowHeaderNames>, s: WindowState): void {
  headers[limit] = String(s.limit);
  headers[remaining] = String(s.remaining);
  headers[reset] = formatDuration(s.resetMs);
}

/** Headers when the store did not answer: the limits are known, the counts are not. */
export function degradedHeaders(scopes: readonly LimitScope[]): LimitHeaders {
  const headers: LimitHeaders = {};
  const lowest = (values: Array<number | undefined>): number | undefined => {
    const defined = values.filter((v): v is number => v !== undefined);
    return defined.length ? Math.min(...defined) : undefined;
  };
  const rpm = lowest(scopes.map((s) => s.limits.rpm));
  const tpm = lowest(scopes.map((s) => s.limits.tpm));
  if (rpm !== undefined) headers['x-ratelimit-limit-requests'] = String(rpm);
  if (tpm !== undefined) headers['x-ratelimit-limit-tokens'] = String(tpm);
  return headers;
}

interface Failure {
  kind: LimitKind;
  scope: LimitScope;
  wait: number;
  message: () => GatewayError;
}

/**
 * The 429 for a refused request: `budget_exceeded` if a budget refused it, else
 * `rate_limit_exceeded` for the limit with the longest wait; `retry-after` is the
 * longest wait of all, since every refusing limit must have room again.
 */
export function refusal(req: AdmitRequest, readings: readonly ScopeReading[], at: Moment): { error: GatewayError; headers: LimitHeaders; refusedBy: RefusedBy } {
  const failures = req.scopes.flatMap((scope, i) => failuresOf(req, scope, readings[i] ?? {}, at));
  if (!failures.length) throw new Error('refusal() called for a request every limit admits');
  const longest = failures.reduce((a, b) => (b.wait > a.wait ? b : a));
  const chosen = failures.filter((f) => f.kind === 'budget').reduce<Failure | undefined>((a, b) => (!a || b.wait > a.wait ? b : a), undefined) ?? longest;
  const waitMs = longest.wait === NEVER ? NEVER_RETRY_MS : longest.wait;
  const headers = {
    ...limitHeaders(req, readings, at, false),
    'retry-after': String(retryAfterSeconds(waitMs)),
    'retry-after-ms': String(Math.max(1, Math.ceil(waitMs))),
  };
  const error = chosen.message();
  error.extras.headers = headers;
  return { error, headers, refusedBy: { kind: chosen.kind, scopeId: chosen.scope.id, ...(chosen.scope.owner ? { owner: chosen.scope.owner } : {}) } };
}

function failuresOf(req: AdmitRequest, scope: LimitScope, r: ScopeReading, at: Moment): Failure[] {
  const label = scope.label ?? scope.id;
  const out: Failure[] = [];
  const rate = (kind: LimitKind, what: string, limit: number, used: number, requested: number, wait: number): void => {
    const advice = wait === NEVER ? 'the limit admits nothing' : `retry in ${formatDuration(wait)}`;
    out.push({ kind, scope, wait, message: () => new GatewayError('rate_limit_exceeded', [label, what, limit, used, requested, advice]) });
  };
  const { rpm, tpm, maxConcurrent, budget } = scope.limits;
  if (r.rpm?.wait != null && rpm !== undefined) rate('rpm', 'requests per minute', rpm, r.rpm.used, 1, r.rpm.wait);
  if (r.tpm?.wait != null && tpm !== undefined) rate('tpm', 'tokens per minute', tpm, r.tpm.used, tokenReservation(req.tokens, tpm), r.tpm.wait);
  if (r.concurrency?.wait != null && maxConcurrent !== undefined) rate('concurrency', 'concurrent requests', maxConcurrent, r.concurrency.used, 1, r.concurrency.wait);
  const b = r.budget;
  if (b?.wait != null && budget) {
    const left = Math.max(0, budget.micros - b.spent - b.held);
    const wait = b.wait;
    let advice: string;
    if (req.costMicros > budget.micros) advice = 'the request\'s maximum cost is above the whole budget (lower max_tokens)';
    else if (b.spent + req.costMicros <= budget.micros) advice = `requests in flight hold $${formatUsd(b.held)} of it; retry in ${formatDuration(wait)}`;
    else if (b.periodEnd === null) advice = 'a total budget does not reset';
    else advice = `it resets in ${formatDuration(b.periodEnd - at.now)}, at ${new Date(b.periodEnd).toISOString()}`;
    const period = { day: 'daily', month: 'monthly', total: 'total' }[budget.period];
    out.push({
      kind: 'budget', scope, wait,
      message: () => new GatewayError('budget_exceeded', [label, formatUsd(req.costMicros), formatUsd(left), period, formatUsd(budget.micros), advice]),
    });
  }
  return out;
}

/** Why a budget could not be checked when its spend seed failed (the error itself is for the logs). */
export const SEED_FAILED = 'its spend so far could not be read';

/** The 503 for a budget the store could not check; nothing was reserved or charged. `reason` is shown to the client. */
export function unavailable(scopes: readonly LimitScope[], reason: string): { error: GatewayError; headers: LimitHeaders } {
  const budgeted = scopes.find((s) => s.limits.budget) ?? scopes[0];
  const headers = { ...degradedHeaders(scopes), 'retry-after': '1' };
  const error = new GatewayError('limits_unavailable', [budgeted ? budgeted.label ?? budgeted.id : 'this key', reason], { headers });
  return { error, headers };
}

/** `usage()` from a reading taken with nothing requested. */
export function usageFromReading(scope: LimitScope, r: ScopeReading, at: Moment): ScopeUsage {
  const out: ScopeUsage = { scopeId: scope.id, at: at.now };
  const win = (limit: number | undefined, w: WindowReading | undefined) => limit === undefined || !w ? undefined : {
    limit, used: w.used, remaining: Math.max(0, limit - w.used), resetsAt: w.oldest === null ? null : w.oldest + at.windowMs,
  };
  const { rpm, tpm, maxConcurrent, budget } = scope.limits;
  const rpmUsage = win(rpm, r.rpm);
  const tpmUsage = win(tpm, r.tpm);
  if (rpmUsage) out.rpm = rpmUsage;
  if (tpmUsage) out.tpm = tpmUsage;
  if (maxConcurrent !== undefined && r.concurrency) {
    out.concurrency = { limit: maxConcurrent, used: r.concurrency.used, remaining: Math.max(0, maxConcurrent - r.concurrency.used) };
  }
  if (budget && r.budget) {
    const { spent, held, periodStart, periodEnd } = r.budget;
    out.budget = {
      limitMicros: budget.micros, period: budget.period, spentMicros: spent, heldMicros: held,
      remainingMicros: Math.max(0, budget.micros - spent - held), periodStart, resetsAt: periodEnd,
    };
  }
  return out;
}
