/**
 * Which network an IP address belongs to, for the rule that live-mode requests to merchant URLs never reach a
 * private network (SSRF), and for loopback checks. Addresses are parsed by ipaddr.js; the table below names the
 * refused ranges, and IPv4 addresses carried inside IPv6 (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are judged by
 * the IPv4 address they carry.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

const cidrs = (...list: string[]): Range[] => list.map((c) => ipaddr.parseCIDR(c));

/** Refused ranges by name (names are what the webhook attempt log shows). */
const REFUSED: Record<string, Range[]> = {
  unspecified: cidrs('0.0.0.0/8', '::/128'),
  loopback: cidrs('127.0.0.0/8', '::1/128'),
  private: cidrs('10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'),
  CGNAT: cidrs('100.64.0.0/10'),
  'link-local': cidrs('169.254.0.0/16', 'fe80::/10'),
  reserved: cidrs('192.0.0.0/24', '240.0.0.0/4'),
  documentation: cidrs('192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24', '2001:db8::/32'),
  benchmarking: cidrs('198.18.0.0/15'),
  multicast: cidrs('224.0.0.0/4', 'ff00::/8'),
  'NAT64 local-use': cidrs('64:ff9b:1::/48'),
  discard: cidrs('100::/64'),
  'site-local': cidrs('fec0::/10'),
  'unique-local': cidrs('fc00::/7'),
};

const [NAT64] = cidrs('64:ff9b::/96');
const [SIX_TO_FOUR] = cidrs('2002::/16');
const [V4_COMPATIBLE] = cidrs('::/96');

const named = (addr: ipaddr.IPv4 | ipaddr.IPv6): string | null => ipaddr.subnetMatch(addr, REFUSED, '') || null;

const v4Of = (hi: number, lo: number) => ipaddr.fromByteArray([hi >> 8, hi & 255, lo >> 8, lo & 255]) as ipaddr.IPv4;

/** The IPv4 address an IPv6 address carries, and what to call it when that one is public; null when it carries none. */
function embedded(a: ipaddr.IPv6): { v4: ipaddr.IPv4; otherwise: string | null } | null {
  const p = a.parts;
  if (a.isIPv4MappedAddress() || a.match(NAT64!)) return { v4: v4Of(p[6]!, p[7]!), otherwise: null };
  if (a.match(SIX_TO_FOUR!)) return { v4: v4Of(p[1]!, p[2]!), otherwise: null };
  // IPv4-compatible addresses are deprecated: refused even when the IPv4 address is public.
  if (a.match(V4_COMPATIBLE!)) return { v4: v4Of(p[6]!, p[7]!), otherwise: 'reserved' };
  return null;
}

/**
 * The name of the refused range `ip` lies in (`loopback`, `private`, …), or null when it is a public address.
 * Anything that is not an IP address is refused as `invalid`. An IPv6 zone id (`%eth0`) is ignored.
 */
export function blockedRange(ip: string): string | null {
  const bare = ip.replace(/%.*$/, '');
  if (isIP(bare) === 0) return 'invalid';
  const addr = ipaddr.parse(bare);
  const own = named(addr);
  if (addr.kind() === 'ipv4' || own === 'unspecified' || own === 'loopback') return own;
  const inner = embedded(addr as ipaddr.IPv6);
  return inner ? (named(inner.v4) ?? inner.otherwise) : own;
}
