import type { ChatDialect } from '../dialects/types.js';
import { anthropicFormat } from './anthropic/index.js';
import { geminiFormat } from './gemini/index.js';
import { openaiFormat } from './openai/index.js';
import { responsesFormat } from './responses/index.js';
import { openaiResponsesDialect } from './responses/native.js';
import type { ClientFormat, FormatServices } from './types.js';

/**
 * Every chat client format, with its routes. A new format is a folder
 * `formats/<client>/` exporting a ClientFormat (or a factory of one, when it keeps
 * state in the store), added to this list.
 */
export function clientFormats(services: FormatServices): ClientFormat[] {
  return [openaiFormat, anthropicFormat, responsesFormat(services), geminiFormat];
}

/** Native dialects that live with their format rather than in dialects/: they serve only that format's requests. */
export const NATIVE_ONLY_DIALECTS: readonly ChatDialect[] = [openaiResponsesDialect];
