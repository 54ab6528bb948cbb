/** The live-mode address rule of the merchant HTTP client, address by address. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockedRange } from '../../src/core/addresses.ts';

test('refused ranges, IPv4 and IPv6 (including IPv4 embedded in IPv6)', () => {
  const cases: Array<[string, string | null]> = [
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT'],
    ['100.128.0.1', null],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.15.255.255', null],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.0', null],
    ['192.168.1.1', 'private'],
    ['192.0.2.10', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['8.8.8.8', null],
    ['93.184.216.34', null],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:8.8.8.8', null],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::808:808', null],
    ['2002:c0a8:0101::1', 'private'],
    ['2001:db8::1', 'documentation'],
    ['2606:4700:4700::1111', null],
    ['2a00:1450:4001:81c::200e', null],
    ['not-an-ip', 'invalid'],
  ];
  for (const [ip, range] of cases) assert.equal(blockedRange(ip), range, ip);
});
