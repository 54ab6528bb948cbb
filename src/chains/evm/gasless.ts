/**
 * Gasless USDC: the payer signs an EIP-3009 `TransferWithAuthorization` for exactly the coin choice's amount to its
 * deposit address, and Kasse's hot wallet submits `transferWithAuthorization` and pays the gas. The watcher then sees
 * the token's Transfer like any other deposit; nothing here touches the payment's state.
 *
 * Every check runs before anything is written, so a refusal changes nothing: the coin choice is gasless USDC on an
 * EVM network with a sender, still open, `to` is its deposit address, `value` its `pay_amount`, the validity window
 * lies inside its price hold, the nonce is unused (on chain and in `evm_gasless`), the signature is the payer's, the
 * payer holds the amount, and an `eth_call` of the exact transaction succeeds. Only then is the relay recorded (in a
 * transaction holding an advisory lock on the coin choice, so one coin choice gets at most one open relay) and
 * pushed through the crash-safe sender (sender.ts): signed and stored, then broadcast. The coin choice is read
 * through the PaymentsPort. Rules: docs/evm.md ("Gasless USDC").
 */
import {
  concat,
  decodeErrorResult,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  keccak256,
  parseAbi,
  parseSignature,
  recoverAddress,
  size,
  type Address,
  type Hex,
} from 'viem';
import { sql } from 'kysely';
import { ApiError, invalid, notFound } from '../../core/errors.ts';
import { ulid } from '../../core/ids.ts';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, type Db, type DbOrTx, isUniqueViolation } from '../../db/index.ts';
import type { PaymentsPort } from '../ports.ts';
import type { ChainRegistry } from '../registry.ts';
import { EvmAdapter } from './adapter.ts';
import { erc20Abi } from './contracts.ts';
import { revertData } from './transfer.ts';

/** The body of `POST /p/{payment_id}/gasless`: an EIP-3009 TransferWithAuthorization and its signature. */
export interface GaslessAuthorization {
  attempt_id: string;
  from: string;
  to: string;
  /** Smallest units, decimal string. */
  value: string;
  /** Unix seconds (integer or decimal string). */
  valid_after: number | string;
  valid_before: number | string;
  /** bytes32, 0x-hex. */
  nonce: string;
  /** 65-byte ECDSA signature, or an ERC-1271 signature of a smart wallet. */
  signature: string;
}

/** The 202 answer: the relay transaction's hash (null while the hot wallet cannot sign yet) and its transfer status. */
export interface GaslessResult {
  tx_hash: string | null;
  status: 'pending' | 'signed' | 'broadcast' | 'sent' | 'failed';
}

export interface GaslessDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  chains: ChainRegistry;
  payments: PaymentsPort;
}

/** keccak256("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)") */
export const TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
  new TextEncoder().encode(
    'TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)',
  ),
);

/** EIP-3009 parts beyond contracts.ts: the (v, r, s) overload every USDC version has, the domain, and the errors. */
export const eip3009Abi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'error AuthorizationNotYetValid()',
  'error AuthorizationExpired()',
  'error AuthorizationAlreadyUsed()',
  'error InvalidSignature()',
  'error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)',
  'error Error(string)',
]);

const refuse = (message: string, param: string) => invalid(message, param);
const impossible = (message: string, param: string | null) => new ApiError('invalid_state', message, param);

export class GaslessRelay {
  constructor(private readonly deps: GaslessDeps) {}

  /** Checks an authorization for a coin choice of `paymentId` and relays it; throws ApiError (400/404/422) on refusal. */
  async submit(paymentId: string, body: GaslessAuthorization): Promise<GaslessResult> {
    const { db, clock, chains } = this.deps;
    const attempt = await this.deps.payments.coinChoice(paymentId, body.attempt_id);
    if (attempt === 'no_payment') throw notFound('payment');
    if (attempt === 'no_attempt') throw refuse('attempt_id is not a coin choice of this payment.', 'attempt_id');
    const mode = attempt.mode;
    const token = chains.token(mode, attempt.token);
    const adapter = chains.hasAdapter(mode, attempt.chain) ? chains.adapter(mode, attempt.chain) : null;
    const sender = adapter instanceof EvmAdapter ? adapter.sender : undefined;
    if (!token?.gasless || token.kind !== 'erc20' || !token.contract || !(adapter instanceof EvmAdapter) || !sender) {
      throw impossible(`${attempt.token} cannot be paid by signature; send the coins instead.`, 'attempt_id');
    }
    const from = getAddress(body.from);
    const contract = getAddress(token.contract);
    const value = BigInt(body.value);
    const validAfter = BigInt(body.valid_after);
    const validBefore = BigInt(body.valid_before);
    const nonce = body.nonce.toLowerCase() as Hex;
    const signature = body.signature as Hex;
    const key = {
      mode,
      chain: attempt.chain,
      contract: contract.toLowerCase(),
      authorizer: from.toLowerCase(),
      auth_nonce: nonce,
    };
    const earlier = await this.submitted(key);
    if (
      earlier &&
      earlier.attempt_id === attempt.attemptId &&
      earlier.signature.toLowerCase() === signature.toLowerCase() &&
      BigInt(earlier.value) === value &&
      BigInt(earlier.valid_before) === validBefore &&
      BigInt(earlier.valid_after) === validAfter
    ) {
      // The same request again (a retried POST): answer what the first one started, whatever happened since.
      return { tx_hash: earlier.status === 'pending' ? null : earlier.tx_hash, status: earlier.status };
    }

    const now = clock.now();
    if (!attempt.open || attempt.expiresAt.getTime() <= now.getTime()) {
      throw impossible('This coin choice is no longer open for payment; choose the coin again.', 'attempt_id');
    }
    if (body.to.toLowerCase() !== attempt.address.toLowerCase())
      throw refuse(`to must be the deposit address ${attempt.address} of this coin choice.`, 'to');
    const to = getAddress(attempt.address);
    if (value !== attempt.payAmount)
      throw refuse(`value must be exactly the pay_amount ${attempt.payAmount}.`, 'value');
    const nowSeconds = BigInt(Math.floor(now.getTime() / 1000));
    const holdEnd = BigInt(Math.floor(attempt.expiresAt.getTime() / 1000));
    if (validBefore > holdEnd)
      throw refuse(
        `valid_before must not be later than the coin choice's expires_at (${holdEnd}, ${attempt.expiresAt.toISOString()}).`,
        'valid_before',
      );
    if (validBefore <= nowSeconds) throw refuse('valid_before has passed; sign a new authorization.', 'valid_before');
    if (validAfter > nowSeconds) throw refuse('valid_after must not be in the future.', 'valid_after');
    if (earlier) throw refuse('This authorization nonce was already submitted.', 'nonce');
    await this.assertNoOpenRelay(attempt.attemptId);

    // Chain checks (RPC; no transaction is open).
    const rpc = adapter.rpc();
    const call = async <T>(data: Hex, decode: (out: Hex) => T): Promise<T> =>
      decode(await rpc.request<Hex>('eth_call', [{ to: contract, data }, 'latest']));
    const used = await call(
      encodeFunctionData({ abi: erc20Abi, functionName: 'authorizationState', args: [from, nonce] }),
      (out) => decodeFunctionResult({ abi: erc20Abi, functionName: 'authorizationState', data: out }),
    );
    if (used) throw refuse('This authorization nonce was already used or cancelled on chain.', 'nonce');
    const domain = await call(encodeFunctionData({ abi: eip3009Abi, functionName: 'DOMAIN_SEPARATOR' }), (out) =>
      decodeFunctionResult({ abi: eip3009Abi, functionName: 'DOMAIN_SEPARATOR', data: out }),
    );
    const digest = authorizationDigest(domain, { from, to, value, validAfter, validBefore, nonce });
    const ecdsa = size(signature) === 65;
    const signer = ecdsa ? await recoverAddress({ hash: digest, signature }).catch(() => null) : null;
    if (signer !== from) {
      // Only a smart wallet (code at `from`, ERC-1271) may sign otherwise; the simulation below decides for it.
      const code = await rpc.request<Hex>('eth_getCode', [from, 'latest']);
      if (!code || code === '0x')
        throw refuse('signature is not a TransferWithAuthorization signed by from for these values.', 'signature');
    }
    const balance = await call(encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [from] }), (out) =>
      decodeFunctionResult({ abi: erc20Abi, functionName: 'balanceOf', data: out }),
    );
    if (balance < value)
      throw impossible(`from holds ${balance} of ${token.id}, less than the ${value} authorized.`, 'from');

    const data = ecdsa
      ? encodeVrs(from, to, value, validAfter, validBefore, nonce, signature)
      : encodeFunctionData({
          abi: erc20Abi,
          functionName: 'transferWithAuthorization',
          args: [from, to, value, validAfter, validBefore, nonce, signature],
        });
    try {
      await rpc.request('eth_call', [{ from: sender.address, to: contract, data }, 'latest']);
    } catch (err) {
      const reason = revertReason(err);
      if (reason === null) throw err;
      throw simulationRefusal(reason);
    }

    // Record the relay; a transaction-scoped advisory lock on the coin choice serializes its relays.
    const id = `gsl_${ulid()}`;
    try {
      await withTx(db, async (tx) => {
        await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`kasse/gasless/${attempt.attemptId}`}, 0))`.execute(
          tx,
        );
        await this.assertNoOpenRelay(attempt.attemptId, tx);
        await sender.record(tx, {
          id,
          purpose: 'gasless',
          to: contract,
          value: 0n,
          data,
          token: token.id,
          destination: to,
          amount: value,
        });
        await tx
          .insertInto('evm_gasless')
          .values({
            transfer_id: id,
            ...key,
            payment_id: paymentId,
            attempt_id: attempt.attemptId,
            value: value.toString(),
            valid_after: validAfter.toString(),
            valid_before: validBefore.toString(),
            signature,
            created_at: now,
          })
          .execute();
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw refuse('This authorization nonce was already submitted.', 'nonce');
      throw err;
    }
    this.deps.log.info(
      { transferId: id, paymentId, attemptId: attempt.attemptId, chain: attempt.chain, mode },
      'gasless authorization accepted',
    );

    const row = await sender.pushOrLeave(id);
    return { tx_hash: row.status === 'pending' ? null : row.tx_hash, status: row.status };
  }

  /** The relay Kasse already made of this authorization, if any. */
  private async submitted(key: {
    mode: Mode;
    chain: string;
    contract: string;
    authorizer: string;
    auth_nonce: string;
  }) {
    return this.deps.db
      .selectFrom('evm_gasless as g')
      .innerJoin('evm_transfers as t', 't.id', 'g.transfer_id')
      .select(['g.attempt_id', 'g.signature', 'g.value', 'g.valid_after', 'g.valid_before', 't.status', 't.tx_hash'])
      .where('g.mode', '=', key.mode)
      .where('g.chain', '=', key.chain)
      .where('g.contract', '=', key.contract)
      .where('g.authorizer', '=', key.authorizer)
      .where('g.auth_nonce', '=', key.auth_nonce)
      .executeTakeFirst();
  }

  /** 422 when the coin choice already has a relay that has not failed (one signature pays a coin choice once). */
  private async assertNoOpenRelay(attemptId: string, db: DbOrTx = this.deps.db): Promise<void> {
    const open = await db
      .selectFrom('evm_gasless as g')
      .innerJoin('evm_transfers as t', 't.id', 'g.transfer_id')
      .select(['t.status', 't.tx_hash'])
      .where('g.attempt_id', '=', attemptId)
      .where('t.status', '<>', 'failed')
      .executeTakeFirst();
    if (open)
      throw impossible(
        `This coin choice is already being paid by signature${open.tx_hash ? ` (transaction ${open.tx_hash})` : ''}.`,
        'attempt_id',
      );
  }
}

/** An EIP-3009 TransferWithAuthorization's fields. */
export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/** The EIP-712 digest a TransferWithAuthorization signs, in the token's domain (its DOMAIN_SEPARATOR). */
export function authorizationDigest(
  domainSeparator: Hex,
  a: Authorization,
  typehash: Hex = TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
): Hex {
  return keccak256(
    concat([
      '0x1901',
      domainSeparator,
      keccak256(
        encodeAbiParameters(
          [
            { type: 'bytes32' },
            { type: 'address' },
            { type: 'address' },
            { type: 'uint256' },
            { type: 'uint256' },
            { type: 'uint256' },
            { type: 'bytes32' },
          ],
          [typehash, a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce],
        ),
      ),
    ]),
  );
}

export function encodeVrs(
  from: Address,
  to: Address,
  value: bigint,
  validAfter: bigint,
  validBefore: bigint,
  nonce: Hex,
  signature: Hex,
): Hex {
  const { r, s, v, yParity } = parseSignature(signature);
  const vNum = v !== undefined ? Number(v) : yParity + 27;
  return encodeFunctionData({
    abi: eip3009Abi,
    functionName: 'transferWithAuthorization',
    args: [from, to, value, validAfter, validBefore, nonce, vNum, r, s],
  });
}

/** What a reverted simulation says (the node's message, a decoded custom error or reason string); null if it did not revert. */
export function revertReason(err: unknown): string | null {
  if (!(err instanceof Error) || !/revert/i.test(err.message)) return null;
  const data = revertData(err);
  if (data && data.length >= 10) {
    try {
      const decoded = decodeErrorResult({ abi: eip3009Abi, data });
      return decoded.errorName === 'Error' ? String(decoded.args?.[0] ?? '') : decoded.errorName;
    } catch {
      // an error this ABI does not know; fall back to the node's message
    }
  }
  return err.message;
}

/** Maps a revert reason (TestUSDC custom errors, FiatToken reason strings) to the field it concerns. */
function simulationRefusal(reason: string): ApiError {
  const text = `The authorization would fail on chain: ${reason}`;
  if (/not ?yet ?valid/i.test(reason)) return refuse(text, 'valid_after');
  if (/expired/i.test(reason)) return refuse(text, 'valid_before');
  if (/already ?used|used or cancel|cancell?ed/i.test(reason)) return refuse(text, 'nonce');
  if (/signature/i.test(reason)) return refuse(text, 'signature');
  if (/balance|blacklist/i.test(reason)) return impossible(text, 'from');
  return impossible(text, null);
}
