/**
 * What the Solana family adds to the hosted checkout: on a Solana coin choice served by a running adapter, "Pay with
 * Solana wallet" (the wallet signs and sends the transaction Kasse builds) and, for gasless USDC, "Pay USDC by
 * signature (no SOL needed)" (the wallet only signs; Kasse's hot wallet is the fee payer); their script
 * (static/wallet.js, Wallet Standard discovery), and two endpoints on the checkout host (no key; the payment id in
 * the path):
 *   POST /p/<id>/solana/transaction   { attempt_id, account, gasless? } → 200 { transaction, fee_payer, … }: the
 *                                     unsigned transaction paying that coin choice (gasless.ts)
 *   POST /p/<id>/solana/relay         { attempt_id, transaction } → 202 { signature, status }: a payer-signed
 *                                     gasless USDC payment, checked, co-signed and sent
 * Both cost RPC calls, so a client address may make RELAY_PER_MINUTE of each a minute (429 `rate_limited`).
 * Refusals are 400/404/422 Error bodies naming the field, and change nothing.
 */
import { t } from '../../core/i18n/index.ts';
import { Type } from 'typebox';
import { ApiError, invalid, notFound } from '../../core/errors.ts';
import type { Clock } from '../../core/clock.ts';
import type { Mode } from '../../core/mode.ts';
import type { CheckoutEndpoint, CheckoutExtension, WalletButton, WalletChoice } from '../plugin.ts';
import type { PaymentsPort } from '../ports.ts';
import type { ChainRegistry } from '../registry.ts';
import type { SolanaAdapter } from './adapter.ts';
import { buildPayment, RelayService, type PayableAttempt } from './gasless.ts';

/** NOTE: each request costs RPC calls; like the EVM relay, a client address may make this many a minute. */
export const RELAY_PER_MINUTE = 20;

/** Wallet Standard chain id of a mode's cluster. */
export function clusterOf(mode: Mode): string {
  return mode === 'live' ? 'solana:mainnet' : 'solana:devnet';
}

const BuildBody = Type.Object(
  {
    attempt_id: Type.String({ minLength: 1, maxLength: 64 }),
    account: Type.String({ minLength: 32, maxLength: 44 }),
    gasless: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const RelayBody = Type.Object(
  {
    attempt_id: Type.String({ minLength: 1, maxLength: 64 }),
    transaction: Type.String({ minLength: 1, maxLength: 4096 }),
  },
  { additionalProperties: false },
);

export interface SolanaCheckoutDeps {
  clock: Clock;
  chains: ChainRegistry;
  payments: PaymentsPort;
  /** The family's running adapter of a network, if any. */
  adapter(mode: Mode, chain: string): SolanaAdapter | null;
}

/** The wallet buttons of a Solana coin choice; none when no adapter serves its network (nothing could build the transaction). */
function walletButtons(deps: SolanaCheckoutDeps, c: WalletChoice): WalletButton[] {
  const { network, token } = c;
  const adapter = deps.adapter(c.mode, network.id);
  if (!adapter || !(token.kind === 'native' || (token.kind === 'spl' && token.contract))) return [];
  const data = { base: `/p/${c.paymentId}/solana`, attempt: c.attemptId, cluster: clusterOf(c.mode) };
  const buttons: WalletButton[] = [{ label: t(c.locale, 'wallet.solana'), data: { 'solana-pay': '', ...data } }];
  if (token.gasless && token.kind === 'spl')
    buttons.push({
      label: t(c.locale, 'wallet.sign_without_fee', { symbol: token.symbol }),
      data: { 'solana-gasless': '', ...data },
    });
  return buttons;
}

/** The open coin choice `attemptId` of payment `paymentId` on a Solana network, with its adapter. */
async function payable(
  deps: SolanaCheckoutDeps,
  paymentId: string,
  attemptId: string,
): Promise<{ adapter: SolanaAdapter; attempt: PayableAttempt }> {
  const found = await deps.payments.coinChoice(paymentId, attemptId);
  if (found === 'no_payment') throw notFound('payment');
  if (found === 'no_attempt') throw invalid('attempt_id is not a coin choice of this payment.', 'attempt_id');
  const adapter = deps.adapter(found.mode, found.chain);
  const token = deps.chains.token(found.mode, found.token);
  if (!adapter || !token)
    throw new ApiError('invalid_state', `${found.token} cannot be paid from a Solana wallet.`, 'attempt_id');
  const open = found.open && found.expiresAt.getTime() > deps.clock.now().getTime();
  return {
    adapter,
    attempt: { id: found.attemptId, paymentId, token, address: found.address, payAmount: found.payAmount, open },
  };
}

function endpoints(deps: SolanaCheckoutDeps): CheckoutEndpoint[] {
  const limit = {
    perMinute: RELAY_PER_MINUTE,
    message: (seconds: number) => `Too many wallet payments from this address; retry in ${seconds} s.`,
  };
  return [
    {
      path: 'solana/transaction',
      body: BuildBody,
      limit,
      status: 200,
      handle: async (paymentId: string, body: { attempt_id: string; account: string; gasless?: boolean }) => {
        const { adapter, attempt } = await payable(deps, paymentId, body.attempt_id);
        return buildPayment(adapter, attempt, body.account, { gasless: body.gasless === true });
      },
    },
    {
      path: 'solana/relay',
      body: RelayBody,
      limit,
      status: 202,
      handle: async (paymentId: string, body: { attempt_id: string; transaction: string }) => {
        const { adapter, attempt } = await payable(deps, paymentId, body.attempt_id);
        return new RelayService(adapter).submit(attempt, body.transaction);
      },
    },
  ];
}

export function checkoutExtension(deps: SolanaCheckoutDeps): CheckoutExtension {
  return {
    script: new URL('./static/wallet.js', import.meta.url),
    walletButtons: (c) => walletButtons(deps, c),
    endpoints: endpoints(deps),
  };
}
