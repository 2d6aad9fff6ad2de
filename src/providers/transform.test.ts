import { describe, expect, it } from 'vitest';
import { applyRequestTransform, compileTransforms } from './transform.js';

describe('declarative transforms', () => {
  const lyria = compileTransforms(
    {
      body: `{"contents": [{"parts": $append([{"text": prompt & (instrumental ? "\\n\\nInstrumental only, no vocals." : "") & ((lyrics and $not(instrumental)) ? "\\n\\nLyrics:\\n" & lyrics : "")}], images.{"inlineData": {"mimeType": mime_type, "data": data}})}], "generationConfig": {"responseModalities": ["AUDIO", "TEXT"]}}`,
      path: { model: 'model' },
    },
    {
      audio: 'candidates[0].content.parts[inlineData.mimeType = "audio/mpeg"][0].inlineData.data',
      text: '$join(candidates[0].content.parts[$exists(text)].text, "\\n")',
      blocked: 'promptFeedback.blockReason',
    },
  );

  it.each([
    ['plain prompt', { prompt: 'lofi', instrumental: false, images: [], model: 'm' }, [{ text: 'lofi' }]],
    ['instrumental', { prompt: 'lofi', instrumental: true, lyrics: 'la', images: [], model: 'm' }, [{ text: 'lofi\n\nInstrumental only, no vocals.' }]],
    ['lyrics', { prompt: 'pop', instrumental: false, lyrics: '[Verse] hi', images: [], model: 'm' }, [{ text: 'pop\n\nLyrics:\n[Verse] hi' }]],
    ['images', { prompt: 'x', instrumental: false, images: [{ mime_type: 'image/png', data: 'AA==' }], model: 'm' },
      [{ text: 'x' }, { inlineData: { mimeType: 'image/png', data: 'AA==' } }]],
  ])('builds the request body: %s', async (_n, input, parts) => {
    const built = await lyria.request!(input);
    expect(JSON.parse(built.body!)).toEqual({ contents: [{ parts }], generationConfig: { responseModalities: ['AUDIO', 'TEXT'] } });
    expect(built.pathVars).toEqual({ model: 'm' });
  });

  it('extracts response fields and leaves absent ones out', async () => {
    const out = await lyria.response!({
      candidates: [{ content: { parts: [{ text: '[0.0:] <intro>' }, { inlineData: { mimeType: 'audio/mpeg', data: 'SUQz' } }, { text: 'more' }] } }],
    });
    expect(out).toEqual({ audio: 'SUQz', text: '[0.0:] <intro>\nmore' });
    expect(await lyria.response!({ promptFeedback: { blockReason: 'SAFETY' } })).toEqual({ blocked: 'SAFETY' });
  });

  it('builds query and headers as strings', async () => {
    const t = compileTransforms({ query: { output_format: '"mp3_" & rate', n: '2' }, headers: { 'x-a': '"b"' } }, undefined);
    expect(await t.request!({ rate: 44100 })).toEqual({ body: undefined, pathVars: {}, query: { output_format: 'mp3_44100', n: '2' }, headers: { 'x-a': 'b' } });
    expect(t.response).toBeUndefined();
  });

  it.each([
    [{ body: '{"a": ' }, undefined, /request\.body: .*at character/],
    [{ bogus: 'x' }, undefined, /request: unknown key bogus/],
    [{ path: ['x'] }, undefined, /request\.path: must be a map/],
    [undefined, { audio: 42 }, /response\.audio: must be a JSONata expression string/],
    [undefined, { audio: 'a[' }, /response\.audio: /],
  ])('refuses a bad transform at compile time (%#)', (req, res, message) => {
    expect(() => compileTransforms(req, res)).toThrow(message);
  });
});

describe('applyRequestTransform', () => {
  const refusing = compileTransforms({ body: `size = "huge" ? $error("size huge is not offered") : {"prompt": prompt}` }, undefined);

  it('builds the request, or resolves undefined when the endpoint has no transform', async () => {
    expect(JSON.parse((await applyRequestTransform(refusing.request, { prompt: 'p', size: 'small' }))?.body ?? '')).toEqual({ prompt: 'p' });
    expect(await applyRequestTransform(undefined, { prompt: 'p' })).toBeUndefined();
  });

  it("turns a transform's $error into a 400 on the field named, and any other error into itself", async () => {
    await expect(applyRequestTransform(refusing.request, { prompt: 'p', size: 'huge' }, 'size')).rejects.toMatchObject({
      code: 'invalid_request', status: 400, extras: { param: 'size' }, message: expect.stringContaining('size huge is not offered'),
    });
    const broken = async (): Promise<never> => {
      throw new Error('a YAML bug');
    };
    await expect(applyRequestTransform(broken, {})).rejects.toThrow('a YAML bug');
  });
});
