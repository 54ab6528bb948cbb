/**
 * The Kasse payment provider for Medusa v2 (`pp_kasse_<id>`): each Medusa payment session is one Kasse payment,
 * created, read, cancelled and refunded through @kasse/sdk, and Kasse's signed webhooks become Medusa's webhook
 * actions. Kasse's API is the truth: every method reads the payment before acting on it, so a call Medusa repeats
 * (a retry, a webhook that arrived twice or before the storefront came back) finds the work done and does not do it
 * again. Which rule applies lives in ./mapping.ts.
 */
import {
  type CaptureParams,
  type CreatePaymentParams,
  Kasse,
  KasseError,
  KasseSignatureVerificationError,
  type Payment,
} from '@kasse/sdk';
import type {
  AuthorizePaymentInput,
  AuthorizePaymentOutput,
  BigNumberInput,
  CancelPaymentInput,
  CancelPaymentOutput,
  CapturePaymentInput,
  CapturePaymentOutput,
  DeletePaymentInput,
  DeletePaymentOutput,
  GetPaymentStatusInput,
  GetPaymentStatusOutput,
  InitiatePaymentInput,
  InitiatePaymentOutput,
  Logger,
  ProviderWebhookPayload,
  RefundPaymentInput,
  RefundPaymentOutput,
  RetrievePaymentInput,
  RetrievePaymentOutput,
  UpdatePaymentInput,
  UpdatePaymentOutput,
  WebhookActionResult,
} from '@medusajs/framework/types';
import { AbstractPaymentProvider, BigNumber, MedusaError } from '@medusajs/framework/utils';
import {
  capturedCents,
  fromCents,
  type KasseProviderOptions,
  optionsProblem,
  payerAddress,
  sessionOf,
  sessionStatus,
  toCents,
  webhookReport,
} from './mapping';

const NAME = 'Kasse payment provider (@kasse/medusa)';

/** What the storefront may pass as the session's `data` when it creates the session. */
const STOREFRONT_FIELDS = ['success_url', 'cancel_url', 'description', 'locale'] as const;

export class KassePaymentProviderService extends AbstractPaymentProvider<KasseProviderOptions> {
  static identifier = 'kasse';

  /** Called by Medusa when it loads the provider: a wrong option stops Medusa with the option's name. */
  static validateOptions(options: Record<string, unknown>): void {
    const problem = optionsProblem(options);
    if (problem) throw new MedusaError(MedusaError.Types.INVALID_ARGUMENT, `${NAME}: ${problem}`);
  }

  private readonly kasse: Kasse;
  private readonly options: KasseProviderOptions;
  private readonly logger: Pick<Logger, 'warn' | 'info'>;

  constructor(cradle: Record<string, unknown>, options: KasseProviderOptions) {
    super(cradle, options);
    KassePaymentProviderService.validateOptions(options as unknown as Record<string, unknown>);
    this.options = options;
    this.kasse = new Kasse(options.apiKey, { baseUrl: options.baseUrl });
    this.logger = (cradle.logger as Logger | undefined) ?? console;
  }

  private get manual(): boolean {
    return this.options.capture === 'manual';
  }

  async initiatePayment(input: InitiatePaymentInput): Promise<InitiatePaymentOutput> {
    const sessionId = input.context?.idempotency_key ?? (input.data?.session_id as string | undefined);
    if (!sessionId) throw invalid('Medusa gave no payment session id to name the Kasse payment by');
    const payment = await this.create(sessionId, input.amount, input.currency_code, input.data, `medusa-${sessionId}`);
    return { id: payment.id, status: sessionStatus(payment), data: payment };
  }

  /**
   * A changed amount replaces the Kasse payment: the old one is cancelled (possible only while nothing has been paid
   * into it) and a new one is created for the same session. A payment that expired or was cancelled is replaced too.
   */
  async updatePayment(input: UpdatePaymentInput): Promise<UpdatePaymentOutput> {
    const current = await this.retrieve(input.data);
    const cents = this.cents(input.amount, input.currency_code);
    const ended = current.status === 'cancelled' || current.status === 'expired';
    if (current.price_amount === cents && !ended) return { status: sessionStatus(current), data: current };
    if (!ended) await this.cancelWaiting(current, 'its amount cannot change');
    const sessionId = sessionOf(current) ?? input.context?.idempotency_key;
    if (!sessionId) throw invalid(`Kasse payment ${current.id} names no Medusa payment session`);
    const payment = await this.create(
      sessionId,
      input.amount,
      input.currency_code,
      input.data,
      `medusa-${sessionId}-after-${current.id}`,
    );
    return { status: sessionStatus(payment), data: payment };
  }

  /** A session given up (the cart changed, another provider chosen): its Kasse payment is cancelled or voided. */
  async deletePayment(input: DeletePaymentInput): Promise<DeletePaymentOutput> {
    if (typeof input.data?.id !== 'string') return { data: input.data };
    return { data: await this.release(await this.retrieve(input.data)) };
  }

  async authorizePayment(input: AuthorizePaymentInput): Promise<AuthorizePaymentOutput> {
    const payment = await this.retrieve(input.data);
    const session = sessionOf(payment);
    const asked = input.context?.idempotency_key;
    if (session && asked && asked.startsWith('payses_') && session !== asked)
      throw invalid(`Kasse payment ${payment.id} belongs to payment session ${session}, not ${asked}`);
    return { status: sessionStatus(payment), data: payment };
  }

  async getPaymentStatus(input: GetPaymentStatusInput): Promise<GetPaymentStatusOutput> {
    const payment = await this.retrieve(input.data);
    return { status: sessionStatus(payment), data: payment };
  }

  async retrievePayment(input: RetrievePaymentInput): Promise<RetrievePaymentOutput> {
    return { data: await this.retrieve(input.data) };
  }

  /**
   * Automatic capture: Kasse captured the money when it was paid, so this confirms it. Manual: Medusa names no amount
   * to the provider, but it has recorded its capture before it calls, so Kasse is asked for what Medusa's captures
   * of the session add up to beyond what Kasse has captured or is capturing: the amount of a capture made in
   * Medusa's admin, and nothing for a capture Medusa records because Kasse reported it (a capture made on Kasse's
   * API or dashboard). Outside Medusa's payment module all that remains is captured. The capture is asked under
   * Medusa's capture id as the Idempotency-Key; a call repeated under any key finds Kasse holding enough and asks
   * nothing.
   */
  async capturePayment(input: CapturePaymentInput): Promise<CapturePaymentOutput> {
    const payment = await this.retrieve(input.data);
    const hold = payment.authorization;
    if (hold && !hold.voided && (payment.status === 'authorized' || payment.status === 'paid')) {
      const session = sessionOf(payment);
      const medusa = session ? await this.medusaRecord(session) : null;
      const asked = Math.min(medusa?.capturedCents ?? hold.amount_usd_cents, hold.amount_usd_cents);
      const missing = asked - capturingCents(payment);
      if (missing <= 0) return { data: payment };
      const key = input.context?.idempotency_key ?? `medusa-capture-${payment.id}`;
      const body = missing >= uncaptured(payment) ? {} : { amount_usd_cents: missing };
      return { data: await this.hold('capture', payment.id, key, { body, capturedTo: asked }) };
    }
    if (payment.status === 'paid') return { data: payment };
    throw notAllowed(`Kasse payment ${payment.id} is ${payment.status}; only a paid or authorized payment is captured`);
  }

  /** Cancels a waiting Kasse payment or voids an authorization; one that ended already is left as it is. */
  async cancelPayment(input: CancelPaymentInput): Promise<CancelPaymentOutput> {
    return { data: await this.release(await this.retrieve(input.data)) };
  }

  /**
   * Refunds what the merchant holds of the payment, in full, through Kasse: all of an automatic payment, what was
   * captured of a manual one. The money goes back to the address it was paid from: the one sender Kasse recorded of
   * the paid money, or the payer who authorized a hold (Kasse's default for a manual payment). When Kasse knows
   * neither, the refund is made from Kasse's dashboard, after which this call records it in Medusa without sending
   * anything.
   */
  async refundPayment(input: RefundPaymentInput): Promise<RefundPaymentOutput> {
    const payment = await this.retrieve(input.data);
    if (payment.status === 'refunded') return { data: payment };
    const cents = this.cents(input.amount, 'usd');
    const settling = payment.authorization?.pending_usd_cents ?? 0;
    if (settling > 0)
      throw notAllowed(
        `the capture of ${fromCents(settling)} USD of Kasse payment ${payment.id} is still settling on chain, and ` +
          'Kasse refunds captured money once it has settled (usually within minutes, when Kasse sends ' +
          'payment.captured): refund, or cancel the order, again then',
      );
    const held = capturedCents(payment);
    if (cents !== held)
      throw invalid(
        `Kasse refunds a payment in full: ${fromCents(held)} USD for payment ${payment.id}, not ${fromCents(cents)} USD`,
      );
    const destination = payerAddress(payment);
    const unknownPayer = notAllowed(
      `Kasse does not know the one address payment ${payment.id} was paid from, so it cannot send the refund by itself. ` +
        "Refund it on Kasse's dashboard (Payments, the payment, Refund) with an address the payer gives you; once Kasse " +
        'has sent it, refund here again to record it in Medusa (nothing is sent twice).',
    );
    if (!destination && !payment.authorization) throw unknownPayer;
    try {
      await this.kasse.payments.refund(payment.id, {
        ...(destination ? { destination } : {}),
        note: `Medusa refund ${input.context?.idempotency_key ?? ''}`.trim(),
      });
    } catch (err) {
      if (err instanceof KasseError && err.param === 'destination' && !destination) throw unknownPayer;
      // Medusa repeating a refund it already asked for: Kasse holds one refund of a payment at a time.
      if (!(err instanceof KasseError && err.code === 'invalid_state')) throw medusaError(err);
      const now = await this.retrieve({ id: payment.id });
      if (now.status !== 'refunded' && !/already (pending|sent)/.test(err.message)) throw medusaError(err);
    }
    return { data: await this.retrieve({ id: payment.id }) };
  }

  /**
   * Reads a webhook Medusa received at `/hooks/payment/kasse_<id>`. Kasse's signature over the raw body with the
   * webhook secret is checked (a missing or forged one is refused and changes nothing); its age is not, since Medusa
   * may run this long after the delivery arrived and Kasse does not deliver it again. The event only says that a
   * payment changed: the provider reads the payment with its own key (a payment of the other mode or another account
   * is not found and not supported), checks it is the one Medusa's session was given, and tells Medusa what Kasse
   * answers now, so a late, repeated or crafted event cannot claim more than Kasse holds. Which action and amount
   * follow is ./mapping.ts's `webhookReport`.
   */
  async getWebhookActionAndData(payload: ProviderWebhookPayload['payload']): Promise<WebhookActionResult> {
    const header = payload.headers?.['service-signature'] as string | string[] | undefined;
    let raw: string | Uint8Array | undefined = payload.rawData as string | Uint8Array | undefined;
    const serialised = raw as unknown as { type?: string; data?: number[] } | undefined;
    if (serialised?.type === 'Buffer' && Array.isArray(serialised.data)) raw = Buffer.from(serialised.data);
    let event: ReturnType<typeof Kasse.webhooks.constructEvent>;
    try {
      if (raw === undefined || raw === null) throw new KasseSignatureVerificationError('malformed_body', 'No raw body');
      event = Kasse.webhooks.constructEvent(raw, header, this.options.webhookSecret, { tolerance: Infinity });
    } catch (err) {
      if (!(err instanceof KasseSignatureVerificationError)) throw err;
      this.logger.warn(`${NAME}: webhook refused (${err.reason}): ${err.message}`);
      return { action: 'not_supported' };
    }
    const type = event.type as string;
    if (type === 'refund.failed') {
      await this.refundFailed(event.data as unknown as { payment_id?: unknown; error?: unknown });
      return { action: 'not_supported' };
    }
    if (!type.startsWith('payment.')) return { action: 'not_supported' };
    const claimed = event.data as Payment;
    const session = sessionOf(claimed);
    if (!session || typeof claimed.id !== 'string') return { action: 'not_supported' };
    const ignored = (why: string) => {
      this.logger.warn(`${NAME}: webhook ${event.id} (${type}) for ${session} ignored: ${why}`);
      return { action: 'not_supported' as const };
    };
    const payment = await this.readable(claimed.id);
    if (!payment) return ignored(`payment ${claimed.id} is not one this provider's API key can read`);
    if (sessionOf(payment) !== session || payment.order_id !== session)
      return ignored(`Kasse's payment ${payment.id} was not made for this session`);
    const medusa = await this.medusaRecord(session);
    if (medusa && medusa.kassePaymentId !== payment.id)
      return ignored(`the session's Kasse payment is ${medusa.kassePaymentId ?? 'none'}, not ${payment.id}`);
    const { action, cents } = webhookReport(type, payment, medusa?.capturedCents ?? null);
    this.logger.info(`${NAME}: webhook ${event.id} (${type}) → ${action} for ${session}`);
    const asked = payment.metadata?.medusa_amount;
    const amount = cents === payment.price_amount && typeof asked === 'string' ? asked : fromCents(cents);
    return { action, data: { session_id: session, amount: new BigNumber(amount) } };
  }

  /**
   * A refund Medusa recorded that Kasse could not send: Medusa has no action to undo a refund, so the merchant is
   * told in Medusa's log, and Kasse lets the payment be refunded again from its dashboard.
   */
  private async refundFailed(refund: { payment_id?: unknown; error?: unknown }): Promise<void> {
    if (typeof refund.payment_id !== 'string') return;
    const payment = await this.readable(refund.payment_id);
    const session = payment && sessionOf(payment);
    if (!payment || !session || payment.order_id !== session) return;
    this.logger.warn(
      `${NAME}: Kasse could not send the refund of payment ${payment.id} (Medusa payment session ${session}): ` +
        `${typeof refund.error === 'string' ? refund.error : 'the transfer failed'}. Medusa still shows it refunded; ` +
        "refund it again on Kasse's dashboard (Payments, the payment, Refund), to an address the payer gives you if " +
        'the first one cannot receive it.',
    );
  }

  // --------------------------------------------------------------------------------------------------------------

  private cents(amount: BigNumberInput, currency: string): number {
    if (currency.toLowerCase() !== 'usd')
      throw invalid(
        `Kasse prices payments in US dollars, and this one is in ${currency.toUpperCase()}: offer Kasse in USD regions only`,
      );
    try {
      return toCents(new BigNumber(amount).bigNumber!.toFixed());
    } catch (err) {
      throw invalid((err as Error).message);
    }
  }

  private async create(
    sessionId: string,
    amount: BigNumberInput,
    currency: string,
    data: Record<string, unknown> | undefined,
    idempotencyKey: string,
  ): Promise<Payment> {
    const cents = this.cents(amount, currency);
    const fromStorefront: Record<string, unknown> = {};
    for (const key of STOREFRONT_FIELDS) if (typeof data?.[key] === 'string') fromStorefront[key] = data[key];
    const body: CreatePaymentParams = {
      price_amount: cents,
      price_currency: 'USD',
      order_id: sessionId,
      ...fromStorefront,
      metadata: { medusa_session_id: sessionId, medusa_amount: new BigNumber(amount).bigNumber!.toFixed() },
      ...(this.manual ? { capture_method: 'manual' as const } : {}),
    };
    try {
      return await this.kasse.payments.create(body, { idempotencyKey });
    } catch (err) {
      throw medusaError(err);
    }
  }

  private async retrieve(data: Record<string, unknown> | undefined): Promise<Payment> {
    const id = data?.id;
    if (typeof id !== 'string' || !id.startsWith('pay_'))
      throw invalid('the payment session has no Kasse payment id in its data');
    try {
      return await this.kasse.payments.retrieve(id);
    } catch (err) {
      throw medusaError(err);
    }
  }

  /** The payment as this provider's key reads it, or null when Kasse does not find it for that key. */
  private async readable(id: string): Promise<Payment | null> {
    try {
      return await this.kasse.payments.retrieve(id);
    } catch (err) {
      if (err instanceof KasseError && (err.status === 404 || err.status === 400)) return null;
      throw medusaError(err);
    }
  }

  /**
   * Medusa's own record of a payment session, read through the payment module that loaded the provider: the Kasse
   * payment its data names and the US cents Medusa has recorded as captured of it. Null when the provider runs
   * outside Medusa's payment module.
   */
  private async medusaRecord(sessionId: string): Promise<MedusaRecord | null> {
    let sessions: PaymentSessions | undefined;
    try {
      sessions = this.container.paymentSessionService as PaymentSessions | undefined;
    } catch {
      return null; // Medusa's container has no such service: not inside the payment module.
    }
    if (!sessions) return null;
    const [found] = await sessions.list({ id: sessionId }, { relations: ['payment', 'payment.captures'] });
    if (!found) return { kassePaymentId: null, capturedCents: 0 };
    let capturedCents = 0;
    for (const c of found.payment?.captures ?? [])
      capturedCents += toCents(new BigNumber((c.raw_amount ?? c.amount) as BigNumberInput).bigNumber!.toFixed());
    const id = found.data?.id;
    return { kassePaymentId: typeof id === 'string' ? id : null, capturedCents };
  }

  /** Cancels a waiting payment; refuses one with money on the way (`why` says what could not happen). */
  private async cancelWaiting(payment: Payment, why: string): Promise<Payment> {
    if (payment.status !== 'waiting')
      throw notAllowed(
        `Kasse payment ${payment.id} is ${payment.status}: the payer has sent money, so ${why}; complete the cart, or refund it`,
      );
    try {
      return await this.kasse.payments.cancel(payment.id);
    } catch (err) {
      // Money seen since it was read, or another call cancelled it first.
      const now = await this.retrieve({ id: payment.id });
      if (now.status === 'cancelled' || now.status === 'expired') return now;
      throw medusaError(err);
    }
  }

  /** Lets a payment go: waiting → cancelled, authorized → voided; ended payments stay as they are. */
  private async release(payment: Payment): Promise<Payment> {
    if (payment.status === 'cancelled' || payment.status === 'expired') return payment;
    if (payment.status === 'authorized') return this.hold('void', payment.id, `medusa-void-${payment.id}`);
    return this.cancelWaiting(payment, 'it cannot be cancelled');
  }

  /**
   * Captures (`body`, until Kasse holds `capturedTo` US cents captured or capturing in all) or voids an authorization,
   * with an Idempotency-Key. Kasse refusing because a call under another key did it first (a retry Medusa made after
   * losing the answer) is that call's result.
   */
  private async hold(
    operation: 'capture' | 'void',
    id: string,
    idempotencyKey: string,
    capture = { body: {} as CaptureParams, capturedTo: Infinity },
  ): Promise<Payment> {
    try {
      return operation === 'capture'
        ? await this.kasse.payments.capture(id, capture.body, { idempotencyKey })
        : await this.kasse.payments.void(id, { idempotencyKey });
    } catch (err) {
      if (!(err instanceof KasseError && err.code === 'invalid_state')) throw medusaError(err);
      const now = await this.retrieve({ id });
      const done =
        operation === 'capture'
          ? now.authorization !== undefined && (capturingCents(now) >= capture.capturedTo || uncaptured(now) === 0)
          : now.status === 'cancelled' ||
            now.authorization?.voided === true ||
            /void of this hold is on its way/.test(err.message);
      if (done) return now;
      throw medusaError(err);
    }
  }
}

/** What the provider reads of Medusa's payment session (the payment module's own service of it). */
interface PaymentSessions {
  list(
    filters: { id: string },
    config: { relations: string[] },
  ): Promise<
    Array<{
      data?: Record<string, unknown> | null;
      payment?: { captures?: Array<{ amount?: unknown; raw_amount?: unknown }> } | null;
    }>
  >;
}

interface MedusaRecord {
  kassePaymentId: string | null;
  capturedCents: number;
}

/** US cents of a manual payment's authorization captured or being captured. */
function capturingCents(payment: Payment): number {
  const hold = payment.authorization;
  return hold ? hold.captured_usd_cents + hold.pending_usd_cents : 0;
}

/** US cents of a manual payment's authorization neither captured nor being captured. */
function uncaptured(payment: Payment): number {
  const hold = payment.authorization;
  return hold ? hold.amount_usd_cents - hold.captured_usd_cents - hold.pending_usd_cents : 0;
}

function invalid(message: string): MedusaError {
  return new MedusaError(MedusaError.Types.INVALID_DATA, `${NAME}: ${message}`);
}

function notAllowed(message: string): MedusaError {
  return new MedusaError(MedusaError.Types.NOT_ALLOWED, `${NAME}: ${message}`);
}

/** A Kasse API error as a Medusa error, keeping Kasse's message, code and request id. */
function medusaError(err: unknown): unknown {
  if (!(err instanceof KasseError)) return err;
  const type =
    err.status === 400
      ? MedusaError.Types.INVALID_DATA
      : err.status === 404
        ? MedusaError.Types.NOT_FOUND
        : err.status === 409 || err.status === 422
          ? MedusaError.Types.NOT_ALLOWED
          : MedusaError.Types.UNEXPECTED_STATE;
  const where = [err.code, err.param && `param ${err.param}`, err.requestId && `request ${err.requestId}`]
    .filter(Boolean)
    .join(', ');
  return new MedusaError(type, `${NAME}: Kasse answered: ${err.message}${where ? ` (${where})` : ''}`);
}
