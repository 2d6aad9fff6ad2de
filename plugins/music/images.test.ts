import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/sdk.js';
import { decodeDataUrl, isPrivateAddress, sniffImage } from './images.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const JPEG = Buffer.from('ffd8ffe000104a464946', 'hex');

describe('isPrivateAddress', () => {
  it.each([
    ['127.0.0.1', true], ['10.1.2.3', true], ['172.16.0.1', true], ['192.168.1.1', true], ['169.254.169.254', true],
    ['100.64.0.1', true], ['0.0.0.0', true], ['::1', true], ['fe80::1', true], ['fd00::1', true], ['::ffff:127.0.0.1', true],
    // IPv6 spellings of IPv4 loopback and private addresses: compatible (::a.b.c.d), mapped in hex, NAT64, 6to4, Teredo.
    ['::127.0.0.1', true], ['::7f00:1', true], ['::ffff:7f00:1', true], ['::ffff:10.0.0.1', true], ['0:0:0:0:0:0:0:1', true],
    ['::', true], ['64:ff9b::10.0.0.1', true], ['64:ff9b::8.8.8.8', true], ['64:ff9b:1::a00:1', true], ['2002:7f00:1::1', true],
    ['2002:c0a8:101::1', true], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true], ['::ffff:0:7f00:1', true], ['100::1', true],
    ['2001:db8::1', true], ['8.8.8.8', false], ['2002:808:808::1', false], ['1.1.1.1', false], ['2606:4700:4700::1111', false], ['::ffff:8.8.8.8', false],
  ])('%s → %s', (addr, expected) => {
    expect(isPrivateAddress(addr)).toBe(expected);
  });
});

describe('sniffImage', () => {
  it('knows JPEG and PNG by their bytes, nothing else', () => {
    expect(sniffImage(PNG)).toBe('image/png');
    expect(sniffImage(JPEG)).toBe('image/jpeg');
    expect(sniffImage(Buffer.from('GIF89a'))).toBeUndefined();
    expect(sniffImage(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('decodeDataUrl', () => {
  it('decodes a base64 image whatever its declared JPEG/PNG type says, by its bytes', () => {
    expect(decodeDataUrl(`data:image/jpeg;base64,${PNG.toString('base64')}`, 'img', 1024)).toEqual({ kind: 'inline', mimeType: 'image/png', data: PNG, param: 'img' });
    expect(decodeDataUrl(`data:image/png;base64,${JPEG.toString('base64').replace(/(.{4})/g, '$1\n')}`, 'img', 1024).mimeType).toBe('image/jpeg');
  });

  it.each([
    ['not base64-encoded', 'data:image/png,rawbytes', 'base64 data URL'],
    ['declared as another type', `data:image/gif;base64,${PNG.toString('base64')}`, 'image/jpeg or image/png'],
    ['bad base64', 'data:image/png;base64,@@@@', 'not valid base64'],
    ['empty', 'data:image/png;base64,', 'is empty'],
    ['too big', `data:image/png;base64,${Buffer.concat([PNG, Buffer.alloc(64)]).toString('base64')}`, 'larger than 64 bytes'],
  ])('refuses an image that is %s, naming its field', (_name, url, message) => {
    expect(() => decodeDataUrl(url, 'reference_images[2]', 64)).toThrow(GatewayError);
    expect(() => decodeDataUrl(url, 'reference_images[2]', 64)).toThrow(message);
  });
});
