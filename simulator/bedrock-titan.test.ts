import { type BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { describe, expect, it } from 'vitest';
import { bedrockClient, useSimulator } from './bedrock-client.testkit.js';

/** The simulated Titan Text Embeddings V2 (InvokeModel) against @aws-sdk/client-bedrock-runtime pointed straight at it. */
const env = useSimulator();

const MODEL = 'amazon.titan-embed-text-v2:0';

const client = (secretAccessKey?: string): BedrockRuntimeClient => bedrockClient(env.sim, secretAccessKey);

const invoke = async (body: Record<string, unknown>, secret?: string): Promise<{ embedding: number[]; inputTextTokenCount: number; embeddingsByType: { float: number[] } }> => {
  const out = await client(secret).send(new InvokeModelCommand({ modelId: MODEL, contentType: 'application/json', accept: 'application/json', body: JSON.stringify(body) }));
  return JSON.parse(new TextDecoder().decode(out.body)) as { embedding: number[]; inputTextTokenCount: number; embeddingsByType: { float: number[] } };
};

describe('InvokeModel with a Titan Text Embeddings V2 body', () => {
  it('answers one unit vector of 1024 dimensions by default, 256 when asked, and the token count', async () => {
    const text = 'The quick brown fox jumps'; // 25 characters: ceil(25/4) = 7 tokens
    const full = await invoke({ inputText: text });
    expect(full.embedding).toHaveLength(1024);
    expect(full.inputTextTokenCount).toBe(7);
    expect(full.embeddingsByType.float).toEqual(full.embedding);
    expect(Math.hypot(...full.embedding)).toBeCloseTo(1, 5);
    const short = await invoke({ inputText: text, dimensions: 256, normalize: true });
    expect(short.embedding).toHaveLength(256);
    expect((await invoke({ inputText: text })).embedding).toEqual(full.embedding);
  });

  it('refuses what Bedrock refuses: other dimensions, an unknown key, no inputText', async () => {
    for (const body of [{ inputText: 'x', dimensions: 300 }, { inputText: 'x', texts: ['x'] }, { texts: ['x'] }]) {
      await expect(invoke(body)).rejects.toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
    }
  });

  it('checks the signature like every Bedrock call', async () => {
    await expect(invoke({ inputText: 'x' }, 'not-the-secret')).rejects.toMatchObject({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 403 } });
  });
});
