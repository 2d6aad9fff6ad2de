/**
 * Deterministic completions and token counts shared by the chat dialects, so a test
 * can predict exactly what the gateway should meter.
 */

import { estimateTokens, tokensForChars } from '../src/lib/tokens.js';
import type { Directives } from './directives.js';

/** Words the reply cycles through; 1 word = 1 completion token. */
const SOURCE_WORDS: readonly string[] = ['This', 'is', 'a', 'simulated', 'reply.'];

const DEFAULT_REPLY_TOKENS = 8;

export interface ReplyPlan {
  /** Stream pieces: the first word bare, later words with a leading space. */
  readonly pieces: readonly string[];
  /** True when the request's max-token limit cut the reply short. */
  readonly capped: boolean;
}

/**
 * Plans a reply of `[[sim:tokens=N]]` words (default 8), cut to `maxTokens` when the
 * request sets a lower limit.
 */
export function planReply(d: Directives, maxTokens: number | undefined): ReplyPlan {
  const wanted = d.tokens ?? DEFAULT_REPLY_TOKENS;
  const limit = maxTokens !== undefined && maxTokens >= 0 ? Math.floor(maxTokens) : wanted;
  const count = Math.min(wanted, limit);
  const pieces: string[] = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    const word = d.echo?.[i] ?? SOURCE_WORDS[i % SOURCE_WORDS.length] ?? '';
    pieces[i] = i === 0 ? word : ` ${word}`;
  }
  return { pieces, capped: count < wanted };
}

/** The full reply text of a plan. */
export function replyText(plan: ReplyPlan): string {
  return plan.pieces.join('');
}

/** Prompt tokens: ceil(total text characters / 4) + 3 per message. */
export function promptTokens(chars: number, messages: number): number {
  return tokensForChars(chars) + 3 * messages;
}

/** Tokens of one embedding input string: ceil(chars / 4), at least 1. */
export function textTokens(text: string): number {
  return Math.max(1, estimateTokens(text));
}

/** Seconds of synthesized speech for `chars` characters (~15 characters per second). */
export function speechSeconds(chars: number, speed = 1): number {
  const safeSpeed = speed > 0 ? speed : 1;
  return Math.max(1, Math.ceil(chars / 15 / safeSpeed));
}

/** Seconds of audio in an MP3 of `bytes` bytes at 128 kbps (16,000 bytes per second). */
export function audioSecondsFromBytes(bytes: number): number {
  return bytes / 16_000;
}

/** What a reasoning reply thinks: its visible text (a summary) and the tokens it spent, billed as output. */
export interface ThoughtPlan {
  readonly pieces: readonly string[];
  readonly tokens: number;
}

/** Reasoning tokens spent per effort (a summary is shorter than the thinking it sums up). */
const REASONING_TOKENS: Readonly<Record<string, number>> = { minimal: 4, low: 8, medium: 16, high: 32 };

/** The reasoning of a request that asked for it (`effort` when it named one; medium's otherwise). */
export function thoughtPlan(effort: unknown): ThoughtPlan {
  return { pieces: ['Thinking', ' it', ' over.'], tokens: (typeof effort === 'string' ? REASONING_TOKENS[effort] : undefined) ?? REASONING_TOKENS.medium! };
}
