import { toFile } from 'openai';
import { describe, expect, it } from 'vitest';
import { buildMp3, framesForSeconds } from '../simulator/mp3.js';
import { useOrgGateway } from './fixtures.js';
import { logRow, providerHead, providersWith } from './harness.js';

const t = useOrgGateway('hub-user', '1', (sim) => {
  // A Whisper host added by YAML alone: it always asks upstream for verbose_json (so the
  // duration is exact) and the gateway renders whatever format the client asked for.
  const providers = providersWith({ 'whisperhub.yaml': `${providerHead('whisperhub', 'WhisperHub', `${sim.url}/whisperhub/v1`)}endpoints:
  transcription:
    path: /audio/transcriptions
    upload: multipart
    request:
      body: '{ "model": model, "response_format": "verbose_json", "language": language }'
    response:
      text: text
      seconds: duration
      language: language
models:
  - { id: hub-whisper, upstream_id: whisper-large-v3, modality: transcription, pricing: { audio_second: "0.00003" } }
` });
  return { providersDir: providers, yaml: { providers: { whisperhub: { api_key: 'hub-key' } } } };
});

describe('a speech-to-text provider added by YAML alone', () => {
  it('re-sends the form built by the transform and renders the client\'s format, billed on the exact duration', async () => {
    const file = await toFile(buildMp3(framesForSeconds(10)), 'clip.bin');
    const srt = await t.client.audio.transcriptions.create({ file, model: 'hub-whisper', response_format: 'srt', language: 'fr' }).withResponse();
    expect(srt.data).toBe('1\n00:00:00,000 --> 00:00:09,990\nSimulated transcript.\n\n');
    expect(t.sim.calls()).toEqual({ 'POST /whisperhub/v1/audio/transcriptions': 1 });
    expect(1_000_000 - (await t.balance(t.orgId))).toBe(300); // ceil(9.99 s) × $0.00003
    expect(await logRow(t, srt.response.headers.get('x-request-id') ?? '')).toMatchObject({
      usedProvider: 'whisperhub', usedModel: 'whisper-large-v3', costMicros: 300, costEstimated: false,
    });
    const verbose = await t.client.audio.transcriptions.create({ file, model: 'hub-whisper', response_format: 'verbose_json', language: 'fr' });
    expect(verbose).toMatchObject({ language: 'fr', duration: 9.99, text: 'Simulated transcript.' });
    expect(await t.gateway.store.sumCharges(t.orgId)).toBe(600);
    await t.gateway.log.flush();
    expect(await t.gateway.store.sumLoggedCosts(t.orgId)).toBe(600);
  });
});
