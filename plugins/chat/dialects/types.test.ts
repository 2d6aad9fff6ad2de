import { describe, expect, it } from 'vitest';
import { anthropicDialect } from './anthropic/index.js';
import { geminiDialect } from './gemini/index.js';
import { openaiDialect } from './openai/index.js';
import { CTX } from '../chat.testkit.js';
import { MALFORMED_EVENT, parseStreamEvent } from './types.js';

describe('parseStreamEvent', () => {
  it('gives the JSON object of an event', () => {
    expect(parseStreamEvent<{ type?: string }>('{"type":"ping","n":[1]}')).toEqual({ type: 'ping', n: [1] });
  });

  it.each(['', '{"type":', 'null', '[1,2]', '"text"', '3', 'true'])('gives undefined for data that is not a JSON object: %j', (data) => {
    expect(parseStreamEvent(data)).toBeUndefined();
  });

  it.each([openaiDialect, anthropicDialect, geminiDialect])('every dialect ends its stream on such data with the same error ($name)', (dialect) => {
    for (const data of ['{"x', 'null', '[]']) {
      const t = dialect.streamTranslator(CTX).onEvent(undefined, data);
      expect(t).toMatchObject({ chunks: [], deliveredTokens: 0, done: false, error: MALFORMED_EVENT });
    }
  });
});
