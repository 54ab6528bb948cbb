/**
 * Payment links: reusable public pages that create ordinary payments (`order_id` `<slug>-<n>`, `metadata.link_id`).
 *
 * Merchant operations (create, list, get, update) are scoped by merchant and mode like every other resource. The
 * public side (the link page on the checkout host) finds a link by its slug alone and admits a payment through one
 * conditional UPDATE that checks `active`, `max_uses` and `expires_at` (on the injected clock) and allocates `n`, so
 * racing payers can never exceed `max_uses` or share an `n`. Rules and decisions: docs/checkout.md.
 */
import { randomBytes } from 'node:crypto';
import type { OperationNodeSource, Selectable } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import type { Clock } from '../../core/clock.ts';
import { ApiError, invalid, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, DbOrTx } from '../../db/index.ts';
import type { LinksTable } from './tables.ts';
import { assertHttpUrl } from '../../core/urls.ts';
import { localeParam } from '../../core/i18n/index.ts';
import type { Payment, PaymentService } from '../payments/index.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import { textLength } from '../../core/text.ts';

export const LINK_KINDS = ['fixed', 'open', 'tip', 'pos'] as const;
export type LinkKind = (typeof LINK_KINDS)[number];

/** NOTE: the spec's limits for links. */
export const LINK_LIMITS = {
  titleMax: 120,
  descriptionMax: 500,
  centsMin: 100,
  centsMax: 100_000_000,
  presetsMax: 6,
  maxUsesMax: 1_000_000,
  urlMax: 2048,
  /** GET /links answers at most this many, newest first. */
  listMax: 500,
  /** Longest payer email accepted (RFC 5321 path limit). */
  emailMax: 254,
} as const;

export const SLUG_PATTERN = '^[0-9a-z]{12}$';

export type LinkRow = Selectable<LinksTable>;

export interface CreateLinkInput {
  kind: LinkKind;
  title: string;
  description?: string;
  amount_usd_cents?: number;
  min_usd_cents?: number;
  max_usd_cents?: number;
  presets_usd_cents?: number[];
  collect_email?: boolean;
  success_url?: string;
  /** The payer's language of the page and its payments: a tag from LOCALES (src/core/i18n). */
  locale?: string;
  max_uses?: number;
  expires_at?: string;
}

export interface PatchLinkInput {
  active?: boolean;
  title?: string;
  description?: string | null;
  success_url?: string | null;
  max_uses?: number | null;
  expires_at?: string | null;
}

/** Why a link page cannot take a payment now; `ok` when it can. */
export type LinkAvailability = 'ok' | 'inactive' | 'expired' | 'used_up';

/** What the payer sent on a link page. */
export interface LinkPayInput {
  /** Required for every kind except `fixed` (ignored there). */
  amountCents?: number;
  /** Required when the link collects email; ignored otherwise. */
  email?: string;
}

export interface LinkDeps {
  db: Db;
  clock: Clock;
  payments: PaymentService;
  /** Changes by API key or dashboard user are recorded in the same statement. */
  audit: AuditLog;
  /** Public base URL of the checkout host. */
  checkoutBase: () => string;
}

const EMAIL = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;

export class LinkService {
  constructor(private readonly deps: LinkDeps) {}

  /**
   * Creates a link. Cross-field rules (400 with `param` naming the field): `fixed` needs `amount_usd_cents` and takes
   * no min, max or presets; `open`, `tip` and `pos` take no `amount_usd_cents` and may bound the typed amount with
   * min/max (min ≤ max); `tip` needs 1 to 6 distinct presets inside those bounds, other kinds take none; `pos` cannot
   * collect email (the payer never touches the terminal); `expires_at` must be in the future; URLs https on live.
   */
  async create(tenant: Tenant, input: CreateLinkInput, actor: Actor): Promise<ReturnType<LinkService['json']>> {
    const { mode, merchantId } = tenant;
    validateCreate(input, mode, this.deps.clock.now());
    const locale = input.locale === undefined ? null : localeParam(input.locale);
    const now = this.deps.clock.now();
    for (let tries = 0; ; tries++) {
      try {
        const statement = this.deps.db
          .insertInto('links')
          .values({
            id: newId('lnk'),
            merchant_id: merchantId,
            mode,
            slug: newSlug(),
            kind: input.kind,
            title: input.title,
            description: input.description ?? null,
            amount_usd_cents: input.amount_usd_cents ?? null,
            min_usd_cents: input.min_usd_cents ?? null,
            max_usd_cents: input.max_usd_cents ?? null,
            presets_usd_cents: input.presets_usd_cents ?? [],
            collect_email: input.collect_email ?? false,
            success_url: input.success_url ?? null,
            locale,
            max_uses: input.max_uses ?? null,
            expires_at: input.expires_at === undefined ? null : new Date(input.expires_at),
            created_at: now,
            updated_at: now,
          })
          .returningAll();
        const row = await this.audited(statement, tenant, actor, 'link.create', {
          kind: input.kind,
          title: input.title,
        });
        return this.json(row!);
      } catch (err) {
        // A slug collision (1 in 36^12 per pair) is retried with a fresh slug.
        if (tries < 3 && (err as { code?: string; constraint?: string }).code === '23505') continue;
        throw err;
      }
    }
  }

  /** The tenant's links, newest first, at most 500. */
  async list(tenant: Tenant) {
    const rows = await this.deps.db
      .selectFrom('links')
      .selectAll()
      .where('merchant_id', '=', tenant.merchantId)
      .where('mode', '=', tenant.mode)
      .orderBy('id', 'desc')
      .limit(LINK_LIMITS.listMax)
      .execute();
    return { data: rows.map((r) => this.json(r)) };
  }

  async get(tenant: Tenant, id: string) {
    return this.json(await this.row(tenant, id));
  }

  /** Changes what PatchLink allows; `null` clears a nullable field. `expires_at` may be set in the past (ends the link). */
  async update(tenant: Tenant, id: string, patch: PatchLinkInput, actor: Actor) {
    const existing = await this.row(tenant, id);
    if (typeof patch.success_url === 'string') assertHttpUrl(patch.success_url, 'success_url', tenant.mode === 'live');
    const set: Partial<Record<keyof LinksTable, unknown>> = {};
    if (patch.active !== undefined) set.active = patch.active;
    if (patch.title !== undefined) set.title = patch.title;
    if (patch.description !== undefined) set.description = patch.description;
    if (patch.success_url !== undefined) set.success_url = patch.success_url;
    if (patch.max_uses !== undefined) set.max_uses = patch.max_uses;
    if (patch.expires_at !== undefined) set.expires_at = patch.expires_at === null ? null : new Date(patch.expires_at);
    if (Object.keys(set).length === 0) return this.json(existing);
    const statement = this.deps.db
      .updateTable('links')
      .set({ ...set, updated_at: this.deps.clock.now() } as never)
      .where('id', '=', id)
      .where('merchant_id', '=', tenant.merchantId)
      .where('mode', '=', tenant.mode)
      .returningAll();
    const row = await this.audited(statement, tenant, actor, 'link.update', patch);
    if (!row) throw notFound('link');
    return this.json(row);
  }

  /** Public lookup for the link page: by slug alone (the slug is the capability), any merchant and mode. */
  async bySlug(slug: string): Promise<LinkRow | null> {
    if (!new RegExp(SLUG_PATTERN).test(slug)) return null;
    return (await this.deps.db.selectFrom('links').selectAll().where('slug', '=', slug).executeTakeFirst()) ?? null;
  }

  /** Whether the link can take a payment at `now` (the injected clock by default). */
  availability(link: LinkRow, now: Date = this.deps.clock.now()): LinkAvailability {
    if (!link.active) return 'inactive';
    if (link.expires_at !== null && link.expires_at.getTime() <= now.getTime()) return 'expired';
    if (link.max_uses !== null && link.uses >= link.max_uses) return 'used_up';
    return 'ok';
  }

  /** Bounds of an amount the payer (or staff) types: the link's min/max, else the spec's 100 to 100000000 cents. */
  bounds(link: LinkRow): { min: number; max: number } {
    return { min: link.min_usd_cents ?? LINK_LIMITS.centsMin, max: link.max_usd_cents ?? LINK_LIMITS.centsMax };
  }

  /**
   * Creates the payment a payer asked for on a link page. The use is counted (and `n` allocated) when the payment is
   * created, not when it is paid: `max_uses` is a hard cap on payments created. If creating the payment then fails
   * the use is given back (`n` is not: order ids never repeat). 400 for a bad amount or email, 422 `invalid_state`
   * when the link is inactive, expired or used up.
   */
  async pay(link: LinkRow, input: LinkPayInput, actor: Actor): Promise<Payment> {
    const amount = this.amountFor(link, input.amountCents);
    let email: string | undefined;
    if (link.collect_email) {
      email = (input.email ?? '').trim();
      if (email.length === 0) throw invalid('email is required', 'email');
      if (textLength(email) > LINK_LIMITS.emailMax || !EMAIL.test(email))
        throw invalid('email must be an email address', 'email');
    }
    const seq = await this.admit(link);
    const linkUrl = this.url(link);
    try {
      return (
        await this.deps.payments.create(
          tenantOf(link),
          {
            price_amount: amount,
            price_currency: 'USD',
            order_id: this.orderId(link, seq),
            description: link.title,
            ...(link.success_url ? { success_url: link.success_url } : {}),
            ...(link.locale ? { locale: link.locale } : {}),
            // Back on the checkout returns to the link page; a POS payer has no page to go back to.
            ...(link.kind !== 'pos' && (link.mode === 'test' || linkUrl.startsWith('https://'))
              ? { cancel_url: linkUrl }
              : {}),
            metadata: email === undefined ? { link_id: link.id } : { link_id: link.id, payer_email: email },
          },
          undefined,
          actor,
        )
      ).payment;
    } catch (err) {
      await this.release(link);
      throw err;
    }
  }

  /**
   * Counts one use of the link and allocates its next payment number, if it can take a payment now (a hard cap on
   * `max_uses`, also under concurrency); 422 `invalid_state` when it is inactive, expired or used up.
   */
  async admit(link: LinkRow): Promise<number> {
    const now = this.deps.clock.now();
    const admitted = await this.deps.db
      .updateTable('links')
      .set((eb) => ({ uses: eb('uses', '+', 1), seq: eb('seq', '+', 1), updated_at: now }))
      .where('id', '=', link.id)
      .where('active', '=', true)
      .where((eb) => eb.or([eb('max_uses', 'is', null), eb('uses', '<', eb.ref('max_uses'))]))
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .returning(['seq'])
      .executeTakeFirst();
    if (!admitted) {
      const fresh = (await this.bySlug(link.slug)) ?? link;
      throw new ApiError('invalid_state', unavailableMessage(this.availability(fresh, now)));
    }
    return admitted.seq;
  }

  /**
   * Gives back a use `admit` counted when no payment came of it (its number is not given back: order ids never
   * repeat); in `db`'s transaction when given one.
   */
  async release(link: Pick<LinkRow, 'id'>, db: DbOrTx = this.deps.db): Promise<void> {
    await db
      .updateTable('links')
      .set((eb) => ({ uses: eb('uses', '-', 1) }))
      .where('id', '=', link.id)
      .where('uses', '>', 0)
      .execute();
  }

  /** The order id of the link's payment number `seq`. */
  orderId(link: Pick<LinkRow, 'slug'>, seq: number): string {
    return `${link.slug}-${seq}`;
  }

  url(link: Pick<LinkRow, 'slug'>): string {
    return `${this.deps.checkoutBase()}/l/${link.slug}`;
  }

  /** The API's PaymentLink object, fields in the spec's order, every field present. */
  json(r: LinkRow) {
    return {
      id: r.id,
      slug: r.slug,
      url: this.url(r),
      kind: r.kind,
      title: r.title,
      description: r.description,
      amount_usd_cents: r.amount_usd_cents,
      min_usd_cents: r.min_usd_cents,
      max_usd_cents: r.max_usd_cents,
      presets_usd_cents: r.presets_usd_cents,
      collect_email: r.collect_email,
      success_url: r.success_url,
      ...(r.locale ? { locale: r.locale } : {}),
      max_uses: r.max_uses,
      uses: r.uses,
      expires_at: r.expires_at?.toISOString() ?? null,
      active: r.active,
      created_at: r.created_at.toISOString(),
    };
  }

  private amountFor(link: LinkRow, cents: number | undefined): number {
    if (link.kind === 'fixed') return link.amount_usd_cents!;
    if (cents === undefined) throw invalid('amount_usd_cents is required', 'amount_usd_cents');
    if (link.kind === 'tip' && link.presets_usd_cents.includes(cents)) return cents;
    const { min, max } = this.bounds(link);
    if (!Number.isSafeInteger(cents) || cents < min || cents > max) {
      throw invalid(`amount_usd_cents must be a whole number of cents from ${min} to ${max}`, 'amount_usd_cents');
    }
    return cents;
  }

  /** Runs `statement` (an INSERT or UPDATE … RETURNING the link) with its audit row, as one; the changed link, if any. */
  private async audited(
    statement: OperationNodeSource,
    tenant: Tenant,
    actor: Actor,
    action: string,
    details: object,
  ): Promise<LinkRow | undefined> {
    const audited = this.deps.audit.statement<LinkRow>(statement, tenant, actor, action, 'link', { ...details });
    return (await audited.execute(this.deps.db)).rows[0];
  }

  private async row(tenant: Tenant, id: string): Promise<LinkRow> {
    const row = await this.deps.db
      .selectFrom('links')
      .selectAll()
      .where('id', '=', id)
      .where('merchant_id', '=', tenant.merchantId)
      .where('mode', '=', tenant.mode)
      .executeTakeFirst();
    if (!row) throw notFound('link');
    return row;
  }
}

/** The payer-facing reason a link takes no payment. */
export function unavailableMessage(a: LinkAvailability): string {
  switch (a) {
    case 'inactive':
      return 'This payment link has been turned off by the merchant.';
    case 'expired':
      return 'This payment link has expired.';
    case 'used_up':
      return 'This payment link has reached its limit of uses.';
    default:
      return 'This payment link cannot take a payment right now; try again.';
  }
}

function validateCreate(input: CreateLinkInput, mode: Mode, now: Date): void {
  const { kind } = input;
  const has = (k: keyof CreateLinkInput) => input[k] !== undefined;
  if (kind === 'fixed') {
    if (!has('amount_usd_cents')) throw invalid('amount_usd_cents is required for a fixed link', 'amount_usd_cents');
    for (const k of ['min_usd_cents', 'max_usd_cents', 'presets_usd_cents'] as const) {
      if (has(k)) throw invalid(`${k} is not allowed for a fixed link (its price is amount_usd_cents)`, k);
    }
  } else if (has('amount_usd_cents')) {
    throw invalid(
      `amount_usd_cents is only for fixed links; a ${kind} link takes the amount from the payer`,
      'amount_usd_cents',
    );
  }
  const min = input.min_usd_cents ?? LINK_LIMITS.centsMin;
  const max = input.max_usd_cents ?? LINK_LIMITS.centsMax;
  if (min > max) throw invalid('max_usd_cents must be at least min_usd_cents', 'max_usd_cents');
  const presets = input.presets_usd_cents;
  if (kind === 'tip') {
    if (!presets || presets.length === 0)
      throw invalid('presets_usd_cents needs 1 to 6 amounts for a tip link', 'presets_usd_cents');
    if (new Set(presets).size !== presets.length)
      throw invalid('presets_usd_cents must not repeat an amount', 'presets_usd_cents');
    const outside = presets.findIndex((p) => p < min || p > max);
    if (outside >= 0)
      throw invalid(
        `presets_usd_cents.${outside} must be within min_usd_cents and max_usd_cents`,
        `presets_usd_cents.${outside}`,
      );
  } else if (presets !== undefined && kind !== 'fixed') {
    throw invalid(`presets_usd_cents is only for tip links`, 'presets_usd_cents');
  }
  if (kind === 'pos' && input.collect_email)
    throw invalid('collect_email is not available for pos links: the payer never uses the terminal', 'collect_email');
  if (input.success_url !== undefined) assertHttpUrl(input.success_url, 'success_url', mode === 'live');
  if (input.expires_at !== undefined && new Date(input.expires_at).getTime() <= now.getTime()) {
    throw invalid('expires_at must be in the future', 'expires_at');
  }
}

const SLUG_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** 12 characters of [0-9a-z] from the system CSPRNG, unbiased (bytes ≥ 252 are redrawn). */
function newSlug(): string {
  let out = '';
  while (out.length < 12) {
    for (const b of randomBytes(16)) {
      if (b < 252 && out.length < 12) out += SLUG_ALPHABET[b % 36];
    }
  }
  return out;
}
