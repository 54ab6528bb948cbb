/**
 * Webhook events: the outbox every other module publishes into (inside its own transaction, so an event exists
 * exactly when the change it reports was committed), the events API (list, get with deliveries and attempts,
 * redeliver) and the delivery worker.
 *
 * Publishing wakes delivery workers two ways: `NOTIFY kasse_webhooks` in the transaction (PostgreSQL delivers it
 * at commit, to every process) and an in-process after-commit nudge for transactions opened with `withTx`.
 * Tenant scoping: every read takes the merchant and the mode; another merchant's or the other mode's event is 404.
 */
import type { Tenant } from '../../core/tenant.ts';
import { sql } from 'kysely';
import { ownedRow } from '../../db/owned.ts';
import type { Config } from '../../config.ts';
import type { Clock } from '../../core/clock.ts';
import { decodeCursor, fetchPage } from '../../core/cursor.ts';
import { invalidState } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import { afterCommit, withTx, type Db, type DbOrTx, type Tx } from '../../db/index.ts';
import { defaultWebhookUrl, type MerchantService } from '../merchants/index.ts';
import { WebhookDelivery } from './delivery.ts';
import { MerchantHttpClient, type AttemptOutcome } from './http-client.ts';
import type { EventInput, EventPublisher } from './types.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import { WorkNotifier } from '../../core/wakers.ts';

/** NOTIFY channel: new deliveries are due. */
export const WEBHOOKS_CHANNEL = 'kasse_webhooks';

export const USER_AGENT = 'Kasse-Webhooks/1';

/** The Event as the API shows it and as the webhook body carries it. */
export interface EventObject {
  id: string;
  type: string;
  created_at: string;
  data: unknown;
}

export interface AttemptObject {
  /** 1 for the first attempt of the delivery. */
  attempt: number;
  started_at: string;
  duration_ms: number;
  outcome: AttemptOutcome;
  http_status: number | null;
  error: string | null;
  /** The first 1 KiB of the response body. */
  response_body: string | null;
}

export interface DeliveryObject {
  id: string;
  url: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
  attempts: AttemptObject[];
}

export interface EventWithDeliveries extends EventObject {
  deliveries: DeliveryObject[];
}

export interface EventPage {
  data: EventObject[];
  next_cursor: string | null;
}

export interface WebhookServiceDeps {
  db: Db;
  clock: Clock;
  merchants: MerchantService;
  metrics: Metrics;
  config: Config;
  log: Logger;
  /** Writes the audit row of a redelivery someone asked for. */
  audit: AuditLog;
}

/** Leases outlast the request deadline by this much (time to record the result). */
const LEASE_MARGIN_MS = 60_000;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An event's stored body: its object as its serialiser (the API's) writes it. */
const bodyOf = <T>(e: EventInput<T>): string => (e.serialize ? e.serialize(e.data) : JSON.stringify(e.data));

export class WebhookService extends WorkNotifier implements EventPublisher {
  /** The delivery worker; the workers role runs `pump` in a loop, tests call `runOnce`/`drain`. */
  readonly delivery: WebhookDelivery;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly audit: AuditLog;
  private readonly client: MerchantHttpClient;

  constructor(deps: WebhookServiceDeps) {
    super();
    this.db = deps.db;
    this.clock = deps.clock;
    this.audit = deps.audit;
    const { timeoutMs, concurrency } = deps.config.webhooks;
    this.client = new MerchantHttpClient({ timeoutMs, userAgent: USER_AGENT, connectionsPerOrigin: concurrency });
    this.delivery = new WebhookDelivery({
      db: deps.db,
      clock: deps.clock,
      merchants: deps.merchants,
      metrics: deps.metrics,
      log: deps.log,
      client: this.client,
      concurrency,
      timeoutMs,
      leaseMs: timeoutMs + LEASE_MARGIN_MS,
    });
    this.delivery.onProgress = () => this.nudge();
  }

  /**
   * Stores the event in the caller's transaction and, when there is a destination (`input.destination`, else the
   * merchant's default webhook URL for the mode, read in the same transaction), a delivery due now.
   */
  async publish<T>(tx: Tx, input: EventInput<T>): Promise<{ id: string }> {
    const id = newId('evt');
    const data = bodyOf(input);
    const now = this.clock.now();
    const destination = input.destination || null;
    const { rows } = await sql`
      WITH e AS (
        INSERT INTO events (id, merchant_id, mode, type, ordering_key, destination, data, created_at)
        VALUES (${id}, ${input.merchantId}, ${input.mode}, ${input.type}, ${input.orderingKey}, ${destination}, ${data}::json, ${now})
        RETURNING seq
      ), target AS (
        SELECT COALESCE(${destination}::text, CASE ${input.mode}::text WHEN 'live' THEN m.webhook_url_live ELSE m.webhook_url_test END) AS url
        FROM merchants m WHERE m.id = ${input.merchantId}
      ), d AS (
        INSERT INTO webhook_deliveries (id, event_id, event_seq, merchant_id, mode, ordering_key, url, next_attempt_at, created_at)
        SELECT ${newId('dlv')}, ${id}, e.seq, ${input.merchantId}, ${input.mode}, ${input.orderingKey}, target.url, ${now}, ${now}
        FROM e, target WHERE target.url IS NOT NULL
        RETURNING 1
      )
      SELECT pg_notify(${WEBHOOKS_CHANNEL}, '') FROM d
    `.execute(tx);
    if (rows.length > 0) afterCommit(tx, () => this.nudge());
    return { id };
  }

  /** `publish` for many events in one statement; they are numbered (`seq`) in the order given. */
  async publishMany<T>(tx: Tx, inputs: readonly EventInput<T>[]): Promise<void> {
    if (inputs.length === 0) return;
    const now = this.clock.now();
    // The events' fields travel as one JSON document, and their serialised objects as one byte string with each
    // object's place in it: no array escaping on the way, and each stored body is the serialiser's text byte for byte
    // (a JSON function would decode the objects, and cannot decode every text a json column holds).
    const heads = new Array<string>(inputs.length);
    const bodies: string[] = [];
    // A body several events share (the same text) travels once.
    const placed = new Map<string, { at: number; bytes: number }>();
    let at = 1;
    for (let i = 0; i < inputs.length; i++) {
      const e = inputs[i]!;
      const body = bodyOf(e);
      const seen = placed.get(body);
      const bytes = seen?.bytes ?? Buffer.byteLength(body);
      heads[i] = JSON.stringify({
        id: newId('evt'),
        delivery_id: newId('dlv'),
        merchant_id: e.merchantId,
        mode: e.mode,
        type: e.type,
        ordering_key: e.orderingKey,
        destination: e.destination || null,
        at: seen?.at ?? at,
        bytes,
      });
      if (seen) continue;
      placed.set(body, { at, bytes });
      bodies.push(body);
      at += bytes;
    }
    const { rows } = await sql`
      WITH input AS (
        SELECT id, delivery_id, merchant_id, mode, type, ordering_key, destination, at, bytes, ord
        FROM ROWS FROM (json_to_recordset(${`[${heads.join(',')}]`}::json)
          AS (id text, delivery_id text, merchant_id text, mode text, type text, ordering_key text, destination text, at int, bytes int)) WITH ORDINALITY
          AS i(id, delivery_id, merchant_id, mode, type, ordering_key, destination, at, bytes, ord)
      ), body AS MATERIALIZED (
        -- each distinct body decoded once, however many events carry it
        SELECT at, convert_from(substring(${Buffer.from(bodies.join(''))}::bytea FROM at FOR bytes), 'UTF8')::json AS data
        FROM (SELECT DISTINCT at, bytes FROM input) b
      ), e AS (
        INSERT INTO events (id, merchant_id, mode, type, ordering_key, destination, data, created_at)
        SELECT i.id, i.merchant_id, i.mode, i.type, i.ordering_key, i.destination, b.data, ${now}
        FROM input i JOIN body b ON b.at = i.at ORDER BY i.ord
        RETURNING id, seq
      ), d AS (
        INSERT INTO webhook_deliveries (id, event_id, event_seq, merchant_id, mode, ordering_key, url, next_attempt_at, created_at)
        SELECT i.delivery_id, i.id, e.seq, i.merchant_id, i.mode, i.ordering_key,
          COALESCE(i.destination, CASE i.mode WHEN 'live' THEN m.webhook_url_live ELSE m.webhook_url_test END), ${now}, ${now}
        FROM input i JOIN e ON e.id = i.id JOIN merchants m ON m.id = i.merchant_id
        WHERE COALESCE(i.destination, CASE i.mode WHEN 'live' THEN m.webhook_url_live ELSE m.webhook_url_test END) IS NOT NULL
        ORDER BY e.seq
        RETURNING 1
      )
      SELECT pg_notify(${WEBHOOKS_CHANNEL}, '') FROM (SELECT 1 FROM d LIMIT 1) x
    `.execute(tx);
    if (rows.length > 0) afterCommit(tx, () => this.nudge());
  }

  /** Events newest first; `cursor` is the `next_cursor` of the previous page. */
  async list(tenant: Tenant, opts: { type?: string; cursor?: string; limit?: number } = {}): Promise<EventPage> {
    const { mode, merchantId } = tenant;
    const limit = opts.limit ?? 20;
    let q = this.db
      .selectFrom('events')
      .select(['id', 'seq', 'type', 'created_at', 'data'])
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode);
    if (opts.type) q = q.where('type', '=', opts.type);
    if (opts.cursor) q = q.where('seq', '<', BigInt(decodeCursor(opts.cursor)));
    const { page, next_cursor } = await fetchPage(q.orderBy('seq', 'desc'), limit, (r) => r.seq);
    return {
      data: page.map(toEvent),
      next_cursor,
    };
  }

  /** One event with every delivery made for it and each delivery's attempts. */
  async get(tenant: Tenant, id: string): Promise<EventWithDeliveries> {
    const event = await this.findEvent(this.db, tenant, id);
    const deliveries = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('event_id', '=', id)
      .orderBy('id')
      .execute();
    const attempts =
      deliveries.length === 0
        ? []
        : await this.db
            .selectFrom('webhook_attempts')
            .selectAll()
            .where(
              'delivery_id',
              'in',
              deliveries.map((d) => d.id),
            )
            .orderBy('delivery_id')
            .orderBy('attempt')
            .execute();
    return {
      ...toEvent(event),
      deliveries: deliveries.map((d) => ({
        id: d.id,
        url: d.url,
        status: d.status,
        attempt_count: d.attempts,
        next_attempt_at: iso(d.next_attempt_at),
        delivered_at: iso(d.delivered_at),
        created_at: d.created_at.toISOString(),
        attempts: attempts
          .filter((a) => a.delivery_id === d.id)
          .map((a) => ({
            attempt: a.attempt,
            started_at: a.started_at.toISOString(),
            duration_ms: a.duration_ms,
            outcome: a.outcome,
            http_status: a.http_status,
            error: a.error,
            response_body: a.response_body,
          })),
      })),
    };
  }

  /** The events of one object (ordering key: a payment id), oldest first, each with its deliveries and attempts. */
  async timeline(tenant: Tenant, orderingKey: string, limit = 100): Promise<EventWithDeliveries[]> {
    const { mode, merchantId } = tenant;
    const rows = await this.db
      .selectFrom('events')
      .select('id')
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .where('ordering_key', '=', orderingKey)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return Promise.all(rows.map((r) => this.get(tenant, r.id)));
  }

  /**
   * A new delivery of the event, due now, to its current destination (the object's own URL, else the account
   * default now). It runs the full retry schedule of its own; deliveries already made are kept.
   * 422 `invalid_state` when there is no destination.
   */
  async redeliver(tenant: Tenant, id: string, actor: Actor): Promise<DeliveryObject> {
    const { mode, merchantId } = tenant;
    return withTx(this.db, async (tx, onCommit) => {
      const event = await this.findEvent(tx, tenant, id);
      const url = event.destination ?? (await defaultWebhookUrl(tx, tenant));
      if (!url) throw invalidState(`No webhook URL is set for ${mode} mode, so the event cannot be sent.`);
      const now = this.clock.now();
      const row = await tx
        .insertInto('webhook_deliveries')
        .values({
          id: newId('dlv'),
          event_id: id,
          event_seq: event.seq,
          merchant_id: merchantId,
          mode,
          ordering_key: event.ordering_key,
          url,
          next_attempt_at: now,
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await sql`SELECT pg_notify(${WEBHOOKS_CHANNEL}, '')`.execute(tx);
      onCommit(() => this.nudge());
      const details = { delivery_id: row.id, url };
      await this.audit.record(tx, tenant, actor, 'event.redeliver', { type: 'event', id }, details);
      return {
        id: row.id,
        url: row.url,
        status: row.status,
        attempt_count: row.attempts,
        next_attempt_at: iso(row.next_attempt_at),
        delivered_at: null,
        created_at: row.created_at.toISOString(),
        attempts: [],
      };
    });
  }

  /** One delivery pass now (tests and tools); returns the number of deliveries attempted. */
  runOnce(): Promise<number> {
    return this.delivery.runOnce();
  }

  /** Delivery passes until nothing is due. */
  drain(): Promise<number> {
    return this.delivery.drain();
  }

  /** Waits for deliveries in flight, then closes pooled connections. */
  async close(): Promise<void> {
    await this.delivery.close();
    this.client.close();
  }

  private findEvent(db: DbOrTx, tenant: Tenant, id: string) {
    return ownedRow(db, 'events', tenant, id, 'event');
  }
}

function toEvent(row: { id: string; type: string; created_at: Date; data: unknown }): EventObject {
  return { id: row.id, type: row.type, created_at: row.created_at.toISOString(), data: row.data };
}
