import ipaddr from 'ipaddr.js';

/**
 * Destinations a webhook may reach when the outbound guard is on (docs/delivery.md): global unicast
 * addresses only. Classification is ipaddr.js's table of special-purpose ranges (the one express
 * uses for its proxy handling), so loopback, private, link-local, CGNAT, multicast, documentation,
 * benchmarking, translation (NAT64, 6to4, Teredo, IPv4-mapped), ORCHID, segment routing and other
 * reserved ranges are refused without a hand-kept list. IPv6 must also lie in 2000::/3, the only
 * block IANA allocates for global unicast, which refuses the IPv4-compatible `::/96` form and
 * unassigned space as well.
 */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * Why `address` (an IP literal, brackets allowed) is refused as a webhook destination, or
 * undefined when it is a global unicast address. A string that is not an IP address is refused too.
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  // isValid accepts forms like "127.1" and "0x7f.1" that URL parsing and connect() also accept.
  if (!ipaddr.isValid(bare) || bare.includes('%')) return 'not an IP address';
  const parsed = ipaddr.parse(bare);
  const range = parsed.range();
  if (range !== 'unicast') return describeRange(range);
  if (parsed.kind() === 'ipv6' && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)) return 'not global unicast IPv6';
  return undefined;
}

const RANGE_NAMES: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
  uniqueLocal: 'unique local',
  ipv4Mapped: 'IPv4-mapped IPv6',
  rfc6145: 'IPv4-translated IPv6',
  rfc6052: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
};

function describeRange(range: string): string {
  return RANGE_NAMES[range] ?? `special-purpose (${range})`;
}

/** Names that never lead to a public host: loopback names, mDNS, private-use and invalid TLDs. */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|localdomain|home\.arpa|invalid|lan)\.?$/i;

/**
 * Why a webhook URL is refused at creation under the outbound guard, judged from the URL alone
 * (no DNS): a literal non-public address (in any form the URL parser accepts: `127.1`,
 * `[::ffff:7f00:1]`), a local name (`localhost`, `*.local`, `*.internal`, …) or a single-label
 * name that only a local resolver could answer. Undefined when nothing is wrong on its face; the
 * connect-time check still judges every resolved address.
 */
export function destinationProblem(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (ipaddr.isValid(host)) {
    const reason = forbiddenAddressReason(host);
    return reason === undefined ? undefined : `must not point at a non-public address (${reason})`;
  }
  if (LOCAL_NAME.test(host)) return 'must not point at a local host name';
  if (!host.replace(/\.$/, '').includes('.')) return 'must name a public host (a fully qualified domain name)';
  return undefined;
}
