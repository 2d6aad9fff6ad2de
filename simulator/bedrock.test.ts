import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, type ConverseStreamOutput } from '@aws-sdk/client-bedrock-runtime';
import AnthropicBedrock from '@anthropic-ai/bedrock-sdk';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describe, expect, it } from 'vitest';
import { AwsSigV4Signer } from '../src/providers/aws-sigv4.js';
import { SIM_AWS } from './aws-sigv4.js';
import { bedrockClient, useSimulator } from './bedrock-client.testkit.js';

/**
 * The simulated Bedrock against the official clients pointed straight at it: what they
 * sign, send and decode is what AWS takes, so the gateway's own signer and decoder are
 * checked against a simulator that real clients agree with.
 */
const env = useSimulator();

const MODEL = 'global.anthropic.claude-haiku-4-5-20251001-v1:0';

const client = (secretAccessKey?: string): BedrockRuntimeClient => bedrockClient(env.sim, secretAccessKey);

describe('the simulator speaks Bedrock to @aws-sdk/client-bedrock-runtime', () => {
  it('Converse: text, stop reason and usage', async () => {
    const out = await client().send(new ConverseCommand({
      modelId: MODEL, system: [{ text: 'Be brief.' }], messages: [{ role: 'user', content: [{ text: 'Hello [[sim:tokens=3]]' }] }],
    }));
    expect(out.output?.message?.content?.[0]?.text).toBe('This is a');
    expect(out.stopReason).toBe('end_turn');
    expect(out.usage?.outputTokens).toBe(3);
    expect(out.usage?.inputTokens).toBeGreaterThan(0);
  });

  it('Converse: a declared tool is called with toolUse, and its toolResult answered in text', async () => {
    const toolConfig = { tools: [{ toolSpec: { name: 'weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }] };
    const first = await client().send(new ConverseCommand({ modelId: MODEL, toolConfig, messages: [{ role: 'user', content: [{ text: 'Weather?' }] }] }));
    const use = first.output?.message?.content?.[0]?.toolUse;
    expect(first.stopReason).toBe('tool_use');
    expect(use).toMatchObject({ name: 'weather', input: { city: 'sim' } });
    const second = await client().send(new ConverseCommand({
      modelId: MODEL, toolConfig,
      messages: [
        { role: 'user', content: [{ text: 'Weather?' }] },
        { role: 'assistant', content: [{ toolUse: use! }] },
        { role: 'user', content: [{ toolResult: { toolUseId: use!.toolUseId!, content: [{ text: 'sunny' }] } }] },
      ],
    }));
    expect(second.stopReason).toBe('end_turn');
  });

  it('ConverseStream: event-stream frames the SDK decodes, ending with the metadata usage', async () => {
    const out = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi [[sim:tokens=4]]' }] }] }));
    const events: ConverseStreamOutput[] = [];
    for await (const e of out.stream!) events.push(e);
    const text = events.map((e) => e.contentBlockDelta?.delta?.text ?? '').join('');
    expect(text).toBe('This is a simulated');
    expect(events.find((e) => e.messageStop)?.messageStop?.stopReason).toBe('end_turn');
    expect(events.at(-1)?.metadata?.usage?.outputTokens).toBe(4);
  });

  it('a wrong secret gets InvalidSignatureException; an unknown key UnrecognizedClientException', async () => {
    await expect(client('not-the-secret').send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] })))
      .rejects.toMatchObject({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 403 } });
    const stranger = new BedrockRuntimeClient({ region: SIM_AWS.region, endpoint: `${env.sim.url}/bedrock`, maxAttempts: 1, credentials: { accessKeyId: 'AKIAUNKNOWN', secretAccessKey: 'x' }, requestHandler: new NodeHttpHandler() });
    await expect(stranger.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] })))
      .rejects.toMatchObject({ name: 'UnrecognizedClientException', $metadata: { httpStatusCode: 403 } });
  });

  it('a directive answers ThrottlingException / ModelNotReadyException in AWS\'s shape', async () => {
    await expect(client().send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: '[[sim:status=429]]' }] }] })))
      .rejects.toMatchObject({ name: 'ThrottlingException', $metadata: { httpStatusCode: 429 } });
    await expect(client().send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: '[[sim:aws_error=ModelNotReadyException]]' }] }] })))
      .rejects.toMatchObject({ name: 'ModelNotReadyException', $metadata: { httpStatusCode: 429 } });
  });
});

describe('the simulator checks signatures as AWS does', () => {
  const signed = async (body: string, at: number): Promise<Record<string, string>> => {
    const signer = new AwsSigV4Signer({ service: 'bedrock', region: SIM_AWS.region, credentials: { accessKeyId: SIM_AWS.accessKeyId, secretAccessKey: SIM_AWS.secretAccessKey }, now: () => at });
    return signer.sign({ method: 'POST', origin: env.sim.url, path: `/bedrock/model/${encodeURIComponent(MODEL)}/converse`, headers: { 'content-type': 'application/json' }, body }, undefined);
  };
  const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }] });
  const post = (headers: Record<string, string>, sent: string): Promise<Response> => {
    const { host: _host, ...rest } = headers;
    return fetch(`${env.sim.url}/bedrock/model/${encodeURIComponent(MODEL)}/converse`, { method: 'POST', headers: rest, body: sent });
  };

  it('takes a request signed now, refuses one whose body changed after signing', async () => {
    const headers = await signed(body, Date.now());
    expect((await post(headers, body)).status).toBe(200);
    const changed = await post(headers, body.replace('Hi', 'Ho'));
    expect(changed.status).toBe(403);
    expect(changed.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
    expect(await changed.json()).toEqual({ message: expect.stringContaining('signature we calculated does not match') });
  });

  it('refuses a signature more than 5 minutes old', async () => {
    const res = await post(await signed(body, Date.now() - 6 * 60_000), body);
    expect(res.status).toBe(403);
    expect(res.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
    expect(((await res.json()) as { message: string }).message).toMatch(/^Signature expired/);
  });
});

describe('the simulator speaks InvokeModel to @anthropic-ai/bedrock-sdk', () => {
  const anthropic = (awsSecretKey: string = SIM_AWS.secretAccessKey): AnthropicBedrock => new AnthropicBedrock({
    awsAccessKey: SIM_AWS.accessKeyId, awsSecretKey, awsRegion: SIM_AWS.region, baseURL: `${env.sim.url}/bedrock`, maxRetries: 0,
  });

  it('messages.create and a stream', async () => {
    const msg = await anthropic().messages.create({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hi [[sim:tokens=3]]' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'This is a' }]);
    const stream = anthropic().messages.stream({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hi [[sim:tokens=2]]' }] });
    expect((await stream.finalMessage()).content).toEqual([{ type: 'text', text: 'This is' }]);
  });

  it('a wrong secret gets the signature error', async () => {
    await expect(anthropic('wrong').messages.create({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] }))
      .rejects.toMatchObject({ status: 403 });
  });
});
