import { lookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, errors as undiciErrors } from 'undici';
import { GatewayError, invalidField } from '../../src/sdk.js';
import type { MusicSettings } from './settings.js';

/** A reference image: decoded and checked, or a URL still to fetch. */
export type ImageSource =
  | { kind: 'inline'; mimeType: 'image/jpeg' | 'image/png'; data: Buffer; param: string }
  | { kind: 'url'; url: string; param: string };

export type InlineImage = Extract<ImageSource, { kind: 'inline' }>;

/** The real type of image bytes, from their magic numbers, whatever a data URL or server claims. */
export function sniffImage(bytes: Buffer): 'image/jpeg' | 'image/png' | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  return undefined;
}

function checked(bytes: Buffer, param: string, maxBytes: number): InlineImage {
  if (bytes.length === 0) throw invalidField(param, `${param} is empty`);
  if (bytes.length > maxBytes) throw invalidField(param, `${param} is ${bytes.length} bytes; images may be at most ${maxBytes} bytes`);
  const mimeType = sniffImage(bytes);
  if (!mimeType) throw invalidField(param, `${param} is not a JPEG or PNG image (checked by its content, not its declared type)`);
  return { kind: 'inline', mimeType, data: bytes, param };
}

/** Decodes `data:image/png;base64,…`; the declared type must be an image, the bytes must really be JPEG or PNG. */
export function decodeDataUrl(url: string, param: string, maxBytes: number): InlineImage {
  const m = /^data:([^;,]*)(;[^,]*)?,(.*)$/s.exec(url);
  if (!m || !/;base64$/i.test(m[2] ?? '')) throw invalidField(param, `${param} must be a base64 data URL (data:image/png;base64,…)`);
  if (!/^image\/(jpeg|jpg|png)$/i.test(m[1] ?? '')) throw invalidField(param, `${param} must be image/jpeg or image/png, not ${m[1] || 'unspecified'}`);
  const b64 = (m[3] ?? '').replace(/\s+/g, '');
  // Refuse before decoding when the text alone shows the image is too big.
  if (Math.floor((b64.length * 3) / 4) - 2 > maxBytes) throw invalidField(param, `${param} is larger than ${maxBytes} bytes`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) throw invalidField(param, `${param} is not valid base64`);
  return checked(Buffer.from(b64, 'base64'), param, maxBytes);
}

/** Addresses a fetched URL may not reach: loopback, private, link-local, CGNAT, multicast, reserved. */
function privateRanges(): BlockList {
  const list = new BlockList();
  for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
    ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
    list.addSubnet(net, bits, 'ipv4');
  }
  // ::/96 covers ::, ::1 and the deprecated IPv4-compatible form (::127.0.0.1); 64:ff9b::/96 and 64:ff9b:1::/48 are
  // NAT64 (a translator reaches the embedded IPv4 for us); 2001::/32 is Teredo; 100::/64 discard; 2001:db8::/32 docs.
  for (const [net, bits] of [['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['64:ff9b::', 96],
    ['64:ff9b:1::', 48], ['2001::', 32], ['100::', 64], ['2001:db8::', 32]] as const) {
    list.addSubnet(net, bits, 'ipv6');
  }
  return list;
}

/** The eight 16-bit groups of an IPv6 address (any spelling, a trailing dotted IPv4 included), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const groups = tail === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 address an IPv6 one carries and reaches: mapped (::ffff:a.b.c.d), translated (::ffff:0:a.b.c.d), 6to4 (2002:AABB:CCDD::). */
function embeddedIpv4(g: number[]): string | undefined {
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6] ?? 0, g[7] ?? 0);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6] ?? 0, g[7] ?? 0);
  if (g[0] === 0x2002) return v4(g[1] ?? 0, g[2] ?? 0);
  return undefined;
}

/**
 * True for an address the gateway must not fetch from, in any spelling: IPv4 ranges
 * above, the IPv6 ones, and IPv6 forms that carry a private IPv4 address inside.
 * Anything that is not an IP address is refused too.
 */
export function isPrivateAddress(address: string, ranges: BlockList = privateRanges()): boolean {
  const family = isIP(address);
  if (family === 4) return ranges.check(address, 'ipv4');
  const groups = family === 6 ? ipv6Groups(address) : undefined;
  if (!groups) return true;
  const inner = embeddedIpv4(groups);
  if (inner !== undefined) return ranges.check(inner, 'ipv4');
  return ranges.check(groups.map((x) => x.toString(16)).join(':'), 'ipv6');
}

/**
 * Downloads reference images for the gateway: https only (unless allowed), no
 * redirects, a size cap enforced while reading, a time cap, and a DNS lookup that
 * refuses private addresses at connect time (so a name cannot rebind to one between
 * check and connect), unless the host is allow-listed.
 */
export class ImageFetcher {
  private readonly agent: Agent;
  private readonly ranges = privateRanges();

  constructor(private readonly cfg: MusicSettings['image_fetch']) {
    const allowed = new Set(cfg.allow_hosts.map((h) => h.toLowerCase()));
    const guardedLookup: LookupFunction = (hostname, options, callback) => {
      lookup(hostname, { ...options, all: true }, (err, addresses) => {
        if (err) return callback(err, '', 0);
        const list = addresses as Array<{ address: string; family: number }>;
        const usable = allowed.has(hostname.toLowerCase()) ? list : list.filter((a) => !isPrivateAddress(a.address, this.ranges));
        const first = usable[0];
        if (!first) return callback(Object.assign(new Error(`${hostname} resolves only to private addresses`), { code: 'EPRIVATE' }), '', 0);
        if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof usable) => void)(null, usable);
        return callback(null, first.address, first.family);
      });
    };
    this.agent = new Agent({ connect: { lookup: guardedLookup, timeout: cfg.timeout_ms }, headersTimeout: cfg.timeout_ms, bodyTimeout: cfg.timeout_ms });
  }

  async fetch(url: string, param: string): Promise<InlineImage> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw invalidField(param, `${param} is not a valid URL`);
    }
    if (target.protocol !== 'https:' && !(this.cfg.allow_http && target.protocol === 'http:')) {
      throw invalidField(param, `${param} must be an https:// URL`);
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && isPrivateAddress(host, this.ranges) && !this.cfg.allow_hosts.includes(host)) {
      throw invalidField(param, `${param} points at a private address, which the gateway does not fetch`);
    }
    const signal = AbortSignal.timeout(this.cfg.timeout_ms);
    try {
      const res = await this.agent.request({ origin: target.origin, path: target.pathname + target.search, method: 'GET', signal, headers: { accept: 'image/jpeg, image/png' } });
      if (res.statusCode >= 300 && res.statusCode < 400) {
        await res.body.dump();
        throw invalidField(param, `${param} answered with a redirect (${res.statusCode}); redirects are not followed`);
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw invalidField(param, `${param} could not be downloaded: status ${res.statusCode}`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.cfg.max_bytes) {
          res.body.destroy();
          throw invalidField(param, `${param} is larger than ${this.cfg.max_bytes} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
      return checked(Buffer.concat(chunks), param, this.cfg.max_bytes);
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      const code = (err as { code?: string }).code;
      if (code === 'EPRIVATE') throw invalidField(param, `${param} resolves to a private address, which the gateway does not fetch`);
      if (signal.aborted || err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
        throw invalidField(param, `${param} did not download within ${this.cfg.timeout_ms} ms`);
      }
      throw invalidField(param, `${param} could not be downloaded (${code ?? (err as Error).message})`);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
