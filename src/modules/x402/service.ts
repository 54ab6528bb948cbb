/**
 * Kasse as an x402 facilitator (docs/x402.md): `supported`, `verify`, `settle` and `pay_to` for a merchant in a mode,
 * speaking x402 v2 as `HTTPFacilitatorClient` of `@x402/core` sends it. This module does what is the same on every
 * chain; the families do their chain's part through their `X402Scheme` (src/chains/x402.ts).
 *
 * Common checks before a family sees a payload: x402 version 2, scheme `exact`, a network of this mode the families
 * offer, the asset the network's USDC, a positive amount, `payTo` the merchant's x402 address of the network, and the
 * authorization not already claimed in Kasse. Settle claims the authorization with one INSERT on its unique key
 * (network + authorization), so of two requests or processes only one asks the family to submit; the other follows
 * that settlement to the same answer. A settled authorization becomes a `paid` Payment in the transaction that marks
 * its row settled (the row locked), so it is credited once. A crash leaves the row `pending`; the workers role's
 * `resume` submits it again (idempotent in the family) and records it when it lands.
 */
import type { X402Kind, X402Request, X402Requirements, X402Scheme, X402Settlement } from '../../chains/x402.ts';
import type { Clock } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { formatUnits } from '../../core/money.ts';
import { withTx, type Db } from '../../db/index.ts';
import type { Payment, PaymentService } from '../payments/index.ts';
import {
  addToTotal,
  claimSettlement,
  getSettlement,
  lockSettlement,
  markFailed,
  markSettled,
  payToOf,
  savePayTo,
  settlementByKey,
  stalledSettlements,
  type SettlementRow,
} from './store.ts';
import type { FacilitatorBody, SettleResponse, SupportedResponse, VerifyResponse } from './wire.ts';

/** How long `settle` waits for the network's confirmations before answering `settlement_pending`. */
export const SETTLE_WAIT_MS = 60_000;
/** A pending settlement this old is resumed by the workers role (its request is over or its process died). */
export const RESUME_AFTER_MS = SETTLE_WAIT_MS + 5_000;
/** How long a sale's requirements give the client to pay (`maxTimeoutSeconds`), as the official middleware's default. */
const SALE_TIMEOUT_S = 300;
/** Millionths of a dollar per cent (the sub-cent carry, docs/x402.md). */
const MICRO_PER_CENT = 10_000n;

export interface X402Deps {
  db: Db;
  clock: Clock;
  log: Logger;
  payments: PaymentService;
  /** The families' schemes (read when used: families load after the modules are built). */
  schemes: () => X402Scheme[];
}

/** What a settlement row keeps of its request, to submit it again after a crash. */
interface Stored {
  requirements: X402Requirements;
  payload: Record<string, unknown>;
  /** What the Payment records when the settlement sells something of the merchant's own (a payment link). */
  sale?: X402Sale;
}

/** A settlement's own sale: the Payment's order id, description and metadata instead of the x402 defaults. */
export interface X402Sale {
  orderId: string;
  description: string;
  metadata: Record<string, string>;
}

/** A sale's settlement: the answer for the client, the Payment made (or made before, for a replay), and whether the
 * authorization had been claimed before (a replay makes no new sale). */
export interface X402SaleResult {
  response: SettleResponse;
  payment: Payment | null;
  replay: boolean;
}

type Prepared = { scheme: X402Scheme; request: X402Request; resource: Resource } | { refusal: VerifyResponse };

interface Resource {
  url: string | null;
  description: string | null;
}

export class X402Service {
  constructor(private readonly deps: X402Deps) {}

  /** `GET /x402/supported`: every kind of the mode, each with the merchant's `payTo`. */
  async supported(mode: Mode, merchantId: string): Promise<SupportedResponse> {
    const kinds = [];
    for (const { kind } of await this.kinds(mode)) {
      const payTo = await this.payToAddress(mode, merchantId, kind);
      kinds.push({
        x402Version: 2,
        scheme: 'exact',
        network: kind.network,
        extra: { ...kind.extra, payTo, ...(kind.simulated ? { simulated: true } : {}) },
      });
    }
    return { kinds, extensions: [], signers: {} };
  }

  /** The merchant's x402 address on `network` (CAIP-2), or null when the mode offers no such network. */
  async payTo(mode: Mode, merchantId: string, network: string): Promise<string | null> {
    const found = (await this.kinds(mode)).find((k) => k.kind.network === network);
    return found ? this.payToAddress(mode, merchantId, found.kind) : null;
  }

  async verify(mode: Mode, merchantId: string, body: FacilitatorBody): Promise<VerifyResponse> {
    const p = await this.prepare(mode, merchantId, body);
    if ('refusal' in p) return p.refusal;
    const key = p.scheme.key(p.request);
    const earlier = key ? await settlementByKey(this.deps.db, mode, p.request.kind.chain, key) : undefined;
    if (earlier && earlier.status !== 'failed')
      return invalid(p.request.kind.codes.replay, 'This authorization was already settled.', earlier.payer);
    const verdict = await p.scheme.verify(p.request);
    return verdict.valid
      ? { isValid: true, payer: verdict.payer }
      : invalid(verdict.reason, verdict.message, verdict.payer);
  }

  async settle(mode: Mode, merchantId: string, body: FacilitatorBody, sale?: X402Sale): Promise<SettleResponse> {
    return (await this.settleOnce(mode, merchantId, body, sale)).response;
  }

  /**
   * What an agent may pay `cents` US cents to the merchant with: one exact-scheme requirement per network of the mode
   * (the network's USDC, the merchant's payTo, what the client signs with in `extra`).
   */
  async requirements(mode: Mode, merchantId: string, cents: number): Promise<X402Requirements[]> {
    const out: X402Requirements[] = [];
    for (const { kind } of await this.kinds(mode)) {
      if (kind.token.decimals < 2) continue;
      out.push({
        scheme: 'exact',
        network: kind.network,
        amount: (BigInt(cents) * 10n ** BigInt(kind.token.decimals - 2)).toString(),
        asset: kind.token.contract!,
        payTo: await this.payToAddress(mode, merchantId, kind),
        maxTimeoutSeconds: SALE_TIMEOUT_S,
        extra: kind.extra,
      });
    }
    return out;
  }

  /**
   * Settles a sale of the merchant's own (a payment link): `settle` with the sale recorded on the Payment, answering
   * the Payment too, and whether the authorization had already been claimed before this call (a replay: no new sale).
   */
  async sell(mode: Mode, merchantId: string, body: FacilitatorBody, sale: X402Sale): Promise<X402SaleResult> {
    const { response, claimed } = await this.settleOnce(mode, merchantId, body, sale);
    const id = response.success ? response.extra?.payment_id : undefined;
    const payment = typeof id === 'string' ? await this.deps.payments.get({ mode, merchantId }, id) : null;
    return { response, payment, replay: !claimed };
  }

  /** `settle`, also saying whether this call claimed the authorization (false for refusals and followers). */
  private async settleOnce(
    mode: Mode,
    merchantId: string,
    body: FacilitatorBody,
    sale?: X402Sale,
  ): Promise<{ response: SettleResponse; claimed: boolean }> {
    const network = body.paymentRequirements?.network ?? '';
    const refused = (v: VerifyResponse) => ({ response: settleRefusal(v, network), claimed: false });
    const p = await this.prepare(mode, merchantId, body);
    if ('refusal' in p) return refused(p.refusal);
    const { scheme, request } = p;
    const key = scheme.key(request);
    const earlier = key ? await settlementByKey(this.deps.db, mode, request.kind.chain, key) : undefined;
    const replayed = () => refused(invalid(request.kind.codes.replay, 'This authorization was already settled.'));
    if (earlier) {
      if (earlier.merchant_id !== merchantId || !sameRequest(earlier, request)) return replayed();
      return { response: await this.follow(scheme, earlier, request, false), claimed: false };
    }
    const verdict = await scheme.verify(request);
    if (!verdict.valid) return refused(invalid(verdict.reason, verdict.message, verdict.payer));
    const { row, claimed } = await claimSettlement(this.deps.db, {
      id: newId('x4s'),
      merchant_id: merchantId,
      mode,
      chain: request.kind.chain,
      network: request.kind.network,
      auth_key: verdict.key,
      payer: verdict.payer,
      pay_to: request.payTo,
      token: request.kind.token.id,
      amount: request.amount.toString(),
      resource: p.resource.url,
      description: p.resource.description,
      request: {
        requirements: request.requirements,
        payload: request.payload,
        ...(sale ? { sale } : {}),
      } satisfies Stored,
      simulated: request.kind.simulated,
      created_at: this.deps.clock.now(),
    });
    if (!claimed && (row.merchant_id !== merchantId || !sameRequest(row, request))) return replayed();
    return { response: await this.follow(scheme, row, request, claimed), claimed };
  }

  /**
   * Settles what a crash or an expired wait left pending: submits each again (idempotent in the family), and
   * records the ones that landed. Answers how many it looked at.
   */
  async resume(limit = 50): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - RESUME_AFTER_MS);
    const rows = await stalledSettlements(this.deps.db, before, limit);
    for (const row of rows) {
      try {
        const found = (await this.kinds(row.mode)).find((k) => k.kind.chain === row.chain);
        if (!found) continue;
        const stored = row.request as Stored;
        const request: X402Request = {
          mode: row.mode,
          kind: found.kind,
          payTo: row.pay_to,
          amount: BigInt(row.amount),
          requirements: stored.requirements,
          payload: stored.payload,
        };
        await this.finish(row, await found.scheme.settle(request, row.id, this.deps.clock.now()));
      } catch (err) {
        this.deps.log.error({ err: errText(err), settlementId: row.id }, 'x402 settlement could not be resumed');
      }
    }
    return rows.length;
  }

  /** Drives (the claimant) or watches (anyone else) a settlement to its answer. */
  private async follow(
    scheme: X402Scheme,
    row: SettlementRow,
    request: X402Request,
    claimant: boolean,
  ): Promise<SettleResponse> {
    if (row.status !== 'pending') return this.answer(row);
    const deadline = new Date(Date.now() + SETTLE_WAIT_MS);
    let state: X402Settlement;
    if (claimant) state = await scheme.settle(request, row.id, deadline);
    else {
      for (;;) {
        const now = await getSettlement(this.deps.db, row.id);
        if (now && now.status !== 'pending') return this.answer(now);
        state = await scheme.settlement(row.mode, row.chain, row.id);
        if (state.status !== 'pending' || Date.now() >= deadline.getTime()) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    return this.answer(await this.finish(row, state));
  }

  /** Records where a settlement ended: the paid Payment (once, under the row's lock), or its failure. */
  private async finish(row: SettlementRow, state: X402Settlement): Promise<SettlementRow> {
    const now = this.deps.clock.now();
    if (state.status === 'failed') {
      await markFailed(this.deps.db, row.id, {
        transaction: state.transaction,
        error: `${state.reason}: ${state.message}`,
        now,
      });
    } else if (state.status === 'settled') {
      await withTx(this.deps.db, async (tx) => {
        const locked = await lockSettlement(tx, row.id);
        if (!locked || locked.status !== 'pending') return;
        const payTo = await payToOf(tx, locked.merchant_id, locked.mode, locked.chain);
        const amount = BigInt(locked.amount);
        const token = (await this.kinds(locked.mode)).find((k) => k.kind.chain === locked.chain)?.kind.token;
        const decimals = token?.decimals ?? 6;
        const micro = decimals <= 6 ? amount * 10n ** BigInt(6 - decimals) : amount / 10n ** BigInt(decimals - 6);
        const sale = (locked.request as Stored).sale;
        const total = await addToTotal(tx, locked.merchant_id, locked.mode, micro);
        const payment = await this.deps.payments.recordExternal(tx, {
          mode: locked.mode,
          merchantId: locked.merchant_id,
          chain: locked.chain,
          token: locked.token,
          address: locked.pay_to,
          addressIndex: payTo?.index ?? 0n,
          amount,
          priceCents: Number(total.after / MICRO_PER_CENT - total.before / MICRO_PER_CENT),
          orderId: sale?.orderId ?? `x402:${locked.id}`,
          description: sale?.description ?? locked.description,
          ...(sale ? { metadata: sale.metadata } : {}),
          x402: {
            resource: locked.resource,
            description: locked.description,
            payer: locked.payer,
            network: locked.network,
            transaction: state.transaction,
            simulated: state.simulated,
            amount_usd: formatUnits(amount, decimals),
          },
          transfer: {
            txHash: state.transaction,
            index: state.index,
            blockNumber: state.blockNumber,
            blockHash: state.blockHash,
            from: locked.payer,
          },
        });
        await markSettled(tx, locked.id, { transaction: state.transaction, paymentId: payment.id, now });
        this.deps.log.info(
          { settlementId: locked.id, paymentId: payment.id, mode: locked.mode, chain: locked.chain },
          'x402 payment settled',
        );
      });
    }
    return (await getSettlement(this.deps.db, row.id)) ?? row;
  }

  /** The SettleResponse for a settlement row as it stands. */
  private answer(row: SettlementRow): SettleResponse {
    const base = { payer: row.payer, network: row.network, transaction: row.transaction ?? '' };
    if (row.status === 'settled')
      return {
        success: true,
        ...base,
        amount: BigInt(row.amount).toString(),
        extra: { payment_id: row.payment_id, simulated: row.simulated },
      };
    if (row.status === 'failed') {
      const [reason, ...message] = (row.error ?? 'invalid_transaction_state').split(': ');
      return { success: false, ...base, errorReason: reason!, errorMessage: message.join(': ') || undefined };
    }
    return {
      success: false,
      ...base,
      errorReason: 'settlement_pending',
      errorMessage: 'The transfer is submitted and not yet confirmed; Kasse records the payment when it is.',
    };
  }

  /** The common checks; the scheme and request for the family, or the refusal. */
  private async prepare(mode: Mode, merchantId: string, body: FacilitatorBody): Promise<Prepared> {
    const req = body.paymentRequirements;
    const pp = body.paymentPayload;
    if (body.x402Version !== 2 || pp.x402Version !== 2)
      return { refusal: invalid('invalid_x402_version', 'Kasse speaks x402 version 2.') };
    if (req.scheme !== 'exact' || (pp.accepted && pp.accepted.scheme !== req.scheme))
      return { refusal: invalid('unsupported_scheme', `Kasse settles the exact scheme, not ${req.scheme}.`) };
    const found = (await this.kinds(mode)).find((k) => k.kind.network === req.network);
    if (!found || (pp.accepted && pp.accepted.network !== req.network))
      return { refusal: invalid('invalid_network', `Kasse's ${mode} mode takes no payments on ${req.network}.`) };
    const { kind, scheme } = found;
    if (!sameAddress(req.asset, kind.token.contract!))
      return {
        refusal: invalid(
          'invalid_payment_requirements',
          `The asset must be the network's USDC ${kind.token.contract}, not ${req.asset}.`,
        ),
      };
    if (!/^[1-9][0-9]{0,77}$/.test(req.amount))
      return { refusal: invalid('invalid_payment_requirements', 'The amount must be a positive integer string.') };
    const payTo = await this.payToAddress(mode, merchantId, kind);
    if (!sameAddress(req.payTo, payTo))
      return {
        refusal: invalid(
          kind.codes.recipient,
          `payTo must be this merchant's x402 address ${payTo} on ${kind.network}.`,
        ),
      };
    const resource = pp.resource ?? {};
    return {
      scheme,
      request: { mode, kind, payTo, amount: BigInt(req.amount), requirements: req, payload: pp.payload },
      resource: {
        url: typeof resource.url === 'string' ? resource.url : null,
        description: typeof resource.description === 'string' && resource.description ? resource.description : null,
      },
    };
  }

  /** Every kind of the mode with the scheme offering it. */
  private async kinds(mode: Mode): Promise<Array<{ kind: X402Kind; scheme: X402Scheme }>> {
    const out = [];
    for (const scheme of this.deps.schemes()) for (const kind of await scheme.kinds(mode)) out.push({ kind, scheme });
    return out;
  }

  /** The merchant's x402 address on the kind's network, allotted (a fresh derivation index) on first use. */
  private async payToAddress(mode: Mode, merchantId: string, kind: X402Kind): Promise<string> {
    const scheme = (await this.kinds(mode)).find((k) => k.kind.chain === kind.chain)!.scheme;
    const known = await payToOf(this.deps.db, merchantId, mode, kind.chain);
    if (known) return known.address;
    const index = await this.deps.payments.nextAddressIndex();
    const address = await scheme.payTo(mode, kind.chain, index);
    await savePayTo(this.deps.db, { merchantId, mode, chain: kind.chain, index, address, now: this.deps.clock.now() });
    return (await payToOf(this.deps.db, merchantId, mode, kind.chain))!.address;
  }
}

const invalid = (reason: string, message: string, payer?: string): VerifyResponse => ({
  isValid: false,
  invalidReason: reason,
  invalidMessage: message,
  ...(payer ? { payer } : {}),
});

function settleRefusal(v: VerifyResponse, network: string): SettleResponse {
  return {
    success: false,
    errorReason: v.invalidReason ?? 'invalid_payload',
    errorMessage: v.invalidMessage,
    ...(v.payer ? { payer: v.payer } : {}),
    transaction: '',
    network,
  };
}

/** A settle request of the same authorization asks for what the stored settlement is (not a copy for more). */
function sameRequest(row: SettlementRow, r: X402Request): boolean {
  return BigInt(row.amount) === r.amount && sameAddress(row.pay_to, r.payTo) && row.network === r.kind.network;
}

/** Addresses compare exactly, hex ones in any case. */
function sameAddress(a: string, b: string): boolean {
  return a === b || (a.startsWith('0x') && a.toLowerCase() === b.toLowerCase());
}

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
