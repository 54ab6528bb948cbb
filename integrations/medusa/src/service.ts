/**
 * The Kasse payment provider for Medusa v2 (`pp_kasse_<id>`): each Medusa payment session is one Kasse payment,
 * created, read, cancelled and refunded through @kasse/sdk, and Kasse's signed webhooks become Medusa's webhook
 * actions. Kasse's API is the truth: every method reads the payment before acting on it, so a call Medusa repeats
 * (a retry, a webhook that arrived twice or before the storefront came back) finds the work done and does not do it
 * again. Which rule applies lives in ./mapping.ts.
 */
import { type CreatePaymentParams, Kasse, KasseError, KasseSignatureVerificationError, type Payment } from '@kasse/sdk';
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
  webhookAction,
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
    return { id: payment.id, status: sessionStatus(payment.status), data: payment };
  }

  /**
   * A changed amount replaces the Kasse payment: the old one is cancelled (possible only while nothing has been paid
   * into it) and a new one is created for the same session. A payment that expired or was cancelled is replaced too.
   */
  async updatePayment(input: UpdatePaymentInput): Promise<UpdatePaymentOutput> {
    const current = await this.retrieve(input.data);
    const cents = this.cents(input.amount, input.currency_code);
    const ended = current.status === 'cancelled' || current.status === 'expired';
    if (current.price_amount === cents && !ended) return { status: sessionStatus(current.status), data: current };
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
    return { status: sessionStatus(payment.status), data: payment };
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
    return { status: sessionStatus(payment.status), data: payment };
  }

  async getPaymentStatus(input: GetPaymentStatusInput): Promise<GetPaymentStatusOutput> {
    const payment = await this.retrieve(input.data);
    return { status: sessionStatus(payment.status), data: payment };
  }

  async retrievePayment(input: RetrievePaymentInput): Promise<RetrievePaymentOutput> {
    return { data: await this.retrieve(input.data) };
  }

  /**
   * Automatic capture: Kasse captured the money when it was paid, so this confirms it. Manual: all that remains of
   * the authorization is captured (Medusa's capture names no amount), under Medusa's capture id as the
   * Idempotency-Key. A capture Kasse already has (asked for by an earlier call, settling or settled) is not asked
   * again, whatever key a retry carries.
   */
  async capturePayment(input: CapturePaymentInput): Promise<CapturePaymentOutput> {
    const payment = await this.retrieve(input.data);
    const hold = payment.authorization;
    if (hold && !hold.voided && (payment.status === 'authorized' || payment.status === 'paid')) {
      if (uncaptured(payment) === 0) return { data: payment };
      const key = input.context?.idempotency_key ?? `medusa-capture-${payment.id}`;
      return { data: await this.hold('capture', payment.id, key) };
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
   * Reads a webhook Medusa received at `/hooks/payment/kasse_<id>`: checks Kasse's signature over the raw body with
   * the webhook secret (a missing, forged or stale signature is refused and changes nothing) and names the Medusa
   * payment session and amount of a `payment.*` event. Events of payments Medusa did not create are not supported.
   */
  async getWebhookActionAndData(payload: ProviderWebhookPayload['payload']): Promise<WebhookActionResult> {
    const header = payload.headers?.['service-signature'] as string | string[] | undefined;
    let raw: string | Uint8Array | undefined = payload.rawData as string | Uint8Array | undefined;
    const serialised = raw as unknown as { type?: string; data?: number[] } | undefined;
    if (serialised?.type === 'Buffer' && Array.isArray(serialised.data)) raw = Buffer.from(serialised.data);
    let event: ReturnType<typeof Kasse.webhooks.constructEvent>;
    try {
      if (raw === undefined || raw === null) throw new KasseSignatureVerificationError('malformed_body', 'No raw body');
      event = Kasse.webhooks.constructEvent(raw, header, this.options.webhookSecret);
    } catch (err) {
      if (!(err instanceof KasseSignatureVerificationError)) throw err;
      this.logger.warn(`${NAME}: webhook refused (${err.reason}): ${err.message}`);
      return { action: 'not_supported' };
    }
    if (!event.type.startsWith('payment.')) return { action: 'not_supported' };
    const payment = event.data as Payment;
    const session = sessionOf(payment);
    if (!session) return { action: 'not_supported' };
    const action = webhookAction(event.type);
    this.logger.info(`${NAME}: webhook ${event.id} (${event.type}) → ${action} for ${session}`);
    const cents = action === 'captured' ? capturedCents(payment) : payment.price_amount;
    const asked = payment.metadata?.medusa_amount;
    const amount = cents === payment.price_amount && typeof asked === 'string' ? asked : fromCents(cents);
    return { action, data: { session_id: session, amount: new BigNumber(amount) } };
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
   * Captures all that remains of an authorization, or voids it, with an Idempotency-Key. Kasse refusing because a
   * call under another key did it first (a retry Medusa made after losing the answer) is that call's result.
   */
  private async hold(operation: 'capture' | 'void', id: string, idempotencyKey: string): Promise<Payment> {
    try {
      return operation === 'capture'
        ? await this.kasse.payments.capture(id, {}, { idempotencyKey })
        : await this.kasse.payments.void(id, { idempotencyKey });
    } catch (err) {
      if (!(err instanceof KasseError && err.code === 'invalid_state')) throw medusaError(err);
      const now = await this.retrieve({ id });
      const done =
        operation === 'capture'
          ? now.authorization !== undefined && uncaptured(now) === 0
          : now.status === 'cancelled' ||
            now.authorization?.voided === true ||
            /void of this hold is on its way/.test(err.message);
      if (done) return now;
      throw medusaError(err);
    }
  }
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
