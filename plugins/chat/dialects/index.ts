import { anthropicDialect } from './anthropic/index.js';
import { bedrockConverseDialect } from './bedrock/index.js';
import { geminiDialect } from './gemini/index.js';
import { openaiDialect } from './openai/index.js';
import type { ChatDialect } from './types.js';

/** Every chat dialect, by the name provider YAML uses (`dialect:`). */
export const DIALECTS: ReadonlyMap<string, ChatDialect> = new Map(
  [openaiDialect, anthropicDialect, geminiDialect, bedrockConverseDialect].map((d) => [d.name, d]),
);
