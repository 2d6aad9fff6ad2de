// Checks that a music reply really carried the track a benchmark run asked for.

export function validateMusic(storage, sizeMb) {
  return (status, buf) => {
    if (status !== 200) return `status ${status}: ${buf.subarray(0, 200).toString('utf8')}`;
    let body;
    try {
      body = JSON.parse(buf.toString('utf8'));
    } catch {
      return 'reply is not JSON';
    }
    const audio = body.audio;
    if (body.object !== 'music.generation' || typeof audio?.base64 !== 'string') return 'reply is not a music.generation with audio.base64';
    if (audio.base64.length < ((sizeMb * 1e6 * 4) / 3) * 0.9) return `audio.base64 is only ${audio.base64.length} characters`;
    if (storage && audio.storage !== storage) return `audio.storage is ${audio.storage}, expected ${storage}`;
    return undefined;
  };
}

export function validateLyria(sizeMb) {
  return (status, buf) => lyriaReply(status, buf, sizeMb);
}

function lyriaReply(status, buf, sizeMb) {
  if (status !== 200) return `status ${status}: ${buf.subarray(0, 200).toString('utf8')}`;
  const body = JSON.parse(buf.toString('utf8'));
  const part = body.candidates?.[0]?.content?.parts?.find((p) => p.inlineData);
  if (!part || part.inlineData.data.length < ((sizeMb * 1e6 * 4) / 3) * 0.9) return 'no ~4 MB inlineData audio part';
  return undefined;
}
