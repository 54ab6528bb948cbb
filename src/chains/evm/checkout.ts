/**
 * What the EVM family adds to the hosted checkout: two wallet buttons on an EVM coin choice — "Pay with browser
 * wallet" (an EIP-1193 `eth_sendTransaction` of the exact transfer) and, for gasless USDC, "Pay by signature (no gas
 * fee)" (an EIP-3009 authorization signed with `eth_signTypedData_v4`) — their script (static/checkout.js), and the relay
 * endpoint the signature is posted to, `POST /p/<payment_id>/gasless` (gasless.ts), limited per client address as
 * every submission costs RPC calls. The checkout renders the buttons hidden; the script shows them when the browser
 * has a wallet.
 */
import { t } from '../../core/i18n/index.ts';
import { Type } from 'typebox';
import type { CheckoutEndpoint, CheckoutExtension, WalletButton, WalletChoice } from '../plugin.ts';
import type { GaslessAuthorization, GaslessRelay } from './gasless.ts';

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

/** The wallet buttons of an EVM coin choice; none when the coin cannot be sent by a wallet transaction. */
export function walletButtons(c: WalletChoice): WalletButton[] {
  const { network, token } = c;
  if (network.chainId === null) return [];
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

export function checkoutExtension(relay: GaslessRelay): CheckoutExtension {
  return {
    script: new URL('./static/checkout.js', import.meta.url),
    walletButtons,
    endpoints: [gaslessEndpoint(relay)],
  };
}
