import { it, expect } from 'vitest';
import { postJson, startTestGateway } from '../harness.js';
it('music smoke', async () => {
  const t = await startTestGateway();
  const { key } = await t.org('m', '1');
  const r = await postJson(`${t.url}/v1/music`, { model: 'tune-3-clip-preview', prompt: 'lofi beats', instrumental: true }, key);
  const b = r.body as Record<string, any>;
  console.log('RESULT', r.status, JSON.stringify({ ...b, audio: { ...b.audio, base64: String(b.audio?.base64).slice(0, 20) + '…' + String(b.audio?.base64).length } }));
  console.log('CALLS', JSON.stringify(t.sim.calls()));
  const h = await fetch(`${t.url}/v1/music`, { headers: { authorization: `Bearer ${key}` } });
  console.log('HIST', h.status, (await h.text()).slice(0, 500));
  await t.close();
});
