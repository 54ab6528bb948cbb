/**
 * The UTXO family's transactions as the sender builds them with @scure/btc-signer: P2WPKH inputs signed with their own
 * keys (low-R, BIP-143), RBF signalled, change to the hot wallet unless it would be dust, and the fee exactly the rate
 * for the signed size; and what a stored transaction pays an address (the hot wallet's change on its way back).
 */
import { Transaction } from '@scure/btc-signer';
import type { HDKey } from '@scure/bip32';
import { PermanentTransferError } from '../ports.ts';
import type { NetworkConfig } from '../types.ts';
import { outputScript } from './address.ts';
import { utxoSettings, type UtxoSettings } from './config.ts';

/** Outputs below this many satoshis are not made (dust); change that small goes to the fee. */
export const DUST = 546n;
/** Estimated vbytes of a P2WPKH input, an output, and the transaction's fixed part (sizes are checked after signing). */
export const INPUT_VB = 68n;
export const OUTPUT_VB = 31n;
export const OVERHEAD_VB = 11n;

/** A coin to spend. */
export interface Coin {
  txid: string;
  vout: number;
  address: string;
  amount: bigint;
  /** Key index of a deposit address; null for the hot wallet. */
  index: bigint | null;
}

/** A signed transaction: its id and bytes, its fee and what it pays the destination. */
export interface Built {
  txid: string;
  raw: string;
  fee: bigint;
  sent: bigint;
}

/** Where the keys come from (the network's adapter). */
export interface TransactionKeys {
  readonly network: NetworkConfig;
  hotWalletAddress(): string;
  hotWalletKey(): HDKey;
  depositKey(index: bigint): HDKey;
}

/**
 * Builds and signs a transaction over `coins` (hot wallet's or deposit addresses', each signed with its own key)
 * paying `amount` to `destination` (or everything less the fee, a sweep) at `feeRate` sat/vB, change to the hot wallet.
 */
export function buildTransaction(
  keys: TransactionKeys,
  coins: Coin[],
  destination: string,
  amount: bigint | null,
  feeRate: bigint,
): Built {
  const params = utxoSettings(keys.network).params;
  const total = coins.reduce((s, c) => s + c.amount, 0n);
  const payTo = destinationScript(destination, params);
  const changeTo = outputScript(keys.hotWalletAddress(), params);
  const attempt = (withChange: boolean, fee: bigint) => {
    // Low-R signatures (as Bitcoin Core makes them) are at most 71 bytes, so a re-signed transaction is not longer.
    const tx = new Transaction({ allowUnknownOutputs: false, lowR: true });
    for (const c of coins) {
      tx.addInput({
        txid: c.txid,
        index: c.vout,
        witnessUtxo: { script: outputScript(c.address, params), amount: c.amount },
        sequence: 0xfffffffd,
      });
    }
    const pay = amount ?? total - fee;
    if (pay < DUST) throw new Error(`${pay} units after a fee of ${fee} is below the dust limit`);
    tx.addOutput({ script: payTo, amount: pay });
    const change = total - pay - fee;
    if (withChange) tx.addOutput({ script: changeTo, amount: change });
    for (let i = 0; i < coins.length; i++) {
      const c = coins[i]!;
      tx.signIdx(c.index === null ? keys.hotWalletKey().privateKey! : keys.depositKey(c.index).privateKey!, i);
    }
    tx.finalize();
    return { tx, pay, change };
  };
  // Size with a change output first; drop it when the change would be dust.
  const outputs = amount === null ? 1n : 2n;
  let fee = feeRate * (OVERHEAD_VB + INPUT_VB * BigInt(coins.length) + OUTPUT_VB * outputs);
  const withChange = amount !== null && total - amount - fee >= DUST;
  if (amount !== null && !withChange) fee = total - amount;
  if (amount !== null && total < amount + fee)
    throw new Error(`coins of ${total} cannot pay ${amount} and a fee of ${fee}`);
  let built = attempt(withChange, fee);
  // Then exactly the rate for the signed size (the estimate counts P2WPKH; other destinations are larger). A new
  // fee means new signatures, a byte shorter or longer, so the signed size is checked again until the fee covers it.
  for (let pass = 0; ; pass++) {
    const exact = feeRate * BigInt(built.tx.vsize);
    if (exact === fee || (pass > 0 && exact < fee)) break;
    if (pass === 3) throw new Error(`no fee settles for a transaction of ${built.tx.vsize} vB at ${feeRate} per vB`);
    if (amount === null) {
      fee = exact;
      built = attempt(false, fee);
    } else if (withChange && total - amount - exact >= DUST) {
      fee = exact;
      built = attempt(true, fee);
    } else if (total - amount >= exact) {
      // No change worth an output: the rest is the fee (at least the rate).
      fee = total - amount;
      built = attempt(false, fee);
    } else {
      throw new Error(`coins of ${total} cannot pay ${amount} and a fee of ${exact}`);
    }
  }
  return { txid: built.tx.id, raw: built.tx.hex, fee, sent: built.pay };
}

/** What the raw transaction `raw` (hex) pays the output script `script`, in satoshis. */
export function paidTo(raw: string, script: Uint8Array): bigint {
  const tx = Transaction.fromRaw(Buffer.from(raw, 'hex'), { allowUnknownOutputs: true });
  let amount = 0n;
  for (let i = 0; i < tx.outputsLength; i++) {
    const o = tx.getOutput(i);
    if (o.script && o.amount !== undefined && Buffer.from(o.script).equals(script)) amount += o.amount;
  }
  return amount;
}

/** The output script paying a transfer's destination; an address no script can pay fails the transfer for good. */
function destinationScript(destination: string, params: UtxoSettings['params']): Uint8Array {
  try {
    return outputScript(destination, params);
  } catch (err) {
    throw new PermanentTransferError(`${destination} cannot be paid: ${(err as Error).message}`);
  }
}
