/**
 * What the EVM family adds to the hosted checkout: two wallet buttons on an EVM coin choice — "Pay with browser
 * wallet" (an EIP-1193 `eth_sendTransaction` of the exact transfer) and, for gasless USDC, "Pay by signature (no gas
 * fee)" (an EIP-3009 authorization signed with `eth_signTypedData_v4`) — their script (static/checkout.js), and the relay
 * endpoint the signature is posted to, `POST /p/<payment_id>/gasless` (gasless.ts), limited per client address as
 * every submission costs RPC calls. A held coin choice (a manual payment, docs/capture.md) has instead "Authorize with
 * wallet": an EIP-3009 ReceiveWithAuthorization for the escrow's collector, posted to `POST /p/<payment_id>/hold`
 * (holds.ts). The checkout renders the buttons hidden; the script shows them when the browser has a wallet.
 */
import { t } from '../../core/i18n/index.ts';
import { Type } from 'typebox';
import { ApiError, notFound } from '../../core/errors.ts';
import type { CheckoutEndpoint, CheckoutExtension, FamilyContext, WalletButton, WalletChoice } from '../plugin.ts';
import { EvmAdapter } from './adapter.ts';
import type { GaslessAuthorization, GaslessRelay } from './gasless.ts';
import { HoldBody, type EvmHolds, type HoldSubmission } from './holds.ts';

/** NOTE: each submission costs a few RPC calls, so a client address may submit this many per minute. */
export const GASLESS_PER_MINUTE = 20;

const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });
const Seconds = Type.Union([
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  Type.String({ pattern: '^\\d{1,20}$' }),
]);

/** The body of `POST /p/{payment_id}/gasless`: an EIP-3009 TransferWithAuthorization and its signature. */
export const GaslessBody = Type.Object(
  {
    attempt_id: Type.String({ minLength: 1, maxLength: 64 }),
    from: Address,
    to: Address,
    value: Type.String({ pattern: '^\\d{1,78}$' }),
    valid_after: Seconds,
    valid_before: Seconds,
    nonce: Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' }),
    signature: Type.String({ pattern: '^0x([0-9a-fA-F]{2}){65,2048}$' }),
  },
  { additionalProperties: false },
);

/** NOTE: each authorization costs an `eth_call` of the escrow, so a client address may submit this many per minute. */
export const HOLDS_PER_MINUTE = 20;

/** The escrow of a network's holds, where one is configured. */
type HoldsOf = (mode: WalletChoice['mode'], chain: string) => EvmHolds | null;

/**
 * The wallet buttons of an EVM coin choice; none when the coin cannot be sent by a wallet transaction. A held coin
 * choice (a manual payment) has one: "Authorize with wallet", signing the escrow's ReceiveWithAuthorization.
 */
export function walletButtons(c: WalletChoice, holdsOf: HoldsOf = () => null): WalletButton[] {
  const { network, token } = c;
  if (network.chainId === null) return [];
  if (c.hold) {
    const holds = holdsOf(c.mode, network.id);
    if (!holds?.canHold(token)) return [];
    const ask = holds.ask({ attemptId: c.attemptId, payAmount: c.amount, expiresAt: c.expiresAt, hold: c.hold }, token);
    return [
      {
        label: t(c.locale, 'wallet.authorize'),
        data: {
          hold: `/p/${c.paymentId}/hold`,
          attempt: c.attemptId,
          chain: `0x${network.chainId.toString(16)}`,
          token: token.contract!,
          to: ask.collector,
          value: ask.value.toString(),
          'valid-before': String(ask.validBefore),
          nonce: ask.nonce,
        },
      },
    ];
  }
  const chain = `0x${network.chainId.toString(16)}`;
  const tx =
    token.kind === 'native'
      ? { to: c.address, value: `0x${c.amount.toString(16)}`, data: '' }
      : token.contract
        ? {
            to: token.contract,
            value: '0x0',
            data: `0xa9059cbb${c.address.slice(2).toLowerCase().padStart(64, '0')}${c.amount.toString(16).padStart(64, '0')}`,
          }
        : null;
  const buttons: WalletButton[] = [];
  if (tx)
    buttons.push({
      label: t(c.locale, 'wallet.browser'),
      data: { wallet: '', chain, to: tx.to, value: tx.value, data: tx.data },
    });
  if (token.gasless && token.contract) {
    buttons.push({
      label: t(c.locale, 'wallet.gasless'),
      data: {
        gasless: `/p/${c.paymentId}/gasless`,
        attempt: c.attemptId,
        chain,
        token: token.contract,
        to: c.address,
        value: c.amount.toString(),
        'valid-before': String(Math.floor(c.expiresAt.getTime() / 1000)),
      },
    });
  }
  return buttons;
}

/** The gasless relay as a checkout endpoint (202 `{ tx_hash, status }`). */
export function gaslessEndpoint(relay: GaslessRelay): CheckoutEndpoint {
  return {
    path: 'gasless',
    body: GaslessBody,
    limit: {
      perMinute: GASLESS_PER_MINUTE,
      message: (seconds) => `Too many signed payments from this address; retry in ${seconds} s.`,
    },
    status: 202,
    handle: (paymentId: string, body: GaslessAuthorization) => relay.submit(paymentId, body),
  };
}

/** Where the checkout posts a payer's signed authorization of a held coin choice (202 `{ hold_id, status }`). */
export function holdEndpoint(
  ctx: Pick<FamilyContext, 'payments' | 'holds' | 'chains'>,
  holdsOf: HoldsOf,
): CheckoutEndpoint {
  return {
    path: 'hold',
    body: HoldBody,
    limit: {
      perMinute: HOLDS_PER_MINUTE,
      message: (seconds) => `Too many authorizations from this address; retry in ${seconds} s.`,
    },
    status: 202,
    handle: async (paymentId: string, body: HoldSubmission) => {
      const choice = await ctx.payments.coinChoice(paymentId, body.attempt_id);
      const holds = typeof choice === 'object' ? holdsOf(choice.mode, choice.chain) : null;
      if (typeof choice === 'object' && !holds)
        throw new ApiError('invalid_state', `${choice.token} cannot be held on this network.`, 'attempt_id');
      const token = typeof choice === 'object' ? (ctx.chains.token(choice.mode, choice.token) ?? null) : null;
      return (holds ?? nowhere).submit(choice, body, token, ctx.holds);
    },
  };
}

/** Answers for a payment or coin choice that does not exist (nothing is asked of any escrow). */
const nowhere = {
  submit: (choice: 'no_payment' | 'no_attempt' | object) => {
    if (choice === 'no_attempt')
      throw new ApiError('invalid_request', 'attempt_id is not a coin choice of this payment.', 'attempt_id');
    throw notFound('payment');
  },
};

export function checkoutExtension(
  relay: GaslessRelay,
  ctx: Pick<FamilyContext, 'payments' | 'holds' | 'chains'>,
): CheckoutExtension {
  const holdsOf: HoldsOf = (mode, chain) => {
    const adapter = ctx.chains.hasAdapter(mode, chain) ? ctx.chains.adapter(mode, chain) : null;
    return adapter instanceof EvmAdapter ? (adapter.holds ?? null) : null;
  };
  return {
    script: new URL('./static/checkout.js', import.meta.url),
    walletButtons: (c) => walletButtons(c, holdsOf),
    endpoints: [gaslessEndpoint(relay), holdEndpoint(ctx, holdsOf)],
  };
}
