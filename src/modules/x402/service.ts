/**
 * Kasse as an x402 facilitator (docs/x402.md): `supported`, `verify`, `settle` and `pay_to` for a merchant in a mode,
 * speaking x402 v2 as `HTTPFacilitatorClient` of `@x402/core` sends it, with the official facilitator's semantics. This
 * module does what is the same on every chain; the families do their chain's part through their `X402Scheme`
 * (src/chains/x402.ts).
 *
 * Common checks before a family sees a payload: x402 version 2, a scheme (`exact`, or `auth-capture` for a hold in
 * an escrow: then a whole number of cents) on a network of this mode the families offer, the asset the network's USDC, a positive amount of at most $1,000,000 (MAX_USD), `payTo` the merchant's x402
 * address of the network (payto.ts), and the authorization not already claimed in Kasse.
 *
 * One authorization, one successful settle. Settle claims the authorization with one INSERT on its unique key
 * (network + authorization), so of two requests or processes only one asks the family to submit; the row also names
 * the one request that is answered `success: true` (`answered_to`, taken in PostgreSQL). Every other settle of the
 * authorization, concurrent or later, in any process, answers `success: false` with the scheme's official duplicate
 * code (`invalid_exact_evm_nonce_already_used`, `duplicate_settlement`) and credits nothing; a request that could
 * only answer `settlement_pending` gives its answer back, so the one that finds the transfer landed is answered. A
 * client that lost its answer retries through the `payment-identifier` extension (identifier.ts): the same identifier
 * with the same payment is answered what the original was, another payment under it is refused (409).
 *
 * A settled authorization becomes a `paid` Payment (an `auth-capture` hold: an authorized manual one, through the
 * capture module) in the transaction that marks its pending row settled, so it is
 * credited once (settlements.ts). A crash leaves the row `pending`; the workers role's `resume` submits it again (idempotent in
 * the family) and records it when it lands. A settlement that cannot be recorded ends `failed` with its reason
 * (dashboard, `kasse x402 settlements`), never retried; one whose network does not answer is looked at again later,
 * less and less often. Settle always answers a SettleResponse (`unexpected_settle_error` for what nobody foresaw).
 */
import type { Tenant } from '../../core/tenant.ts';
import type { X402Kind, X402Request, X402Requirements, X402Scheme } from '../../chains/x402.ts';
import type { Clock } from '../../core/clock.ts';
import { ApiError } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import type { Db, Tx } from '../../db/index.ts';
import type { AuditLog } from '../audit/index.ts';
import type { CaptureService } from '../capture/index.ts';
import type { Payment, PaymentService } from '../payments/index.ts';
import { MerchantHttpClient } from '../webhooks/index.ts';
import { X402Discovery } from './discovery.ts';
import { identifierConflict, paymentIdentifier, type Identified } from './identifier.ts';
import { PayToBook } from './payto.ts';
import { Settlements } from './settlements.ts';

export { RESUME_AFTER_MS, SETTLE_WAIT_MS } from './settlements.ts';
import {
  claimSettlement,
  listSettlements,
  merchantOfPayTo,
  retiredPayTo,
  settlementByIdentifier,
  settlementByKey,
  takeAnswer,
  type SettlementRow,
} from './store.ts';
import type { FacilitatorBody, SettleResponse, SupportedResponse, VerifyResponse } from './wire.ts';

/**
 * NOTE: the largest amount one authorization may pay, in US dollars: the spec's largest payment ($1,000,000,
 * `price_amount` 100000000), so every x402 payment is one Kasse can record. Larger is refused at verify and settle.
 */
export const MAX_USD = 1_000_000n;
/** How long a sale's requirements give the client to pay (`maxTimeoutSeconds`), as the official middleware's default. */
const SALE_TIMEOUT_S = 300;
/** How long the families' kinds of a mode are reused: networks pause or resume with a restart or a node's health. */
const KINDS_FOR_MS = 1_000;
/** How long a resource server has to answer what it advertises (discovery.ts). */
const ADVERTISED_TIMEOUT_MS = 5_000;
/** The scheme of a kind that names none. */
const EXACT = 'exact';
/** The extensions Kasse's facilitator takes part in, as `supported` lists them. */
const EXTENSIONS = ['bazaar', 'payment-identifier'];

export interface X402Deps {
  db: Db;
  clock: Clock;
  log: Logger;
  payments: PaymentService;
  /** Where an `auth-capture` hold becomes an authorized manual payment (the capture module). */
  holds: Pick<CaptureService, 'recordAuthorizedHold'>;
  /** The families' schemes (read when used: families load after the modules are built). */
  schemes: () => X402Scheme[];
  audit: AuditLog;
  /** Days a resource stays discoverable after its last payment (`KASSE_X402_DISCOVERY_DAYS`). */
  discoveryDays: number;
  /** A payment link's URL by its slug. */
  linkUrl: (slug: string) => string;
  /** A sale's settlement ended failed: give back what it held (a link's use), in the transaction that ends it. */
  saleFailed: (tx: Tx, tenant: Tenant, sale: X402Sale) => Promise<void>;
}

/** What a settlement row keeps of its request, to submit it again after a crash. */
export interface Stored {
  requirements: X402Requirements;
  payload: Record<string, unknown>;
  /** What the Payment records when the settlement sells something of the merchant's own (a payment link). */
  sale?: X402Sale;
  /** The resource and its bazaar declaration as the payload carried them: catalogued as paid once it settles. */
  declared?: { resource: Record<string, unknown>; bazaar: unknown };
}

/** A settlement's own sale: the Payment's order id, description and metadata instead of the x402 defaults. */
export interface X402Sale {
  orderId: string;
  description: string;
  metadata: Record<string, string>;
}

/**
 * A sale's settlement: the answer for the client, the Payment it was paid with (also when the answer repeats an
 * earlier one through the client's payment identifier), and whether this call made the sale (claimed the
 * authorization; a repeated answer or a refusal made none).
 */
export interface X402SaleResult {
  response: SettleResponse;
  payment: Payment | null;
  made: boolean;
}

/** A settle's answer, and whether this call claimed the authorization. */
interface SettleOutcome {
  response: SettleResponse;
  claimed: boolean;
}

type Prepared = { scheme: X402Scheme; request: X402Request; resource: Resource } | { refusal: VerifyResponse };

interface Resource {
  url: string | null;
  description: string | null;
}

export class X402Service {
  private readonly payTos: PayToBook;
  /** The discovery catalogue (discovery.ts). */
  readonly discovery: X402Discovery;
  private readonly lifecycle: Settlements;
  /** Reads what merchants' resource servers advertise (discovery.ts). */
  private readonly http = new MerchantHttpClient({
    timeoutMs: ADVERTISED_TIMEOUT_MS,
    userAgent: 'Kasse x402 catalogue',
  });
  /** The kinds of each mode as the families offered them a moment ago (every request asks). */
  private readonly kindsOf = new Map<
    Mode,
    { kinds: Promise<Array<{ kind: X402Kind; scheme: X402Scheme }>>; until: number }
  >();

  constructor(private readonly deps: X402Deps) {
    this.payTos = new PayToBook({
      db: deps.db,
      clock: deps.clock,
      log: deps.log,
      nextIndex: () => deps.payments.nextAddressIndex(),
    });
    this.discovery = new X402Discovery({
      db: deps.db,
      clock: deps.clock,
      log: deps.log,
      audit: deps.audit,
      days: deps.discoveryDays,
      requirements: (tenant, cents) => this.requirements(tenant, cents),
      networks: (mode) => this.networks(mode),
      merchantOfPayTo: (mode, address) => merchantOfPayTo(deps.db, mode, address),
      linkUrl: deps.linkUrl,
      ask: (mode, method, url, headers) => this.http.ask(mode, method, url, headers),
    });
    this.lifecycle = new Settlements({
      ...deps,
      payTos: this.payTos,
      discovery: this.discovery,
      kinds: (mode) => this.kinds(mode),
    });
  }

  /**
   * Settles what a crash or an expired wait left pending (settlements.ts), in the workers role. Answers how many it
   * looked at.
   */
  resume(limit = 50): Promise<number> {
    return this.lifecycle.resume(limit);
  }

  /** Resolves once the resources of the settlements recorded so far are catalogued (discovery.ts). */
  catalogued(): Promise<void> {
    return this.lifecycle.catalogued();
  }

  /** Finishes the catalogue's work and closes the connections to merchants' servers. */
  async close(): Promise<void> {
    await this.lifecycle.catalogued();
    this.http.close();
  }

  /** A settlement ended in some process (`X402_SETTLEMENTS_CHANNEL`): requests here waiting for it answer. */
  settlementEnded(id: string): void {
    this.lifecycle.ended(id);
  }

  /** `GET /x402/supported`: every kind of the mode, each with the merchant's `payTo`. */
  async supported(tenant: Tenant): Promise<SupportedResponse> {
    const { mode } = tenant;
    const kinds = [];
    for (const { kind, scheme } of await this.kinds(mode)) {
      const payTo = (await this.payTos.get(tenant, kind, scheme)).address;
      kinds.push({
        x402Version: 2,
        scheme: kind.scheme ?? EXACT,
        network: kind.network,
        extra: { ...kind.extra, payTo, ...(kind.simulated ? { simulated: true } : {}) },
      });
    }
    return { kinds, extensions: EXTENSIONS, signers: {} };
  }

  /** The merchant's x402 address on `network` (CAIP-2), or null when the mode offers no such network. */
  async payTo(tenant: Tenant, network: string): Promise<string | null> {
    const { mode } = tenant;
    const found = (await this.kinds(mode)).find((k) => k.kind.network === network);
    return found ? (await this.payTos.get(tenant, found.kind, found.scheme)).address : null;
  }

  /** The CAIP-2 networks the mode takes x402 payments on. */
  async networks(mode: Mode): Promise<string[]> {
    return [...new Set((await this.kinds(mode)).map((k) => k.kind.network))];
  }

  async verify(tenant: Tenant, body: FacilitatorBody): Promise<VerifyResponse> {
    const { mode } = tenant;
    const p = await this.prepare(tenant, body);
    if ('refusal' in p) return p.refusal;
    const identified = paymentIdentifier(body);
    const key = p.scheme.key(p.request);
    const { db } = this.deps;
    // The lookups travel while the family checks the signature.
    const [earlier, named, verdict] = await Promise.all([
      key ? settlementByKey(db, mode, p.request.kind.chain, key) : undefined,
      identified ? settlementByIdentifier(db, tenant, identified.id) : undefined,
      p.scheme.verify(p.request),
    ]);
    if (named) {
      if (named.payload_digest !== identified!.digest) throw identifierConflict(identified!.id);
      // A retry of a payment Kasse has: what verifying it answered then.
      if (named.status !== 'failed') return { isValid: true, payer: named.payer };
    }
    if (earlier && earlier.status !== 'failed')
      return invalid(p.request.kind.codes.replay, 'This authorization was already settled.', earlier.payer);
    if (!verdict.valid) return invalid(verdict.reason, verdict.message, verdict.payer);
    return { isValid: true, payer: verdict.payer };
  }

  async settle(tenant: Tenant, body: FacilitatorBody, sale?: X402Sale): Promise<SettleResponse> {
    return (await this.settleOnce(tenant, body, sale))!.response;
  }

  /**
   * What an agent may pay `cents` US cents to the merchant with: one exact-scheme requirement per network of the mode
   * (the network's USDC, the merchant's payTo, what the client signs with in `extra`).
   */
  async requirements(tenant: Tenant, cents: number): Promise<X402Requirements[]> {
    const { mode } = tenant;
    const out: X402Requirements[] = [];
    for (const { kind, scheme } of await this.kinds(mode)) {
      if (kind.token.decimals < 2 || (kind.scheme ?? EXACT) !== EXACT) continue;
      out.push({
        scheme: 'exact',
        network: kind.network,
        amount: (BigInt(cents) * 10n ** BigInt(kind.token.decimals - 2)).toString(),
        asset: kind.token.contract!,
        payTo: (await this.payTos.get(tenant, kind, scheme)).address,
        maxTimeoutSeconds: SALE_TIMEOUT_S,
        extra: kind.extra,
      });
    }
    return out;
  }

  /**
   * Settles a sale of the merchant's own (a payment link): `settle` with the sale recorded on the Payment, answering
   * the Payment too, and whether this call made the sale.
   */
  async sell(tenant: Tenant, body: FacilitatorBody, sale: X402Sale): Promise<X402SaleResult> {
    return this.saleResult(tenant, (await this.settleOnce(tenant, body, sale))!);
  }

  private async saleResult(tenant: Tenant, { response, claimed }: SettleOutcome): Promise<X402SaleResult> {
    const id = response.success ? response.extra?.payment_id : undefined;
    const payment = typeof id === 'string' ? await this.deps.payments.get(tenant, id) : null;
    return { response, payment, made: claimed };
  }

  /**
   * A settle of a sale's payment Kasse already has (named by its payment identifier, or its authorization): answered
   * as `sell` answers it (the receipt again, a duplicate, a failure), making no sale; null for a payment Kasse does not
   * have, which is left untouched (a sale that can no longer be made still answers its retries).
   */
  async resell(tenant: Tenant, body: FacilitatorBody): Promise<X402SaleResult | null> {
    const outcome = await this.settleOnce(tenant, body, undefined, true);
    return outcome ? this.saleResult(tenant, outcome) : null;
  }

  /** The merchant's x402 addresses of `mode` retired when their network's configuration changed, newest first. */
  retired(tenant: Tenant) {
    return retiredPayTo(this.deps.db, tenant);
  }

  /** The merchant's settlements of `mode`, newest first (`status` to see only failed ones, say), as stored. */
  settlements(tenant: Tenant, q: { status?: SettlementRow['status']; limit?: number } = {}) {
    return listSettlements(this.deps.db, tenant, { status: q.status, limit: q.limit ?? 50 });
  }

  /**
   * `settle`, also saying whether this call claimed the authorization. Anything unforeseen after the checks still
   * answers a SettleResponse; a client's error in the request itself (a malformed or reused payment identifier) is
   * the Error body. `knownOnly`: null, and nothing done, for a payment Kasse does not have yet.
   */
  private async settleOnce(
    tenant: Tenant,
    body: FacilitatorBody,
    sale?: X402Sale,
    knownOnly = false,
  ): Promise<SettleOutcome | null> {
    const { mode, merchantId } = tenant;
    // Whether this call claimed the authorization, also when it then failed unexpectedly (the row is the workers').
    const claim = { made: false };
    try {
      return await this.settleChecked(tenant, body, sale, knownOnly, claim);
    } catch (err) {
      if (err instanceof ApiError && (err.code === 'idempotency_conflict' || err.code === 'invalid_request')) throw err;
      this.deps.log.error({ err: errText(err), merchantId, mode }, 'x402 settle failed unexpectedly');
      return {
        response: {
          success: false,
          errorReason: 'unexpected_settle_error',
          errorMessage:
            'Kasse could not settle this payment because of an unexpected error; a retry with the same payment identifier says where it stands.',
          transaction: '',
          network: body.paymentRequirements?.network ?? '',
        },
        claimed: claim.made,
      };
    }
  }

  private async settleChecked(
    tenant: Tenant,
    body: FacilitatorBody,
    sale: X402Sale | undefined,
    knownOnly: boolean,
    claim: { made: boolean },
  ): Promise<SettleOutcome | null> {
    const { mode, merchantId } = tenant;
    const network = body.paymentRequirements.network;
    const refused = (v: VerifyResponse) => ({ response: settleRefusal(v, network), claimed: false });
    const p = await this.prepare(tenant, body);
    if ('refusal' in p) return refused(p.refusal);
    const { scheme, request } = p;
    const { db } = this.deps;
    const identified = paymentIdentifier(body);
    // Who this request is, for the one success of the authorization: its payment identifier, else itself alone.
    const me = identified ? `id:${identified.id}` : `req:${newId('x4s')}`;
    const key = scheme.key(request);
    // The lookups travel while the family checks the payload (a settle of a new payment is the usual one).
    const [earlier, named, verdict] = await Promise.all([
      key ? settlementByKey(db, mode, request.kind.chain, key) : undefined,
      identified ? settlementByIdentifier(db, tenant, identified.id) : undefined,
      scheme.verify(request),
    ]);
    const follower = (row: SettlementRow) => this.follower(scheme, row, request, merchantId, me, identified);
    if (named) return { response: await follower(named), claimed: false };
    if (earlier) return { response: await follower(earlier), claimed: false };
    if (knownOnly) return null;
    if (!verdict.valid) return refused(invalid(verdict.reason, verdict.message, verdict.payer));
    const row = await claimSettlement(db, {
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
        ...(declaration(body) ? { declared: declaration(body) } : {}),
      } satisfies Stored,
      simulated: request.kind.simulated,
      created_at: this.deps.clock.now(),
      payment_identifier: identified?.id ?? null,
      payload_digest: identified?.digest ?? null,
      answered_to: me,
    });
    if (!row) {
      // Another request or process claimed it first (the authorization, or this payment identifier).
      const first =
        (identified && (await settlementByIdentifier(db, tenant, identified.id))) ||
        (await settlementByKey(db, mode, request.kind.chain, verdict.key));
      if (!first) throw new Error('x402 settlement claim refused, but no claiming row found');
      return { response: await follower(first), claimed: false };
    }
    claim.made = true;
    return { response: await this.lifecycle.follow(scheme, row, request, me), claimed: true };
  }

  /**
   * The answer for a request about an authorization another request claimed: what it was answered (its payment
   * identifier names it, with the same payment), or a refusal as a duplicate unless nobody was answered its success
   * yet (the first request could only say `settlement_pending`): then this one follows it and is answered.
   */
  private async follower(
    scheme: X402Scheme,
    row: SettlementRow,
    request: X402Request,
    merchantId: string,
    me: string,
    identified: Identified | null,
  ): Promise<SettleResponse> {
    if (identified && row.payment_identifier === identified.id) {
      if (row.payload_digest !== identified.digest) throw identifierConflict(identified.id);
    } else if (row.merchant_id !== merchantId || !sameRequest(row, request)) {
      return this.lifecycle.duplicate(request, row.payer);
    }
    if (row.status === 'failed') return this.lifecycle.answer(row);
    if (!(await takeAnswer(this.deps.db, row.id, me))) return this.lifecycle.duplicate(request, row.payer);
    return this.lifecycle.follow(scheme, row, request, me, false);
  }

  /** The common checks; the scheme and request for the family, or the refusal. */
  private async prepare(tenant: Tenant, body: FacilitatorBody): Promise<Prepared> {
    const { mode } = tenant;
    const req = body.paymentRequirements;
    const pp = body.paymentPayload;
    if (body.x402Version !== 2 || pp.x402Version !== 2)
      return { refusal: invalid('invalid_x402_version', 'Kasse speaks x402 version 2.') };
    const kinds = await this.kinds(mode);
    if (
      !kinds.some((k) => (k.kind.scheme ?? EXACT) === req.scheme) ||
      (pp.accepted && pp.accepted.scheme !== req.scheme)
    )
      return {
        refusal: invalid(
          'unsupported_scheme',
          `Kasse's ${mode} mode settles ${[...new Set(kinds.map((k) => k.kind.scheme ?? EXACT))].join(' and ') || 'no scheme'}, not ${req.scheme}.`,
        ),
      };
    const found = kinds.find((k) => k.kind.network === req.network && (k.kind.scheme ?? EXACT) === req.scheme);
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
    const most = MAX_USD * 10n ** BigInt(kind.token.decimals);
    if (BigInt(req.amount) > most)
      return {
        refusal: invalid(
          'invalid_payment_requirements',
          `The amount must be at most $${MAX_USD.toLocaleString('en-US')} (${most} units of ${kind.token.symbol}) per payment.`,
        ),
      };
    const cent = 10n ** BigInt(Math.max(kind.token.decimals - 2, 0));
    if (scheme.hold && (kind.token.decimals < 2 || BigInt(req.amount) % cent !== 0n))
      return {
        refusal: invalid(
          'invalid_payment_requirements',
          `A hold is of a whole number of cents: the amount must be a multiple of ${cent} units of ${kind.token.symbol}.`,
        ),
      };
    const payTo = (await this.payTos.get(tenant, kind, scheme)).address;
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
  private kinds(mode: Mode): Promise<Array<{ kind: X402Kind; scheme: X402Scheme }>> {
    const cached = this.kindsOf.get(mode);
    if (cached && this.deps.clock.millis() < cached.until) return cached.kinds;
    const kinds = (async () => {
      const out = [];
      for (const scheme of this.deps.schemes()) for (const kind of await scheme.kinds(mode)) out.push({ kind, scheme });
      return out;
    })();
    this.kindsOf.set(mode, { kinds, until: this.deps.clock.millis() + KINDS_FOR_MS });
    kinds.catch(() => this.kindsOf.delete(mode));
    return kinds;
  }
}

/** The resource and bazaar declaration a payload carries, to catalogue when its settlement is recorded; or none. */
function declaration(body: FacilitatorBody): Stored['declared'] {
  const bazaar = (body.paymentPayload as { extensions?: Record<string, unknown> }).extensions?.bazaar;
  const resource = body.paymentPayload.resource;
  return bazaar && typeof bazaar === 'object' && resource ? { resource, bazaar } : undefined;
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
