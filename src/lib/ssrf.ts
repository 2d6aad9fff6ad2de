import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Addresses a webhook may not reach unless `webhooks.allow_private_urls` (SSRF): private, loopback, link-local, unspecified. */
function privateRanges(): BlockList {
  const b = new BlockList();
  for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
    ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) b.addSubnet(net, bits, 'ipv4');
  for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) b.addSubnet(net, bits, 'ipv6');
  return b;
}

/** True for an address a webhook must not reach by default (IPv4-mapped IPv6 is checked as its IPv4). */
export function isPrivateAddress(address: string, ranges: BlockList = privateRanges()): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return ranges.check(mapped[1] as string, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address at all: refuse
  return ranges.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Why a webhook URL is refused, or undefined when it may be used: http(s) only, and
 * unless `allowPrivate`, a host that is — or resolves (every address) to — a public
 * address. Resolved again at each delivery, so a name that later points inside is
 * refused then too.
 */
export async function webhookUrlProblem(raw: string, allowPrivate: boolean, resolve: typeof lookup = lookup): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be http or https';
  if (url.username || url.password) return 'must not carry credentials';
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await resolve(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return `host ${host} does not resolve`;
  }
  const ranges = privateRanges();
  const inside = addresses.find((a) => isPrivateAddress(a, ranges));
  if (inside !== undefined || addresses.length === 0) {
    return `points to a private, loopback or link-local address (${inside ?? 'none'}); set webhooks.allow_private_urls: true to allow it`;
  }
  return undefined;
}
