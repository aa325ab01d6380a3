import ipaddr from 'ipaddr.js';

/**
 * The proxies whose `X-Forwarded-For` the service believes (TRUST_PROXY, docs/configuration.md):
 * addresses and CIDR ranges, IPv4 and IPv6. Empty: nobody's, the caller is the socket's peer.
 */
export interface TrustProxy {
  trusts(address: string): boolean;
  readonly empty: boolean;
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** `10.0.0.0/8, 192.168.1.7, ::1, loopback`: the ranges, or the first entry that is none (for the config error). */
export function parseTrustProxy(text: string | undefined): TrustProxy | { invalid: string } {
  const ranges: Range[] = [];
  for (const raw of (text ?? '').split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    if (entry === 'loopback') {
      ranges.push(ipaddr.parseCIDR('127.0.0.0/8'), ipaddr.parseCIDR('::1/128'));
      continue;
    }
    try {
      ranges.push(entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.parse(entry), ipaddr.parse(entry).kind() === 'ipv4' ? 32 : 128]);
    } catch {
      return { invalid: entry };
    }
  }
  return {
    empty: ranges.length === 0,
    trusts(address) {
      const parsed = parseAddress(address);
      if (!parsed) return false;
      return ranges.some(([base, bits]) => {
        const candidate = parsed.kind() === base.kind() ? parsed : parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : undefined;
        return candidate !== undefined && candidate.kind() === base.kind() && candidate.match([base, bits] as never);
      });
    },
  };
}

function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = address.trim().replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return undefined;
  const parsed = ipaddr.parse(bare);
  return parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
}

/**
 * The caller's address: the socket's peer, or, while that peer is a trusted proxy, the hop it
 * names in `X-Forwarded-For` (read from the right, the entry the proxy itself appended), and so on
 * until an address that is not trusted. A client can put anything at the left of the header; only
 * what trusted hops appended is believed. A malformed hop stops the walk at the last trusted one.
 */
export function resolveClientAddress(peer: string, forwardedFor: string | undefined, trust: TrustProxy): string {
  if (trust.empty || forwardedFor === undefined) return peer;
  const hops = forwardedFor.split(',').map((h) => h.trim()).filter((h) => h !== '');
  let address = peer;
  while (trust.trusts(address) && hops.length > 0) {
    const next = hops.pop()!;
    const parsed = parseAddress(next);
    if (!parsed) break;
    address = parsed.toString();
  }
  return address;
}
