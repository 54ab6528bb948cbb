/**
 * The discovery catalogue (the `bazaar` extension of `@x402/extensions`), `GET {base_url}/x402/discovery/resources`:
 * where agents find what they can pay for through this Kasse, per mode, with the extension's parameters (`type`,
 * `limit`, `offset`, and its filters `network`, `payTo`, `scheme`, `extensions`) and response shape.
 *
 * What is listed:
 * - every resource a merchant's server declares through the extension, once a payment for it is recorded: the
 *   payload's `extensions.bazaar` (copied there by the paying client, who may add or change it) only says where to
 *   look; what is recorded is what the server at the resource's URL advertises in its own unpaid 402, when that asks
 *   for payment to the merchant on the network paid. Validated against the extension's schema with its own helpers,
 *   with the requirements it was paid with (one per network), its input and output description and the service
 *   metadata the extension's sanitiser keeps. It drops out when it has not been paid for `KASSE_X402_DISCOVERY_DAYS`
 *   days.
 * - every active agent-payable payment link of the mode (fixed amount, nothing to ask the payer), with what it
 *   accepts, until it has been neither created nor paid by an agent for as long.
 * Either drops out when the merchant turns it off on the dashboard's Agents page.
 *
 * The catalogue is public, like a facilitator's: agents have no key of the merchant. Links are read from the links
 * module's table in the one paginated query that joins their catalogue state (the one read across modules here).
 */
import type { Tenant } from '../../core/tenant.ts';
import {
  declareDiscoveryExtension,
  extractDiscoveryInfo,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
  type DiscoveryExtension,
} from '@x402/extensions/bazaar';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentPayload as OfficialPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { sql } from 'kysely';
import type { X402Requirements } from '../../chains/x402.ts';
import type { Clock } from '../../core/clock.ts';
import { notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import type { Db, Tx } from '../../db/index.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import type { PostResult } from '../webhooks/index.ts';
import type { FacilitatorBody } from './wire.ts';

/** NOTE: the extension's pages: 20 resources unless asked, at most 100. */
export const DISCOVERY_LIMIT_DEFAULT = 20;
export const DISCOVERY_LIMIT_MAX = 100;
/** How long a declared resource's record is not written again for the same news (verify then settle of one call). */
const NEWS_MS = 60_000;
const URL_MAX = 2048;
const DAY_MS = 24 * 60 * 60 * 1000;

/** What an agent-payable link answers when paid (docs/x402.md), as its bazaar declaration shows it. */
const LINK_RECEIPT_EXAMPLE = {
  payment_id: 'pay_01JD8X4TQ9KZ3M7V2N5R6W8Y0A',
  status: 'paid',
  order_id: 'k3x9m2p7q8r4-7',
  price_amount: 500,
  price_currency: 'USD',
  description: 'Weather report',
  network: 'eip155:8453',
  transaction: '0x4c1d…',
  payer: '0x857b…',
};

/** The bazaar declaration of every agent-payable link: `GET`, no input, the JSON receipt out. */
export const LINK_DECLARATION: DiscoveryExtension = (() => {
  const ext = declareDiscoveryExtension({ output: { example: LINK_RECEIPT_EXAMPLE } }).bazaar!;
  (ext.info.input as { method?: string }).method = 'GET';
  return ext;
})();

export interface DiscoveryQuery {
  type?: string;
  limit?: number;
  offset?: number;
  network?: string;
  payTo?: string;
  scheme?: string;
  extensions?: string;
}

/** A catalogue entry as the extension's `DiscoveryResource`. */
export interface DiscoveryItem {
  resource: string;
  type: string;
  x402Version: number;
  accepts: unknown[];
  lastUpdated: string;
  description?: string;
  mimeType?: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  extensions?: Record<string, unknown>;
}

export interface DiscoveryPage {
  x402Version: 2;
  items: DiscoveryItem[];
  pagination: { limit: number; offset: number; total: number };
}

/** A declared resource as the merchant's dashboard shows it. */
export interface CatalogueEntry {
  id: string;
  type: string;
  resource: string;
  method: string | null;
  description: string | null;
  networks: string[];
  published: boolean;
  lastPaidAt: Date | null;
  lastSeenAt: Date;
  /** Listed now: published, paid for, and not for too long ago. */
  listed: boolean;
}

export interface DiscoveryDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  audit: AuditLog;
  /** Days a resource stays listed after its last payment (`KASSE_X402_DISCOVERY_DAYS`). */
  days: number;
  /** What a link of `cents` accepts from agents of the merchant in `mode`. */
  requirements(tenant: Tenant, cents: number): Promise<X402Requirements[]>;
  /** The CAIP-2 networks `mode` takes x402 payments on (every link accepts on each). */
  networks(mode: Mode): Promise<string[]>;
  /** The merchant whose x402 address `payTo` is in `mode`, if any. */
  merchantOfPayTo(mode: Mode, payTo: string): Promise<string | null>;
  /** Asks a merchant's server at `url` (the merchant HTTP client: live mode reaches no private network). */
  ask(mode: Mode, method: string, url: string, headers: Record<string, string>): Promise<PostResult>;
  linkUrl(slug: string): string;
}

interface Row {
  kind: 'declared' | 'link';
  id: string;
  merchant_id: string;
  resource: string | null;
  type: string;
  description: string | null;
  mime_type: string | null;
  service_name: string | null;
  tags: string[] | null;
  icon_url: string | null;
  accepts: unknown[] | null;
  bazaar: unknown;
  slug: string | null;
  cents: number | null;
  updated: Date;
}

export class X402Discovery {
  /** When this process last asked for or recorded each paid resource (by merchant, mode, URL and network). */
  private readonly written = new Map<string, number>();

  constructor(private readonly deps: DiscoveryDeps) {}

  /**
   * Records a resource paid for through a settlement Kasse recorded, as its server declares it: the payload's bazaar
   * extension (echoed by the client) only says there is a declaration and where; what is recorded is what the server
   * at that URL advertises in its own 402 (`PAYMENT-REQUIRED`'s `extensions.bazaar` and `resource`), and only when that
   * 402 asks for payment to this merchant on this network. So a payer can list nothing the merchant's server does not
   * declare. Never throws (the payment is what matters).
   */
  async paid(tenant: Tenant, body: FacilitatorBody): Promise<void> {
    const { mode, merchantId } = tenant;
    try {
      const claimed = body.paymentPayload as unknown as OfficialPayload;
      const hint = claimed.extensions?.bazaar as DiscoveryExtension | undefined;
      const url = claimed.resource?.url;
      if (!hint || typeof hint !== 'object' || typeof url !== 'string' || !isHttpUrl(url)) return;
      const now = this.deps.clock.now();
      const { origin, pathname } = new URL(url);
      const seen = `${merchantId}|${mode}|${origin}${pathname}|${body.paymentRequirements.network}`;
      const last = this.written.get(seen);
      if (last !== undefined && now.getTime() - last < NEWS_MS) return;
      // Asked at most once a NEWS_MS per resource (origin and path, whatever the query), whatever it answers: a payer
      // names the URL.
      if (this.written.size > 10_000) this.written.clear();
      this.written.set(seen, now.getTime());
      const advertised = await this.advertised(mode, url, hint, body.paymentRequirements);
      if (!advertised) return;
      const ext = advertised.bazaar;
      const payload = { ...claimed, resource: advertised.resource, extensions: { bazaar: ext } } as OfficialPayload;
      if (!validateDiscoveryExtension(ext).valid || !validateDiscoveryExtensionSpec(ext as never).valid) return;
      const found = extractDiscoveryInfo(payload, body.paymentRequirements as PaymentRequirements, false);
      if (!found || found.resourceUrl.length > URL_MAX) return;
      const method = 'method' in found && found.method ? found.method : null;
      const tool = 'toolName' in found ? found.toolName : null;
      const type = found.discoveryInfo.input.type;
      const bazaar: Record<string, unknown> = { info: ext.info, schema: ext.schema };
      if ('routeTemplate' in found && found.routeTemplate) bazaar.routeTemplate = found.routeTemplate;
      const requirement = JSON.stringify(body.paymentRequirements);
      await sql`
        INSERT INTO x402_resources AS r (id, merchant_id, mode, kind, type, resource, method, tool_name, description,
          mime_type, service_name, tags, icon_url, accepts, bazaar, first_seen_at, last_seen_at, last_paid_at)
        VALUES (${newId('x4r')}, ${merchantId}, ${mode}, 'declared', ${type}, ${found.resourceUrl}, ${method}, ${tool},
          ${text(found.description, 500)}, ${text(found.mimeType, 100)}, ${found.serviceName ?? null},
          ${found.tags ? JSON.stringify(found.tags) : null}::jsonb, ${found.iconUrl ?? null},
          jsonb_build_array(${requirement}::jsonb), ${JSON.stringify(bazaar)}::jsonb, ${now}, ${now}, ${now})
        ON CONFLICT (merchant_id, mode, type, resource, (coalesce(method, '')), (coalesce(tool_name, '')))
          WHERE kind = 'declared'
        DO UPDATE SET description = excluded.description, mime_type = excluded.mime_type,
          service_name = excluded.service_name, tags = excluded.tags, icon_url = excluded.icon_url,
          bazaar = excluded.bazaar, last_seen_at = excluded.last_seen_at,
          last_paid_at = coalesce(excluded.last_paid_at, r.last_paid_at),
          accepts = coalesce((SELECT jsonb_agg(e) FROM jsonb_array_elements(r.accepts) e
                              WHERE e->>'network' IS DISTINCT FROM ${body.paymentRequirements.network}), '[]'::jsonb)
                    || excluded.accepts`.execute(this.deps.db);
    } catch (err) {
      this.deps.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'x402 resource not catalogued');
    }
  }

  /**
   * What the server at `url` advertises unpaid (asked with the declaration's method, without a body): its bazaar
   * declaration and resource, when its 402 asks for payment to `paid.payTo` on `paid.network` for that URL; else null.
   */
  private async advertised(
    mode: Mode,
    url: string,
    hint: DiscoveryExtension,
    paid: { network: string; payTo: string },
  ): Promise<{ resource: OfficialPayload['resource']; bazaar: DiscoveryExtension } | null> {
    const input = (hint.info as { input?: { type?: string; method?: unknown } } | undefined)?.input;
    const method =
      input?.type === 'mcp'
        ? 'POST'
        : typeof input?.method === 'string' && ASKED_WITH.has(input.method)
          ? input.method
          : 'GET';
    const answer = await this.deps.ask(mode, method, url, { accept: 'application/json' });
    const header = answer.headers?.['payment-required'];
    if (answer.status !== 402 || !header) return null;
    let required: PaymentRequired;
    try {
      required = decodePaymentRequiredHeader(header);
    } catch {
      return null;
    }
    const bazaar = required.extensions?.bazaar as DiscoveryExtension | undefined;
    const resource = required.resource;
    if (!bazaar || typeof bazaar !== 'object' || typeof resource?.url !== 'string' || !samePlace(resource.url, url))
      return null;
    if (!required.accepts?.some((a) => a.network === paid.network && sameAddress(a.payTo, paid.payTo))) return null;
    return { resource, bazaar };
  }

  /** Notes an agent's payment of a link (in the settlement's transaction): it stays listed from now. */
  async linkPaid(tx: Tx, tenant: Tenant, linkId: string, resource: string, now: Date): Promise<void> {
    const { mode, merchantId } = tenant;
    await sql`
      INSERT INTO x402_resources (id, merchant_id, mode, kind, link_id, type, resource, first_seen_at, last_seen_at,
        last_paid_at)
      VALUES (${newId('x4r')}, ${merchantId}, ${mode}, 'link', ${linkId}, 'http', ${resource}, ${now}, ${now}, ${now})
      ON CONFLICT (link_id) WHERE kind = 'link'
      DO UPDATE SET last_seen_at = excluded.last_seen_at, last_paid_at = excluded.last_paid_at`.execute(tx);
  }

  /** One page of the mode's catalogue, newest news first. */
  async list(mode: Mode, q: DiscoveryQuery): Promise<DiscoveryPage> {
    const limit = q.limit ?? DISCOVERY_LIMIT_DEFAULT;
    const offset = q.offset ?? 0;
    const empty = { x402Version: 2 as const, items: [], pagination: { limit, offset, total: 0 } };
    if ((q.type !== undefined && q.type !== 'http' && q.type !== 'mcp') || (q.scheme && q.scheme !== 'exact'))
      return empty;
    if (q.extensions !== undefined && q.extensions !== 'bazaar') return empty;
    const merchant = q.payTo === undefined ? null : await this.deps.merchantOfPayTo(mode, q.payTo);
    if (q.payTo !== undefined && !merchant) return empty;
    const now = this.deps.clock.now();
    const since = new Date(now.getTime() - this.deps.days * DAY_MS);
    const declared = sql`
      SELECT 'declared' AS kind, r.id, r.merchant_id, r.resource, r.type, r.description, r.mime_type, r.service_name,
        r.tags, r.icon_url, r.accepts, r.bazaar, NULL AS slug, NULL::integer AS cents, r.last_paid_at AS updated
      FROM x402_resources r
      WHERE r.mode = ${mode} AND r.kind = 'declared' AND r.published AND r.last_paid_at > ${since}
        AND (${q.type ?? null}::text IS NULL OR r.type = ${q.type ?? null})
        AND (${merchant}::text IS NULL OR r.merchant_id = ${merchant})
        AND (${q.network ?? null}::text IS NULL OR r.accepts @> jsonb_build_array(jsonb_build_object('network', ${q.network ?? null}::text)))`;
    // Every link of the mode accepts on every network the mode takes (`requirements`): a network filter keeps or
    // drops them all, checked on the page below.
    const links = this.listedLinks(mode, merchant, now, q.type);
    const withLinks = q.network === undefined || (await this.deps.networks(mode)).includes(q.network);
    const all = withLinks ? sql`${declared} UNION ALL ${links}` : declared;
    const [page, count] = await Promise.all([
      sql<Row>`SELECT * FROM (${all}) c ORDER BY updated DESC, id DESC LIMIT ${limit} OFFSET ${offset}`.execute(
        this.deps.db,
      ),
      sql<{ total: string }>`SELECT count(*) AS total FROM (${all}) c`.execute(this.deps.db),
    ]);
    const accepted = new Map<string, Promise<X402Requirements[]>>();
    const items: DiscoveryItem[] = [];
    for (const r of page.rows) {
      if (r.kind === 'declared') {
        items.push({
          resource: r.resource!,
          type: r.type,
          x402Version: 2,
          accepts: r.accepts ?? [],
          lastUpdated: r.updated.toISOString(),
          ...(r.description ? { description: r.description } : {}),
          ...(r.mime_type ? { mimeType: r.mime_type } : {}),
          ...(r.service_name ? { serviceName: r.service_name } : {}),
          ...(r.tags ? { tags: r.tags } : {}),
          ...(r.icon_url ? { iconUrl: r.icon_url } : {}),
          extensions: { bazaar: r.bazaar },
        });
        continue;
      }
      const key = `${r.merchant_id}|${r.cents}`;
      if (!accepted.has(key)) accepted.set(key, this.deps.requirements({ mode, merchantId: r.merchant_id }, r.cents!));
      const accepts = await accepted.get(key)!;
      items.push({
        resource: this.deps.linkUrl(r.slug!),
        type: 'http',
        x402Version: 2,
        accepts: q.payTo === undefined ? accepts : accepts.filter((a) => sameAddress(a.payTo, q.payTo!)),
        lastUpdated: r.updated.toISOString(),
        description: r.description!,
        mimeType: 'application/json',
        extensions: { bazaar: LINK_DECLARATION },
      });
    }
    return { x402Version: 2, items, pagination: { limit, offset, total: Number(count.rows[0]!.total) } };
  }

  /**
   * The links the catalogue lists (of one merchant, or all), at `now`: the one rule, for the catalogue and the
   * dashboard. Agent-payable (fixed amount, nothing to ask), active, not expired, not used up, not turned off, and
   * created or paid by an agent within the last `days` days.
   */
  private listedLinks(mode: Mode, merchant: string | null, now: Date, type?: string) {
    const since = new Date(now.getTime() - this.deps.days * DAY_MS);
    return sql`
      SELECT 'link' AS kind, l.id, l.merchant_id, NULL AS resource, 'http' AS type, l.title AS description,
        'application/json' AS mime_type, NULL AS service_name, NULL::jsonb AS tags, NULL AS icon_url, NULL::jsonb AS accepts,
        NULL::jsonb AS bazaar, l.slug, l.amount_usd_cents AS cents, greatest(l.updated_at, s.last_paid_at) AS updated
      FROM links l LEFT JOIN x402_resources s ON s.kind = 'link' AND s.link_id = l.id
      WHERE l.mode = ${mode} AND l.kind = 'fixed' AND NOT l.collect_email AND l.active
        AND l.amount_usd_cents IS NOT NULL
        AND (l.expires_at IS NULL OR l.expires_at > ${now}) AND (l.max_uses IS NULL OR l.uses < l.max_uses)
        AND coalesce(s.published, true) AND greatest(l.created_at, s.last_paid_at) > ${since}
        AND (${type ?? null}::text IS NULL OR ${type ?? null} = 'http')
        AND (${merchant}::text IS NULL OR l.merchant_id = ${merchant})`;
  }

  /** The ids of the merchant's links of `mode` the catalogue lists now. */
  async listedLinkIds(tenant: Tenant): Promise<Set<string>> {
    const { mode, merchantId } = tenant;
    const { rows } = await sql<{
      id: string;
    }>`SELECT id FROM (${this.listedLinks(mode, merchantId, this.deps.clock.now())}) c`.execute(this.deps.db);
    return new Set(rows.map((r) => r.id));
  }

  /** The merchant's declared resources of `mode` (listed or not), newest news first, at most 200. */
  async catalogue(tenant: Tenant): Promise<CatalogueEntry[]> {
    const { mode, merchantId } = tenant;
    const since = new Date(this.deps.clock.now().getTime() - this.deps.days * DAY_MS);
    const rows = await this.deps.db
      .selectFrom('x402_resources')
      .select([
        'id',
        'type',
        'resource',
        'method',
        'description',
        'accepts',
        'published',
        'last_paid_at',
        'last_seen_at',
      ])
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .where('kind', '=', 'declared')
      .orderBy('last_seen_at', 'desc')
      .limit(200)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      type: r.type,
      resource: r.resource,
      method: r.method,
      description: r.description,
      networks: (r.accepts as Array<{ network?: string }>).map((a) => a.network ?? '').filter(Boolean),
      published: r.published,
      lastPaidAt: r.last_paid_at,
      lastSeenAt: r.last_seen_at,
      listed: r.published && r.last_paid_at !== null && r.last_paid_at > since,
    }));
  }

  /** The links of the merchant in `mode` turned off for discovery, and when each was last paid by an agent. */
  async linkStates(tenant: Tenant): Promise<Map<string, { published: boolean; lastPaidAt: Date | null }>> {
    const { mode, merchantId } = tenant;
    const rows = await this.deps.db
      .selectFrom('x402_resources')
      .select(['link_id', 'published', 'last_paid_at'])
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .where('kind', '=', 'link')
      .execute();
    return new Map(rows.map((r) => [r.link_id!, { published: r.published, lastPaidAt: r.last_paid_at }]));
  }

  /** Days a resource stays listed after its last payment. */
  get days(): number {
    return this.deps.days;
  }

  /** Turns a declared resource of the merchant on or off for discovery, with its audit row. 404 for another's. */
  async publishResource(tenant: Tenant, id: string, published: boolean, actor: Actor): Promise<void> {
    const { mode, merchantId } = tenant;
    await this.deps.db.transaction().execute(async (tx) => {
      const r = await tx
        .updateTable('x402_resources')
        .set({ published })
        .where('id', '=', id)
        .where('merchant_id', '=', merchantId)
        .where('mode', '=', mode)
        .where('kind', '=', 'declared')
        .returning(['resource'])
        .executeTakeFirst();
      if (!r) throw notFound('catalogue resource');
      await this.deps.audit.record(
        tx,
        tenant,
        actor,
        published ? 'x402.resource.publish' : 'x402.resource.unpublish',
        { type: 'x402_resource', id },
        { resource: r.resource },
      );
    });
  }

  /**
   * Turns one of the merchant's links on or off for discovery, with its audit row. The caller has checked the link is
   * the merchant's (links module) and passes its URL.
   */
  async publishLink(
    tenant: Tenant,
    link: { id: string; url: string },
    published: boolean,
    actor: Actor,
  ): Promise<void> {
    const { mode, merchantId } = tenant;
    const now = this.deps.clock.now();
    await this.deps.db.transaction().execute(async (tx) => {
      await sql`
        INSERT INTO x402_resources (id, merchant_id, mode, kind, link_id, type, resource, published, first_seen_at,
          last_seen_at)
        VALUES (${newId('x4r')}, ${merchantId}, ${mode}, 'link', ${link.id}, 'http', ${link.url}, ${published}, ${now},
          ${now})
        ON CONFLICT (link_id) WHERE kind = 'link' DO UPDATE SET published = excluded.published`.execute(tx);
      await this.deps.audit.record(
        tx,
        tenant,
        actor,
        published ? 'x402.resource.publish' : 'x402.resource.unpublish',
        { type: 'link', id: link.id },
        { resource: link.url },
      );
    });
  }
}

/** The HTTP methods a declaration may name. */
/**
 * The methods a declared resource is asked with (without a body); a resource declared with another (DELETE, PUT,
 * PATCH) is asked with GET: Kasse never sends a method that changes something to a URL a payer wrote.
 */
const ASKED_WITH = new Set(['GET', 'HEAD', 'POST']);

/** Two URLs of the same resource: same origin and path (queries may differ). */
function samePlace(a: string, b: string): boolean {
  try {
    const [x, y] = [new URL(a), new URL(b)];
    return x.origin === y.origin && x.pathname === y.pathname;
  } catch {
    return false;
  }
}

function isHttpUrl(s: string): boolean {
  if (s.length > URL_MAX) return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password;
  } catch {
    return false;
  }
}

/** A text the client described a resource with, cut to `max` code points; null when absent. */
function text(s: string | undefined, max: number): string | null {
  if (typeof s !== 'string' || !s) return null;
  return [...s].slice(0, max).join('');
}

const sameAddress = (a: string, b: string): boolean =>
  a === b || (a.startsWith('0x') && a.toLowerCase() === b.toLowerCase());
