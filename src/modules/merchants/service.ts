/**
 * Merchants and their credentials. API keys are shown once and stored only as SHA-256 hashes; the webhook secret
 * is sealed with the operator's secret key. Authentication is on every API request, so resolved keys are cached
 * per process; revoking or rolling a key drops it from every process's cache through NOTIFY.
 */
import { randomBytes } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Mode } from '../../core/mode.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import { changes, OPERATOR_FIELDS } from './changes.ts';
import { ApiError, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { textLength } from '../../core/text.ts';
import { assertHttpUrl } from '../../core/urls.ts';
import { decryptSecret, encryptSecret, hashApiKey } from '../../core/secrets.ts';
import { afterCommit, withTx, type Db, type DbOrTx, type Tx } from '../../db/index.ts';
import type { MerchantsTable } from './tables.ts';
import { checkBrandColor } from './branding.ts';
import { Brands } from './logos.ts';

/** A key that authenticated: the request's tenant (its mode is the listener's, checked by the API's guard). */
export interface AuthenticatedKey extends Tenant {
  keyId: string;
  merchantId: string;
  mode: Mode;
  /** Requests per minute for this key (the merchant's limit or the default). */
  rateLimit: number;
  /** Requests per minute for this key on the x402 facilitator routes (the merchant's x402 limit or its default). */
  x402RateLimit: number;
  /** The merchant as of authentication (cached with the key; merchant updates invalidate it). */
  merchant: MerchantRecord;
}

export interface NewMerchant {
  merchant_id: string;
  test_key: string;
  live_key: string;
  webhook_secret: string;
}

export const KEYS_CHANNEL = 'kasse_keys';
const KEY_PATTERN = /^kasse_(test|live)_[A-Za-z0-9_-]{32}$/;
const CACHE_TTL_MS = 60_000;

export function generateApiKey(mode: Mode): string {
  return `kasse_${mode}_${randomBytes(24).toString('base64url')}`;
}

export interface MerchantRecord {
  id: string;
  name: string;
  webhookUrl: { test: string | null; live: string | null };
  rateLimitPerMinute: number | null;
  /** The x402 facilitator routes' own limit per key; null: the configured default. */
  x402RateLimitPerMinute: number | null;
  feeBps: number | null;
  /** ISO 8601, formatted once when the record is loaded (it is served from the key cache on every /account call). */
  createdAt: string;
  /** Tax profile per mode, as stored (shape and checks: modules/invoices/profile.ts); null when unset. */
  taxProfile: { test: unknown; live: unknown };
  /** Coin disbursements pay out in (a token of a chain family that pays out, `ChainFamily.payouts`). */
  payoutToken: string;
  /** Owner approvals a disbursement needs; null: 2 when the merchant has two or more owners, else 1. */
  approvalsRequired: number | null;
  /** Brand colour `#rrggbb` (lower case) and logo (its SHA-256 in merchant_logos); null when unset. */
  brandColor: string | null;
  logoSha256: string | null;
  /** Underpayment tolerance in basis points (0 to 500; 0: the spec's rules). */
  underpaymentToleranceBps: number;
}

/** Settings an owner edits on the dashboard. */
export interface MerchantSettingsPatch {
  name?: string;
  payoutToken?: string;
  approvalsRequired?: number | null;
  /** Account default webhook URL of test mode (http or https) or live mode (https only); null removes it. */
  webhookUrlTest?: string | null;
  webhookUrlLive?: string | null;
  /** `#RRGGBB` (checked: branding.ts) or null to clear it. */
  brandColor?: string | null;
  underpaymentToleranceBps?: number;
}

/** An operator or API change (`update`); `taxProfile` replaces one mode's profile (null removes it). */
export interface MerchantPatch {
  webhookUrlTest?: string | null;
  webhookUrlLive?: string | null;
  rateLimitPerMinute?: number | null;
  x402RateLimitPerMinute?: number | null;
  feeBps?: number | null;
  taxProfile?: { mode: Mode; value: object | null };
  /** Checked by the caller (branding.ts); null removes it. */
  brandColor?: string | null;
  /** A logo already stored (logos.ts); null removes it. */
  logoSha256?: string | null;
  underpaymentToleranceBps?: number;
}

/** NOTE: a merchant's display name is 1 to 120 characters. */
export const NAME_MAX = 120;

/** NOTE: a payment short by at most this share of its pay amount may be treated as paid (500 bps = 5 %). */
export const TOLERANCE_MAX_BPS = 500;

/** NOTE: after a webhook secret is rolled, deliveries are signed with the previous one too for this long. */
export const WEBHOOK_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

export class MerchantService {
  /** Resolved tokens: token → key (null for a refused token), the token's hash for invalidation, expiry. */
  private cache = new Map<string, { value: AuthenticatedKey | null; hash: string; until: number }>();
  /** Merchants' brands (name, colour, logo) as pages, PDFs and the logo route show them. */
  readonly brands: Brands;

  constructor(
    private readonly db: Db,
    private readonly secretKey: Buffer,
    private readonly defaults: { rateLimitPerMinute: number; x402RateLimitPerMinute: number },
    private readonly clock: Clock,
    /** Writes the audit rows of the changes made here (keys, the webhook secret, the operator's changes). */
    private readonly audit: AuditLog,
  ) {
    this.brands = new Brands(db);
  }

  async create(input: { name: string; webhookUrl?: string | null }): Promise<NewMerchant> {
    const name = input.name.trim();
    if (!name) throw new ApiError('invalid_request', 'name must not be empty', 'name');
    if (input.webhookUrl) assertHttpUrl(input.webhookUrl, 'webhook_url');
    const id = newId('mer');
    const webhookSecret = `whsec_${randomBytes(32).toString('base64url')}`;
    const testKey = generateApiKey('test');
    const liveKey = generateApiKey('live');
    const now = this.clock.now();
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('merchants')
        .values({
          id,
          name,
          webhook_url_test: input.webhookUrl ?? null,
          // NOTE: live webhooks go only to https; an http URL is kept for test mode alone.
          webhook_url_live: input.webhookUrl?.startsWith('https://') ? input.webhookUrl : null,
          webhook_secret_enc: encryptSecret(this.secretKey, webhookSecret),
        })
        .execute();
      await tx
        .insertInto('api_keys')
        .values([
          {
            id: newId('key'),
            merchant_id: id,
            mode: 'test',
            key_hash: hashApiKey(testKey),
            key_hint: testKey.slice(-4),
            created_at: now,
          },
          {
            id: newId('key'),
            merchant_id: id,
            mode: 'live',
            key_hash: hashApiKey(liveKey),
            key_hint: liveKey.slice(-4),
            created_at: now,
          },
        ])
        .execute();
    });
    return { merchant_id: id, test_key: testKey, live_key: liveKey, webhook_secret: webhookSecret };
  }

  async get(id: string): Promise<MerchantRecord> {
    const row = await this.db.selectFrom('merchants').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound('merchant');
    return toRecord(row);
  }

  /**
   * Display names of the merchants `ids` (those that exist), in one query; for mail and pages about many objects.
   * `db` is the caller's transaction when it holds one (a second pool connection inside a transaction can starve the pool).
   */
  async names(ids: readonly string[], db: DbOrTx = this.db): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await db
      .selectFrom('merchants')
      .select(['id', 'name'])
      .where('id', 'in', [...new Set(ids)])
      .execute();
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  async list(): Promise<MerchantRecord[]> {
    const rows = await this.db.selectFrom('merchants').select('id').orderBy('id').execute();
    return Promise.all(rows.map((r) => this.get(r.id)));
  }

  async webhookSecret(merchantId: string): Promise<string> {
    const row = await this.db
      .selectFrom('merchants')
      .select('webhook_secret_enc')
      .where('id', '=', merchantId)
      .executeTakeFirst();
    if (!row) throw notFound('merchant');
    return decryptSecret(this.secretKey, row.webhook_secret_enc);
  }

  /**
   * The secrets deliveries are signed with at `now`: the current one, then the previous one while a roll's overlap
   * window lasts (each gives a `v1` signature).
   */
  async webhookSecrets(merchantId: string, now: Date): Promise<{ secrets: string[]; previousUntil: Date | null }> {
    const row = await this.db
      .selectFrom('merchants')
      .select(['webhook_secret_enc', 'webhook_secret_prev_enc', 'webhook_secret_prev_until'])
      .where('id', '=', merchantId)
      .executeTakeFirst();
    if (!row) throw notFound('merchant');
    const secrets = [decryptSecret(this.secretKey, row.webhook_secret_enc)];
    const overlap =
      row.webhook_secret_prev_enc !== null &&
      row.webhook_secret_prev_until !== null &&
      row.webhook_secret_prev_until.getTime() > now.getTime();
    if (overlap) secrets.push(decryptSecret(this.secretKey, row.webhook_secret_prev_enc!));
    return { secrets, previousUntil: overlap ? row.webhook_secret_prev_until : null };
  }

  /**
   * A new webhook secret, returned once, audited (`webhook_secret.roll`) in its transaction. Until `overlapMs` from now
   * deliveries carry a signature with the previous secret as well, so the merchant's endpoint can switch without
   * refusing a delivery.
   */
  async rollWebhookSecret(
    merchantId: string,
    actor: Actor,
    overlapMs = WEBHOOK_SECRET_OVERLAP_MS,
  ): Promise<{ webhook_secret: string; previous_valid_until: string }> {
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const until = new Date(this.clock.now().getTime() + overlapMs);
    await withTx(this.db, async (tx) => {
      const r = await tx
        .updateTable('merchants')
        .set((eb) => ({
          webhook_secret_prev_enc: eb.ref('webhook_secret_enc'),
          webhook_secret_prev_until: until,
          webhook_secret_enc: encryptSecret(this.secretKey, secret),
        }))
        .where('id', '=', merchantId)
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) throw notFound('merchant');
      await this.audit.record(tx, { merchantId }, actor, 'webhook_secret.roll');
      await this.broadcastKeyChange('*', tx);
    });
    return { webhook_secret: secret, previous_valid_until: until.toISOString() };
  }

  /**
   * Applies dashboard settings in `db` (the caller's transaction) under the merchant row's lock: only the fields
   * given change, and `before` is the row as it was when locked, so a concurrent change is neither lost nor
   * misreported. `after` is the row as this change left it. 400 for a bad value.
   */
  async updateSettings(
    db: DbOrTx,
    merchantId: string,
    patch: MerchantSettingsPatch,
    payoutTokens: readonly string[],
  ): Promise<{ before: MerchantRecord; after: MerchantRecord }> {
    const values: Record<string, unknown> = {};
    if (patch.name !== undefined) {
      const name = patch.name.trim();
      if (!name || textLength(name) > NAME_MAX)
        throw new ApiError('invalid_request', `name must be 1 to ${NAME_MAX} characters`, 'name');
      values.name = name;
    }
    if (patch.payoutToken !== undefined) {
      if (!payoutTokens.includes(patch.payoutToken))
        throw new ApiError('invalid_request', `payout_token must be one of ${payoutTokens.join(', ')}`, 'payout_token');
      values.payout_token = patch.payoutToken;
    }
    if (patch.webhookUrlTest !== undefined) {
      if (patch.webhookUrlTest !== null) assertHttpUrl(patch.webhookUrlTest, 'webhook_url');
      values.webhook_url_test = patch.webhookUrlTest;
    }
    if (patch.webhookUrlLive !== undefined) {
      if (patch.webhookUrlLive !== null) assertHttpUrl(patch.webhookUrlLive, 'webhook_url', true);
      values.webhook_url_live = patch.webhookUrlLive;
    }
    if (patch.approvalsRequired !== undefined) {
      const n = patch.approvalsRequired;
      if (n !== null && (!Number.isInteger(n) || n < 1 || n > 20))
        throw new ApiError('invalid_request', 'approvals_required must be 1 to 20', 'approvals_required');
      values.approvals_required = n;
    }
    if (patch.brandColor !== undefined)
      values.brand_color = patch.brandColor === null ? null : checkBrandColor(patch.brandColor, 'brand_color');
    if (patch.underpaymentToleranceBps !== undefined) {
      checkPatch({ underpaymentToleranceBps: patch.underpaymentToleranceBps });
      values.underpayment_tolerance_bps = patch.underpaymentToleranceBps;
    }
    const change = await this.change(db, merchantId, () => values);
    if (Object.keys(values).length > 0) await this.broadcastKeyChange('*', db);
    return change;
  }

  /**
   * Applies `patch` in `tx`, the caller's transaction (which writes the change's audit row), under the merchant row's
   * lock. `patch` may be a function of the merchant as locked, so a merge over stored settings (the tax profile) loses
   * no concurrent change; it may throw to refuse. Answers the merchant before and after, read in `tx` (the same
   * object when nothing was written).
   */
  async updateIn(
    tx: Tx,
    merchantId: string,
    patch: MerchantPatch | ((current: MerchantRecord) => MerchantPatch),
  ): Promise<{ before: MerchantRecord; after: MerchantRecord }> {
    if (typeof patch !== 'function') checkPatch(patch);
    const change = await this.change(tx, merchantId, (current) => {
      const p = typeof patch === 'function' ? patch(current) : patch;
      if (typeof patch === 'function') checkPatch(p);
      return patchValues(p);
    });
    if (change.after !== change.before) await this.broadcastKeyChange('*', tx);
    return change;
  }

  /**
   * The operator's change of a merchant (`kasse merchant update`), audited as `settings.update` naming what changed,
   * from what, to what. Answers the merchant as this change left it.
   */
  async update(merchantId: string, patch: MerchantPatch, actor: Actor): Promise<MerchantRecord> {
    return withTx(this.db, async (tx) => {
      const { before, after } = await this.updateIn(tx, merchantId, patch);
      const details = changes(before, after, OPERATOR_FIELDS);
      if (details) await this.audit.record(tx, { merchantId }, actor, 'settings.update', null, details);
      return after;
    });
  }

  /** Locks the merchant row, then writes the columns `values` gives for it (none: no write). 404 for no merchant. */
  private async change(
    db: DbOrTx,
    merchantId: string,
    values: (current: MerchantRecord) => Record<string, unknown>,
  ): Promise<{ before: MerchantRecord; after: MerchantRecord }> {
    const row = await db
      .selectFrom('merchants')
      .selectAll()
      .where('id', '=', merchantId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw notFound('merchant');
    const before = toRecord(row);
    const set = values(before);
    if (Object.keys(set).length === 0) return { before, after: before };
    const updated = await db
      .updateTable('merchants')
      .set(set)
      .where('id', '=', merchantId)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { before, after: toRecord(updated) };
  }

  /**
   * Issues a new key for the tenant's mode and revokes its previous keys of that mode, in `tx` (audited `key.roll`).
   * Returns the new key, once.
   */
  async rollKeyIn(tx: Tx, tenant: Tenant, actor: Actor): Promise<{ key_id: string; key: string }> {
    const { mode, merchantId } = tenant;
    if (!(await tx.selectFrom('merchants').select('id').where('id', '=', merchantId).executeTakeFirst()))
      throw notFound('merchant');
    const key = generateApiKey(mode);
    const keyId = newId('key');
    const now = this.clock.now();
    const old = await tx
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .where('revoked_at', 'is', null)
      .returning('key_hash')
      .execute();
    await tx
      .insertInto('api_keys')
      .values({
        id: keyId,
        merchant_id: merchantId,
        mode,
        key_hash: hashApiKey(key),
        key_hint: key.slice(-4),
        created_at: now,
      })
      .execute();
    await this.audit.record(tx, tenant, actor, 'key.roll', { type: 'key', id: keyId });
    for (const o of old) await this.broadcastKeyChange(o.key_hash, tx);
    return { key_id: keyId, key };
  }

  /** `rollKeyIn` in a transaction of its own. */
  rollKey(tenant: Tenant, actor: Actor): Promise<{ key_id: string; key: string }> {
    return withTx(this.db, (tx) => this.rollKeyIn(tx, tenant, actor));
  }

  /** Revokes the tenant's active key `keyId` (audited `key.revoke`); 404 for a key it does not have. */
  revokeKey(tenant: Tenant, keyId: string, actor: Actor): Promise<{ key_id: string; merchant_id: string }> {
    return this.revoke('id', keyId, actor, tenant);
  }

  /**
   * Revokes any merchant's active key, named by its id or by the key itself: the operator's (`kasse key revoke`),
   * acting for no merchant. Audited `key.revoke` in the key's own merchant and mode.
   */
  revokeAnyKey(idOrKey: string, actor: Actor): Promise<{ key_id: string; merchant_id: string }> {
    return KEY_PATTERN.test(idOrKey)
      ? this.revoke('key_hash', hashApiKey(idOrKey), actor, null)
      : this.revoke('id', idOrKey, actor, null);
  }

  private async revoke(
    column: 'id' | 'key_hash',
    value: string,
    actor: Actor,
    tenant: Tenant | null,
  ): Promise<{ key_id: string; merchant_id: string }> {
    const row = await withTx(this.db, async (tx) => {
      let q = tx
        .updateTable('api_keys')
        .set({ revoked_at: this.clock.now() })
        .where(column, '=', value)
        .where('revoked_at', 'is', null);
      if (tenant) q = q.where('merchant_id', '=', tenant.merchantId).where('mode', '=', tenant.mode);
      const r = await q.returning(['id', 'merchant_id', 'mode', 'key_hash']).executeTakeFirst();
      if (!r) throw notFound('active API key');
      await this.audit.record(tx, tenantOf(r), actor, 'key.revoke', { type: 'key', id: r.id });
      await this.broadcastKeyChange(r.key_hash, tx);
      return r;
    });
    return { key_id: row.id, merchant_id: row.merchant_id };
  }

  async listKeys(merchantId: string) {
    return this.db
      .selectFrom('api_keys')
      .select(['id', 'mode', 'key_hint', 'created_at', 'revoked_at'])
      .where('merchant_id', '=', merchantId)
      .orderBy('id')
      .execute();
  }

  /**
   * Resolves a bearer token. 401 for anything that is not an active key; the caller compares the mode.
   * Positive and negative answers are cached for a minute; key changes invalidate through NOTIFY.
   */
  async authenticate(token: string | undefined): Promise<AuthenticatedKey> {
    return this.authenticateCached(token) ?? this.resolve(token!, this.clock.millis());
  }

  /**
   * The answer for a token from this process's cache, without waiting: the key, a thrown 401, or undefined when the
   * token is not cached (then `authenticate` asks the database). The cache is keyed by the token itself, so a
   * request that hits it costs a map lookup rather than a SHA-256; the tokens live only in this process's memory,
   * as they do in every request it reads, and the database still holds only hashes.
   */
  authenticateCached(token: string | undefined): AuthenticatedKey | undefined {
    if (!token) throw unauthorized();
    // Only well-formed tokens are ever cached, so a hit needs no pattern check.
    const hit = this.cache.get(token);
    if (!hit || hit.until <= this.clock.millis()) {
      if (!KEY_PATTERN.test(token)) throw unauthorized();
      return undefined;
    }
    if (!hit.value) throw unauthorized();
    return hit.value;
  }

  private async resolve(token: string, now: number): Promise<AuthenticatedKey> {
    const hash = hashApiKey(token);
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('merchants', 'merchants.id', 'api_keys.merchant_id')
      .select(['api_keys.id as key_id', 'api_keys.mode', 'api_keys.revoked_at'])
      .selectAll('merchants')
      .where('api_keys.key_hash', '=', hash)
      .executeTakeFirst();
    const value: AuthenticatedKey | null =
      row && !row.revoked_at
        ? {
            keyId: row.key_id,
            merchantId: row.id,
            mode: row.mode,
            rateLimit: row.rate_limit_per_minute ?? this.defaults.rateLimitPerMinute,
            x402RateLimit: row.x402_rate_limit_per_minute ?? this.defaults.x402RateLimitPerMinute,
            merchant: toRecord(row),
          }
        : null;
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(token, { value, hash, until: now + CACHE_TTL_MS });
    if (!value) throw unauthorized();
    return value;
  }

  /** Drops cached keys: those with one hash, or everything for '*'. Called locally and by the NOTIFY listener. */
  invalidate(hash: string): void {
    if (hash === '*') {
      this.cache.clear();
      return;
    }
    // Key changes are rare; a scan keeps the hot path free of a second map.
    for (const [token, entry] of this.cache) if (entry.hash === hash) this.cache.delete(token);
  }

  /**
   * Drops cached keys here and in every process. Inside the caller's transaction the notice goes out at its commit
   * (PostgreSQL delivers NOTIFY then) and this process forgets again after it, so no request can cache the merchant
   * as it was before the change between the two.
   */
  private async broadcastKeyChange(hash: string, db: DbOrTx = this.db): Promise<void> {
    this.invalidate(hash);
    await sql`SELECT pg_notify(${KEYS_CHANNEL}, ${hash})`.execute(db);
    if (db.isTransaction) afterCommit(db as Tx, () => this.invalidate(hash));
  }
}

function toRecord(row: Selectable<MerchantsTable>): MerchantRecord {
  return {
    id: row.id,
    name: row.name,
    webhookUrl: { test: row.webhook_url_test, live: row.webhook_url_live },
    rateLimitPerMinute: row.rate_limit_per_minute,
    x402RateLimitPerMinute: row.x402_rate_limit_per_minute,
    feeBps: row.fee_bps,
    createdAt: row.created_at.toISOString(),
    taxProfile: { test: row.tax_profile_test ?? null, live: row.tax_profile_live ?? null },
    payoutToken: row.payout_token,
    approvalsRequired: row.approvals_required,
    brandColor: row.brand_color,
    logoSha256: row.logo_sha256,
    underpaymentToleranceBps: row.underpayment_tolerance_bps,
  };
}

/** 400 for a value `update` cannot store. */
function checkPatch(patch: MerchantPatch): void {
  if (patch.webhookUrlTest) assertHttpUrl(patch.webhookUrlTest, 'webhook_url_test');
  if (patch.webhookUrlLive) assertHttpUrl(patch.webhookUrlLive, 'webhook_url_live', true);
  if (patch.rateLimitPerMinute !== undefined && patch.rateLimitPerMinute !== null && !(patch.rateLimitPerMinute >= 1)) {
    throw new ApiError('invalid_request', 'rate limit must be at least 1 per minute', 'rate_limit_per_minute');
  }
  const x402 = patch.x402RateLimitPerMinute;
  if (x402 !== undefined && x402 !== null && !(Number.isInteger(x402) && x402 >= 1))
    throw new ApiError(
      'invalid_request',
      'x402 rate limit must be at least 1 per minute',
      'x402_rate_limit_per_minute',
    );
  const bps = patch.underpaymentToleranceBps;
  if (bps !== undefined && (!Number.isInteger(bps) || bps < 0 || bps > TOLERANCE_MAX_BPS))
    throw new ApiError(
      'invalid_request',
      `underpayment_tolerance_bps must be a whole number from 0 to ${TOLERANCE_MAX_BPS} (5 %)`,
      'underpayment_tolerance_bps',
    );
}

/** The merchants columns a patch sets. */
function patchValues(patch: MerchantPatch): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  if (patch.webhookUrlTest !== undefined) values.webhook_url_test = patch.webhookUrlTest;
  if (patch.webhookUrlLive !== undefined) values.webhook_url_live = patch.webhookUrlLive;
  if (patch.rateLimitPerMinute !== undefined) values.rate_limit_per_minute = patch.rateLimitPerMinute;
  if (patch.x402RateLimitPerMinute !== undefined) values.x402_rate_limit_per_minute = patch.x402RateLimitPerMinute;
  if (patch.feeBps !== undefined) values.fee_bps = patch.feeBps;
  if (patch.brandColor !== undefined) values.brand_color = patch.brandColor;
  if (patch.logoSha256 !== undefined) values.logo_sha256 = patch.logoSha256;
  if (patch.underpaymentToleranceBps !== undefined) values.underpayment_tolerance_bps = patch.underpaymentToleranceBps;
  if (patch.taxProfile)
    values[`tax_profile_${patch.taxProfile.mode}`] =
      patch.taxProfile.value === null ? null : JSON.stringify(patch.taxProfile.value);
  return values;
}

function unauthorized(): ApiError {
  return new ApiError(
    'unauthorized',
    'Missing, malformed, unknown or revoked API key. Send Authorization: Bearer <key>.',
  );
}
