/**
 * Recognising an uploaded audio file by its first bytes (not its name or declared
 * type, which clients get wrong), and bounding or estimating its duration for
 * metering when the upstream does not report one.
 */

export interface AudioFormat {
  /** The MIME type sent upstream with a raw audio body. */
  readonly mime: string;
  readonly name: string;
}

const ascii = (head: Buffer, at: number, text: string): boolean => head.toString('latin1', at, at + text.length) === text;

/** The audio container of a file's first bytes, or undefined when it is not one we accept. */
export function sniffAudio(head: Buffer): AudioFormat | undefined {
  if (ascii(head, 0, 'RIFF') && ascii(head, 8, 'WAVE')) return { mime: 'audio/wav', name: 'wav' };
  if (ascii(head, 0, 'fLaC')) return { mime: 'audio/flac', name: 'flac' };
  if (ascii(head, 0, 'OggS')) return { mime: 'audio/ogg', name: 'ogg' };
  if (ascii(head, 0, 'ID3')) return { mime: 'audio/mpeg', name: 'mp3' };
  if (ascii(head, 4, 'ftyp')) return { mime: 'audio/mp4', name: 'mp4' };
  if (head.length >= 4 && head.readUInt32BE(0) === 0x1a45dfa3) return { mime: 'audio/webm', name: 'webm' };
  const b0 = head[0] ?? 0;
  const b1 = head[1] ?? 0;
  if (b0 === 0xff && (b1 & 0xe0) === 0xe0) {
    // Frame sync: layer bits 00 are AAC in ADTS, anything else MPEG audio (mp3, mp2).
    return (b1 & 0x06) === 0 ? { mime: 'audio/aac', name: 'aac' } : { mime: 'audio/mpeg', name: 'mp3' };
  }
  return undefined;
}

/** The formats `sniffAudio` accepts, for the error message. */
export const ACCEPTED_AUDIO = 'flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm, aac';

/**
 * The lowest bitrate a speech codec we accept can have (Opus at 6 kbps), so
 * `size / MIN_BYTES_PER_SECOND` can never be shorter than the real duration.
 */
const MIN_BYTES_PER_SECOND = 750;
/** 128 kbps, the most common MP3 rate: the estimate when the file tells nothing better. */
const TYPICAL_BYTES_PER_SECOND = 16_000;

/** Exact duration of a PCM WAV file from its header, when the header is in `head`. */
function wavSeconds(head: Buffer, size: number): number | undefined {
  let at = 12;
  let byteRate: number | undefined;
  for (let i = 0; i < 32 && at + 8 <= head.length; i++) {
    const id = head.toString('latin1', at, at + 4);
    const length = head.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 16 <= head.length) byteRate = head.readUInt32LE(at + 16);
    if (id === 'data' && byteRate) return Math.min(length, size - at - 8) / byteRate;
    at += 8 + length + (length % 2);
  }
  return undefined;
}

const MPEG1_L3_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];

/** MP3 duration from the first frame's bitrate (exact for constant bitrate), after any ID3 tag. */
function mp3Seconds(head: Buffer, size: number): number | undefined {
  let at = 0;
  if (ascii(head, 0, 'ID3') && head.length >= 10) {
    at = 10 + (((head[6] ?? 0) << 21) | ((head[7] ?? 0) << 14) | ((head[8] ?? 0) << 7) | (head[9] ?? 0));
  }
  if (at + 4 > head.length || head[at] !== 0xff || ((head[at + 1] ?? 0) & 0xfe) !== 0xfa) return undefined;
  const kbps = MPEG1_L3_KBPS[((head[at + 2] ?? 0) >> 4) & 0x0f];
  return kbps ? ((size - at) * 8) / (kbps * 1000) : undefined;
}

/** The gateway's own estimate of the duration, for metering when the upstream reports none. */
export function estimateSeconds(head: Buffer, size: number): number {
  const format = sniffAudio(head);
  const exact = format?.name === 'wav' ? wavSeconds(head, size) : format?.name === 'mp3' ? mp3Seconds(head, size) : undefined;
  return Math.max(1, exact ?? size / TYPICAL_BYTES_PER_SECOND);
}

/** The longest the audio can be: what is reserved before the call. */
export function maxSeconds(head: Buffer, size: number): number {
  const wav = sniffAudio(head)?.name === 'wav' ? wavSeconds(head, size) : undefined;
  return Math.ceil(Math.max(1, wav !== undefined ? wav + 1 : size / MIN_BYTES_PER_SECOND));
}

/** Content types an audio reply may carry (or none at all); JSON, text, HTML and the like are not audio. */
export function isAudioContentType(type: string | undefined): boolean {
  return type === undefined || /^\s*(audio\/|application\/octet-stream\s*(;|$))/i.test(type);
}

const isSpace = (b: number): boolean => b === 0x20 || (b >= 0x09 && b <= 0x0d);

/**
 * True when the first bytes of a reply are text (JSON, HTML, XML) rather than audio:
 * the first non-blank byte opens a document and no control byte follows. Every audio
 * container starts otherwise (ID3, frame sync, RIFF, OggS, fLaC), and raw PCM is full
 * of control bytes (silence is zeros).
 */
export function looksLikeText(head: Buffer): boolean {
  const sample = head.subarray(0, 64);
  let i = 0;
  while (i < sample.length && isSpace(sample[i] ?? 0)) i++;
  const first = sample[i];
  if (first !== 0x7b && first !== 0x5b && first !== 0x3c) return false; // { [ <
  return sample.every((b) => b >= 0x20 || isSpace(b));
}
