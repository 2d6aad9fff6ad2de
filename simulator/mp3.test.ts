import { describe, expect, it } from 'vitest';
import {
  FRAME_BYTES,
  FRAME_SECONDS,
  Mp3Cache,
  SIDE_INFO_BYTES,
  buildId3Tag,
  buildMp3,
  buildSilentFrame,
  framesForBytes,
  framesForSeconds,
  secondsForFrames,
} from './mp3.js';

/** MPEG-1 Layer III bitrates (kbps) by index and sample rates (Hz) by index. */
const BITRATES = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const SAMPLE_RATES = [44_100, 48_000, 32_000];

/** Size of an ID3v2 tag including its 10-byte header (syncsafe size). */
function id3Length(buf: Buffer): number {
  expect(buf.toString('latin1', 0, 3)).toBe('ID3');
  const size = ((buf[6]! & 0x7f) << 21) | ((buf[7]! & 0x7f) << 14) | ((buf[8]! & 0x7f) << 7) | (buf[9]! & 0x7f);
  return 10 + size;
}

/** Walks the file frame by frame the way a decoder syncs, failing on any bad header. */
function walkFrames(buf: Buffer): { frames: number; seconds: number } {
  let pos = id3Length(buf);
  let frames = 0;
  let seconds = 0;
  while (pos < buf.length) {
    const b1 = buf[pos + 1]!;
    const b2 = buf[pos + 2]!;
    expect(buf[pos]).toBe(0xff);
    expect(b1 & 0xe0).toBe(0xe0); // remaining sync bits
    expect((b1 >> 3) & 0x03).toBe(0b11); // MPEG-1
    expect((b1 >> 1) & 0x03).toBe(0b01); // Layer III
    const bitrate = BITRATES[b2 >> 4]!;
    const rate = SAMPLE_RATES[(b2 >> 2) & 0x03]!;
    expect(bitrate).toBeGreaterThan(0);
    const length = Math.floor((144 * bitrate * 1000) / rate) + ((b2 >> 1) & 1);
    expect(pos + length).toBeLessThanOrEqual(buf.length);
    pos += length;
    frames++;
    seconds += 1152 / rate;
  }
  return { frames, seconds };
}

describe('silent frame', () => {
  it('is a 128 kbps 44.1 kHz mono MPEG-1 Layer III frame of 417 bytes', () => {
    const frame = buildSilentFrame();
    expect(frame.length).toBe(FRAME_BYTES);
    expect([...frame.subarray(0, 4)]).toEqual([0xff, 0xfb, 0x90, 0xc4]);
    expect((frame[3]! >> 6) & 0x03).toBe(0b11); // mono → 17-byte side info
    expect(frame.subarray(4, 4 + SIDE_INFO_BYTES).every((b) => b === 0)).toBe(true);
  });
});

describe('ID3 tag', () => {
  it('has a v2.3 header, syncsafe size and text frames', () => {
    const tag = buildId3Tag('Song');
    expect([...tag.subarray(0, 5)]).toEqual([0x49, 0x44, 0x33, 0x03, 0x00]);
    expect(id3Length(tag)).toBe(tag.length);
    expect(tag.toString('latin1')).toContain('TIT2');
    expect(tag.toString('latin1')).toContain('Song');
    for (const b of tag.subarray(6, 10)) expect(b & 0x80).toBe(0);
  });
});

describe('buildMp3', () => {
  it('produces a stream of valid frames with the requested duration', () => {
    const frames = framesForSeconds(30);
    const mp3 = buildMp3(frames);
    const walked = walkFrames(mp3);
    expect(walked.frames).toBe(frames);
    expect(walked.seconds).toBeCloseTo(30, 1);
    expect(secondsForFrames(frames)).toBeCloseTo(walked.seconds, 6);
  });

  it('runs at ~38.28 frames per second and sizes by bytes', () => {
    expect(1 / FRAME_SECONDS).toBeCloseTo(38.28, 2);
    const mp3 = buildMp3(framesForBytes(1_000_000));
    expect(Math.abs(mp3.length - 1_000_000)).toBeLessThan(FRAME_BYTES);
    expect(walkFrames(mp3).frames).toBe(framesForBytes(1_000_000));
  });

  it('always emits at least one frame', () => {
    expect(walkFrames(buildMp3(0)).frames).toBe(1);
    expect(framesForSeconds(0)).toBe(1);
  });
});

describe('Mp3Cache', () => {
  it('reuses bytes and base64 per frame count and evicts the oldest entry', () => {
    const cache = new Mp3Cache(2);
    const a = cache.bytes(10);
    expect(cache.bytes(10)).toBe(a);
    expect(Buffer.from(cache.base64(10), 'base64').equals(a)).toBe(true);
    cache.bytes(11);
    cache.bytes(12); // evicts 10
    expect(cache.bytes(10)).not.toBe(a);
    expect(cache.bytes(10).equals(a)).toBe(true);
  });
});
