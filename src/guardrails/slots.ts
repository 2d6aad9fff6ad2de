import type { TextSlot } from '../pipeline/plugin.js';

/** Keys whose strings are no text a guardrail reads: ids, roles, types, model names, media (URLs, base64). */
const NOT_TEXT = new Set([
  'model', 'role', 'type', 'id', 'tool_call_id', 'call_id', 'tool_use_id', 'previous_response_id', 'name', 'mime_type', 'mimeType', 'media_type',
  'data', 'url', 'image_url', 'file_data', 'file_id', 'inlineData', 'inline_data', 'fileData', 'file_uri', 'fileUri', 'input_audio', 'audio',
  'format', 'voice', 'encoding_format', 'response_format', 'tool_choice', 'service_tier', 'reasoning_effort', 'detail', 'signature', 'cache_control',
  'stop', 'user', 'metadata', 'modalities', 'status', 'finish_reason', 'stop_reason', 'responseMimeType', 'stream_format', 'include',
]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A slot for every string in a JSON value (a request body or a part of one) except
 * the keys that hold no text (NOT_TEXT: ids, roles, media). Walks `root` once; each
 * slot writes back into its object or array. `copy` marks slots of a second copy of
 * a request's text (TextSlot.copy).
 */
export function jsonTextSlots(root: unknown, copy = false): TextSlot[] {
  const slots: TextSlot[] = [];
  const visit = (holder: Record<string, unknown> | unknown[], key: string | number, depth: number): void => {
    const value = (holder as Record<string | number, unknown>)[key];
    if (typeof value === 'string') {
      if (value.length > 0) {
        slots.push({ get: () => (holder as Record<string | number, unknown>)[key] as string, set: (t) => void ((holder as Record<string | number, unknown>)[key] = t), copy });
      }
      return;
    }
    if (depth > 64) return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(value, i, depth + 1);
    } else if (isObject(value)) {
      for (const k of Object.keys(value)) if (!NOT_TEXT.has(k)) visit(value, k, depth + 1);
    }
  };
  const box = { root };
  visit(box, 'root', 0);
  return slots;
}
