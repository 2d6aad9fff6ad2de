import { estimateTokens } from '../../../../src/sdk.js';
import { chunkJson, MALFORMED, NOTHING, parseStreamEvent, toolCallDelta, type ReplyContext, type StreamTranslator, type TranslatedEvent } from '../types.js';
import { converseUsage, finishFromConverse, type ConverseUsage } from './common.js';

interface ConverseStreamEvent {
  contentBlockIndex?: number;
  start?: { toolUse?: { toolUseId?: string; name?: string } };
  delta?: { text?: string; toolUse?: { input?: string }; reasoningContent?: { text?: string } };
  stopReason?: string;
  usage?: ConverseUsage;
  message?: string;
}

/**
 * ConverseStream events (messageStart, contentBlockStart/Delta/Stop, messageStop,
 * metadata) → canonical chunks: text deltas as content, reasoning deltas as
 * reasoning_content, each toolUse block as a tool call whose input pieces become
 * argument deltas. messageStop carries the finish reason; the reply ends with the
 * metadata event, which carries the usage. An exception event (throttlingException,
 * modelStreamErrorException, …) ends the stream with its message.
 */
export function converseStream(ctx: ReplyContext): StreamTranslator {
  /** Canonical tool-call index of each toolUse block, by block index. */
  const toolOfBlock = new Map<number, number>();
  const delta = (d: Record<string, unknown>, tokens: number): TranslatedEvent => ({ chunks: [chunkJson(ctx, d, null)], deliveredTokens: tokens, done: false });
  return {
    onEvent(event, data): TranslatedEvent {
      const ev = parseStreamEvent<ConverseStreamEvent>(data);
      if (!ev) return MALFORMED;
      switch (event) {
        case 'messageStart':
          return delta({ role: 'assistant', content: '' }, 0);
        case 'contentBlockStart': {
          const tool = ev.start?.toolUse;
          if (!tool) return NOTHING;
          const index = toolOfBlock.size;
          toolOfBlock.set(ev.contentBlockIndex ?? index, index);
          return delta(toolCallDelta(index, { id: tool.toolUseId ?? '', name: tool.name ?? '', arguments: '' }), 1);
        }
        case 'contentBlockDelta': {
          const d = ev.delta;
          if (d?.toolUse?.input) {
            const index = toolOfBlock.get(ev.contentBlockIndex ?? -1);
            return index === undefined ? NOTHING : delta(toolCallDelta(index, { arguments: d.toolUse.input }), estimateTokens(d.toolUse.input));
          }
          if (d?.reasoningContent?.text) return delta({ reasoning_content: d.reasoningContent.text }, estimateTokens(d.reasoningContent.text));
          return d?.text ? delta({ content: d.text }, estimateTokens(d.text)) : NOTHING;
        }
        case 'messageStop':
          return { chunks: [chunkJson(ctx, {}, finishFromConverse(ev.stopReason))], deliveredTokens: 0, done: false };
        case 'metadata':
          return { ...NOTHING, usage: converseUsage(ev.usage), done: true };
        case 'contentBlockStop':
          return NOTHING;
        default:
          // Exceptions arrive named by their type (throttlingException, modelStreamErrorException, …).
          if (event === 'error' || event?.endsWith('Exception')) return { ...NOTHING, error: `${event}: ${ev.message ?? 'upstream error'}` };
          return NOTHING;
      }
    },
  };
}
