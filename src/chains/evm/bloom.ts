/**
 * Ethereum log blooms (the 2048-bit `logsBloom` of a block header): a cheap, false-positive-only test of whether a
 * block may hold a log from an address with a topic. The watcher uses it to catch an RPC node that answered
 * `eth_getLogs` for a range without the logs of a block it did not have yet.
 */
import { hexToBytes, keccak256, type Hex } from 'viem';

/** Whether `bloom` may contain `item` (an address or a topic, as hex bytes). False means certainly not. */
export function bloomMayContain(bloom: Hex, item: Hex): boolean {
  const bits = hexToBytes(bloom);
  if (bits.length !== 256) return true;
  const hash = hexToBytes(keccak256(item));
  for (let i = 0; i < 6; i += 2) {
    const bit = ((hash[i]! << 8) | hash[i + 1]!) & 2047;
    if ((bits[255 - (bit >> 3)]! & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}
