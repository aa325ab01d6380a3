import { BlockList, isIP } from 'node:net';

/**
 * Destinations a webhook may never reach when the outbound guard is on (SPEC §4.7): everything
 * that is not a public unicast address. Names are reported in errors and delivery attempt logs.
 */
const IPV4_RANGES: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private (RFC 1918)'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private (RFC 1918)'],
  ['192.0.0.0', 24, 'reserved (IETF protocol assignments)'],
  ['192.0.2.0', 24, 'reserved (documentation)'],
  ['192.88.99.0', 24, 'reserved (6to4 relay)'],
  ['192.168.0.0', 16, 'private (RFC 1918)'],
  ['198.18.0.0', 15, 'reserved (benchmarking)'],
  ['198.51.100.0', 24, 'reserved (documentation)'],
  ['203.0.113.0', 24, 'reserved (documentation)'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const IPV6_RANGES: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  // Mapped and translated forms embed an IPv4 address that could be private: refuse them outright.
  ['::ffff:0:0', 96, 'IPv4-mapped IPv6'],
  ['::', 96, 'IPv4-compatible IPv6 (deprecated)'],
  ['64:ff9b::', 96, 'NAT64'],
  ['64:ff9b:1::', 48, 'NAT64 (local use)'],
  ['100::', 64, 'reserved (discard)'],
  ['2001:db8::', 32, 'reserved (documentation)'],
  ['2002::', 16, '6to4'],
  ['fc00::', 7, 'unique local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local (deprecated)'],
  ['ff00::', 8, 'multicast'],
];

function buildRules(ranges: Array<[string, number, string]>, type: 'ipv4' | 'ipv6'): Array<{ list: BlockList; reason: string }> {
  return ranges.map(([network, prefix, reason]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, type);
    return { list, reason };
  });
}

// Kept per family: Node's BlockList also matches IPv4 addresses against IPv4-mapped IPv6 subnets.
const V4_RULES = buildRules(IPV4_RANGES, 'ipv4');
const V6_RULES = buildRules(IPV6_RANGES, 'ipv6');

/**
 * Why `address` (an IP literal) is refused as a webhook destination, or undefined when it is a
 * public unicast address. A string that is not an IP address is refused too.
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const version = isIP(bare);
  if (version === 0) return 'not an IP address';
  const rules = version === 4 ? V4_RULES : V6_RULES;
  const type = version === 4 ? 'ipv4' : 'ipv6';
  return rules.find((rule) => rule.list.check(bare, type))?.reason;
}
