import { anthropicFormat } from './anthropic/index.js';
import { openaiFormat } from './openai/index.js';
import type { ClientFormat } from './types.js';

/**
 * Every chat client format, one route each. A new format (e.g. OpenAI Responses) is a
 * folder `formats/<client>/` exporting a ClientFormat, added to this list.
 */
export const CLIENT_FORMATS: readonly ClientFormat[] = [openaiFormat, anthropicFormat];
