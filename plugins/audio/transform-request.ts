import { type BuiltRequest, invalidField, type ModelRoute, transformRefusal } from '../../src/sdk.js';

/**
 * Runs the endpoint's YAML request transform, if it has one. A transform that refuses
 * the request with `$error("…")` (say, a response format the vendor lacks) becomes a
 * 400 carrying its message; nothing has been charged at that point.
 */
export async function applyRequestTransform(route: ModelRoute, input: Record<string, unknown>): Promise<BuiltRequest | undefined> {
  const transform = route.endpoint.transforms.request;
  if (!transform) return undefined;
  try {
    return await transform(input);
  } catch (err) {
    const refusal = transformRefusal(err);
    if (refusal !== undefined) throw invalidField('', refusal);
    throw err;
  }
}
