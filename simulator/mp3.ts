/**
 * Real, playable MP3 bytes without an encoder: an ID3v2.3 tag followed by identical
 * silent MPEG-1 Layer III frames (128 kbps, 44.1 kHz, mono). A frame whose side info
 * is all zero has no Huffman data, so every decoder renders it as silence; repeating
 * one template with `Buffer.fill` makes a 150 s track cost a single memcpy.
 */

/** MPEG-1 Layer III at 128 kbps / 44.1 kHz: floor(144 * 128000 / 44100) = 417 bytes. */
export const FRAME_BYTES = 417;
/** Samples per Layer III frame over the sample rate: ~26.12 ms, ~38.28 frames/s. */
export const FRAME_SECONDS = 1152 / 44_100;

/** Frame header fields, bit by bit, so the constants are auditable. */
const HEADER = Buffer.from([
  0xff, // sync (8 of 11 bits)
  0xfb, // sync (3) | MPEG-1 (11) | Layer III (01) | no CRC (1)
  0x90, // bitrate index 1001 = 128 kbps | 44.1 kHz (00) | no padding | private 0
  0xc4, // mono (11) | mode ext 00 | not copyrighted | original | no emphasis
]);
/** Mono MPEG-1 side info is 17 bytes; zeroes mean "no main data" for both granules. */
export const SIDE_INFO_BYTES = 17;

/** One silent frame; the rest after header and side info is zero ancillary data. */
export function buildSilentFrame(): Buffer {
  const frame = Buffer.alloc(FRAME_BYTES);
  HEADER.copy(frame, 0);
  // Bytes 4 .. 4 + SIDE_INFO_BYTES stay zero: main_data_begin 0, part2_3_length 0.
  return frame;
}

/** An ID3v2.3 tag with TIT2 (title) and TSSE (encoder) frames, Latin-1 text. */
export function buildId3Tag(title: string): Buffer {
  const frames = [textFrame('TIT2', title), textFrame('TSSE', 'Tollgate provider simulator')];
  const body = Buffer.concat(frames);
  const header = Buffer.from([0x49, 0x44, 0x33, 0x03, 0x00, 0x00, 0, 0, 0, 0]);
  writeSyncsafe(header, 6, body.length);
  return Buffer.concat([header, body]);
}

function textFrame(id: string, text: string): Buffer {
  const content = Buffer.concat([Buffer.from([0x00]), Buffer.from(text, 'latin1')]);
  const header = Buffer.alloc(10);
  header.write(id, 0, 'latin1');
  header.writeUInt32BE(content.length, 4); // ID3v2.3 frame sizes are plain big-endian
  return Buffer.concat([header, content]);
}

/** ID3v2 tag sizes use 7 bits per byte so no byte can look like an MPEG sync. */
function writeSyncsafe(buf: Buffer, offset: number, value: number): void {
  buf[offset] = (value >> 21) & 0x7f;
  buf[offset + 1] = (value >> 14) & 0x7f;
  buf[offset + 2] = (value >> 7) & 0x7f;
  buf[offset + 3] = value & 0x7f;
}

/** Frames needed for `seconds` of audio (at least one). */
export function framesForSeconds(seconds: number): number {
  return Math.max(1, Math.round(seconds / FRAME_SECONDS));
}

/** Frames needed for a file of about `bytes` bytes (at least one). */
export function framesForBytes(bytes: number): number {
  return Math.max(1, Math.round(bytes / FRAME_BYTES));
}

/** Duration in seconds of `frames` frames. */
export function secondsForFrames(frames: number): number {
  return frames * FRAME_SECONDS;
}

/** A complete MP3 file: ID3 tag then `frames` silent frames. */
export function buildMp3(frames: number, title = 'Simulated audio'): Buffer {
  const tag = buildId3Tag(title);
  const count = Math.max(1, Math.floor(frames));
  const out = Buffer.allocUnsafe(tag.length + count * FRAME_BYTES);
  tag.copy(out, 0);
  out.fill(buildSilentFrame(), tag.length);
  return out;
}

/**
 * Per-simulator cache of built tracks keyed by frame count, so repeated requests for
 * the same duration (every Lyria clip, most TTS calls) reuse bytes and base64. FIFO
 * eviction bounds memory when durations vary.
 */
export class Mp3Cache {
  private readonly bytesByFrames = new Map<number, Buffer>();
  private readonly base64ByFrames = new Map<number, string>();

  constructor(private readonly maxEntries = 32) {}

  bytes(frames: number): Buffer {
    const count = Math.max(1, Math.floor(frames));
    let buf = this.bytesByFrames.get(count);
    if (buf === undefined) {
      buf = buildMp3(count);
      remember(this.bytesByFrames, count, buf, this.maxEntries);
    }
    return buf;
  }

  base64(frames: number): string {
    const count = Math.max(1, Math.floor(frames));
    let text = this.base64ByFrames.get(count);
    if (text === undefined) {
      text = this.bytes(count).toString('base64');
      remember(this.base64ByFrames, count, text, this.maxEntries);
    }
    return text;
  }

  clear(): void {
    this.bytesByFrames.clear();
    this.base64ByFrames.clear();
  }
}

function remember<V>(map: Map<number, V>, key: number, value: V, max: number): void {
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(key, value);
}
