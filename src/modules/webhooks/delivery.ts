/**
 * The delivery worker: claims due deliveries from the outbox under a lease, POSTs them concurrently with no
 * transaction open, and records each attempt (delivery row and attempt log) in batched statements.
 *
 * - Claim: `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)` sets `lease_token` and moves `locked_until`
 *   and `next_attempt_at` to the lease's end, so any number of workers in any number of processes share the queue
 *   and claimed rows drop out of the due range of the index. A worker that dies keeps its claim only until the
 *   lease runs out; the delivery is then due again and sent again (at least once — receivers deduplicate on the
 *   event id).
 *   A result is written only while its lease token still holds, so a late writer cannot overwrite a newer claim.
 * - Order: only the head of each chain is claimable — a delivery waits while an earlier event (lower `seq`) with
 *   the same ordering key and the same URL is still pending, including while it waits for a retry. Once the
 *   earlier one is delivered or has finally failed (7 attempts), the next goes. So events of one payment arrive
 *   in order, and a payment whose endpoint is down does not hold up any other payment.
 * - Retries: after 1 min, 5 min, 30 min, 2 h, 6 h and 12 h (7 attempts in all), then `failed`. Due times and the
 *   signature's `t` come from the injected clock, so tests drive the schedule with a fake clock.
 * - Throughput: claims are large (the surplus over `concurrency` waits in a queue, so the next batch is ready when
 *   requests finish) and overlap with sending; results are group-committed — whatever finished while the previous
 *   write ran is written in the next one.
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { sql } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import { HOUR, MINUTE, type Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Db, Tx } from '../../db/index.ts';
import type { MerchantService } from '../merchants/index.ts';
import type { MerchantHttpClient, PostResult } from './http-client.ts';

/** NOTE: the spec's retry schedule: delays after the 1st … 6th failed attempt. */
export const RETRY_DELAYS_MS = [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 12 * HOUR] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

const SECRET_CACHE_MS = 60_000;
/** Deliveries held at least (in flight plus queued): claims are worth batching even with few slots. */
const MIN_HELD = 512;
const WRITE_CHUNK = 1000;

/** A delivery claimed for one attempt, with what is needed to send it. */
export interface ClaimedDelivery {
  id: string;
  leaseToken: string;
  /** End of the claim (clock milliseconds). */
  leaseUntil: number;
  eventId: string;
  type: string;
  createdAt: Date;
  /** The event's data exactly as stored (JSON text). */
  data: string;
  merchantId: string;
  mode: Mode;
  url: string;
  /** Attempts made before this one. */
  attempts: number;
}

/** The outcome of one attempt, not yet recorded. */
export interface AttemptResult {
  delivery: ClaimedDelivery;
  startedAt: Date;
  finishedAt: Date;
  response: PostResult;
}

export interface DeliveryOptions {
  db: Db;
  clock: Clock;
  merchants: Pick<MerchantService, 'webhookSecrets'>;
  metrics: Metrics;
  log: Logger;
  client: MerchantHttpClient;
  /** Requests in flight at most. */
  concurrency: number;
  /** Deadline of one request. */
  timeoutMs: number;
  /** How long a claim holds; must exceed the request timeout plus the time to record the result. */
  leaseMs: number;
}

/** The raw webhook body: the Event `{ id, type, created_at, data }`, data inserted as stored. */
export function eventBody(e: { eventId: string; type: string; createdAt: Date; data: string }): string {
  return `{"id":${JSON.stringify(e.eventId)},"type":${JSON.stringify(e.type)},"created_at":"${e.createdAt.toISOString()}","data":${e.data}}`;
}

/**
 * `Service-Signature` value: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. The key is the whole
 * webhook secret string, `whsec_` prefix included, as UTF-8 bytes. While a rolled secret's overlap lasts there are
 * two secrets and two `v1` entries (current first); a receiver accepts the delivery when any of them matches.
 * The worker passes the secrets as prepared keys (`hmacKey`), so the key is not rebuilt for every delivery.
 */
export function signatureHeader(
  secret: string | KeyObject | Array<string | KeyObject>,
  t: number,
  body: string,
): string {
  let out = `t=${t}`;
  for (const s of [secret].flat()) out += `,v1=${createHmac('sha256', s).update(`${t}.`).update(body).digest('hex')}`;
  return out;
}

/** A webhook secret as an HMAC key object (the UTF-8 bytes of the whole string). */
export function hmacKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}

export class WebhookDelivery {
  /** Called when slots have come free or results were recorded (followers may have become due). */
  onProgress: () => void = () => {};

  private inFlight = 0;
  /** Claimed, waiting for a free slot. */
  private queue: ClaimedDelivery[] = [];
  /** Rows being claimed right now. */
  private reserved = 0;
  /** A refill was asked for since the last claim (one wake-up per batch, not per finished request). */
  private refillAsked = false;
  private results: AttemptResult[] = [];
  private writing: Promise<void> | null = null;
  private idleWaiters: Array<() => void> = [];
  private closed = false;
  private secrets = new Map<string, { value: Promise<KeyObject[]>; until: number }>();

  constructor(private readonly o: DeliveryOptions) {}

  /**
   * Claims what is due — up to twice `concurrency` (at least 512) held at once, in flight plus queued, so the next
   * batch is ready when slots free up — and starts sending; returns at once with the number claimed.
   */
  async pump(): Promise<number> {
    this.refillAsked = false;
    const room = this.room();
    if (this.closed || room <= 0) return 0;
    this.reserved += room;
    let claimed: ClaimedDelivery[];
    try {
      claimed = await this.claim(room);
    } finally {
      this.reserved -= room;
    }
    this.queue.push(...claimed);
    this.dispatch();
    if (claimed.length === 0) this.checkIdle();
    return claimed.length;
  }

  /** One deterministic pass (tests, tools): claims what is due now, sends it, records the results. */
  async runOnce(): Promise<number> {
    const n = await this.pump();
    await this.idle();
    return n;
  }

  /** Passes until nothing is due (followers of a delivered event become due within the same drain). */
  async drain(): Promise<number> {
    let total = 0;
    for (let n = await this.runOnce(); n > 0; n = await this.runOnce()) total += n;
    return total;
  }

  /** Resolves when nothing is in flight and every result is recorded. */
  idle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.checkIdle();
    });
  }

  /** Stops claiming, waits for requests in flight and their results. */
  async close(): Promise<void> {
    this.closed = true;
    await this.idle();
  }

  /** Claims up to `limit` due chain heads under a new lease. */
  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const now = this.o.clock.now();
    const token = randomBytes(12).toString('base64url');
    const leaseUntil = now.getTime() + this.o.leaseMs;
    const rows = await this.o.db.transaction().execute(async (tx) => {
      // Walk the due index in order and stop at the limit. Right after a burst of events the statistics still
      // describe a small table, and the planner would rather collect and sort every due row (100 ms at 20,000).
      await sql`SET LOCAL enable_sort = off`.execute(tx);
      return (await this.claimQuery(tx, now, new Date(leaseUntil), token, limit)).rows;
    });
    return rows.map((r) => ({
      id: r.id,
      leaseToken: token,
      leaseUntil,
      eventId: r.event_id,
      type: r.type,
      createdAt: r.created_at,
      data: r.data,
      merchantId: r.merchant_id,
      mode: r.mode,
      url: r.url,
      attempts: r.attempts,
    }));
  }

  private claimQuery(tx: Tx, now: Date, lease: Date, token: string, limit: number) {
    return sql<{
      id: string;
      event_id: string;
      type: string;
      created_at: Date;
      data: string;
      merchant_id: string;
      mode: Mode;
      url: string;
      attempts: number;
    }>`
      UPDATE webhook_deliveries d
      SET locked_until = ${lease}, next_attempt_at = ${lease}, lease_token = ${token}
      FROM events e
      WHERE e.id = d.event_id AND d.id IN (
        SELECT c.id FROM webhook_deliveries c
        WHERE c.status = 'pending' AND c.next_attempt_at <= ${now}
          AND NOT EXISTS (
            SELECT 1 FROM webhook_deliveries p
            WHERE p.status = 'pending' AND p.merchant_id = c.merchant_id AND p.mode = c.mode
              AND p.ordering_key = c.ordering_key AND p.url = c.url AND p.event_seq < c.event_seq
          )
        ORDER BY c.next_attempt_at
        LIMIT ${limit}
        FOR UPDATE OF c SKIP LOCKED
      )
      RETURNING d.id, d.event_id, e.type, e.created_at, e.data::text AS data, d.merchant_id, d.mode, d.url, d.attempts
    `.execute(tx);
  }

  /** Signs and POSTs one claimed delivery; never throws. Nothing is written. */
  async send(d: ClaimedDelivery): Promise<AttemptResult> {
    const startedAt = this.o.clock.now();
    let response: PostResult;
    try {
      const body = eventBody(d);
      const secret = await this.secret(d.merchantId);
      response = await this.o.client.post(d.mode, d.url, body, {
        'Content-Type': 'application/json',
        'Service-Signature': signatureHeader(secret, Math.floor(startedAt.getTime() / 1000), body),
        'Service-Event-Id': d.eventId,
        'Service-Event-Type': d.type,
      });
    } catch (err) {
      this.o.log.error({ err, delivery: d.id }, 'webhook delivery could not be prepared');
      response = {
        outcome: 'network_error',
        status: null,
        error: 'internal error preparing the request',
        body: null,
        durationMs: 0,
      };
    }
    this.o.metrics.webhookDeliveries.inc({ outcome: response.outcome });
    return { delivery: d, startedAt, finishedAt: this.o.clock.now(), response };
  }

  /**
   * Records attempts: the delivery's new state (delivered, failed, or pending with its next due time) and the
   * attempt log row, for every result whose lease still holds. A retried chain head also moves its followers'
   * due time to its own, so blocked followers are not scanned again before then.
   */
  async record(results: AttemptResult[]): Promise<void> {
    for (let i = 0; i < results.length; i += WRITE_CHUNK) await this.recordChunk(results.slice(i, i + WRITE_CHUNK));
  }

  private async recordChunk(results: AttemptResult[]): Promise<void> {
    const cols = {
      id: [] as string[],
      token: [] as string[],
      attempt: [] as number[],
      status: [] as string[],
      // Times as ISO text: the driver's own Date formatting is a large share of encoding thousands of them.
      next: [] as (string | null)[],
      started: [] as string[],
      finished: [] as string[],
      duration: [] as number[],
      outcome: [] as string[],
      http: [] as (number | null)[],
      error: [] as (string | null)[],
      body: [] as (string | null)[],
    };
    for (const r of results) {
      const attempt = r.delivery.attempts + 1;
      const ok = r.response.outcome === 'delivered';
      const status = ok ? 'delivered' : attempt >= MAX_ATTEMPTS ? 'failed' : 'pending';
      cols.id.push(r.delivery.id);
      cols.token.push(r.delivery.leaseToken);
      cols.attempt.push(attempt);
      cols.status.push(status);
      cols.next.push(
        status === 'pending' ? new Date(r.finishedAt.getTime() + RETRY_DELAYS_MS[attempt - 1]!).toISOString() : null,
      );
      cols.started.push(r.startedAt.toISOString());
      cols.finished.push(r.finishedAt.toISOString());
      cols.duration.push(r.response.durationMs);
      cols.outcome.push(r.response.outcome);
      cols.http.push(r.response.status);
      cols.error.push(clean(r.response.error));
      cols.body.push(clean(r.response.body));
      if (status === 'failed')
        this.o.log.warn(
          { delivery: r.delivery.id, event: r.delivery.eventId, url: r.delivery.url },
          'webhook delivery failed after the last attempt',
        );
    }
    await sql`
      WITH r AS (
        SELECT * FROM unnest(
          ${cols.id}::text[], ${cols.token}::text[], ${cols.attempt}::int[], ${cols.status}::text[], ${cols.next}::timestamptz[],
          ${cols.started}::timestamptz[], ${cols.finished}::timestamptz[], ${cols.duration}::int[], ${cols.outcome}::text[],
          ${cols.http}::int[], ${cols.error}::text[], ${cols.body}::text[]
        ) AS r(id, token, attempt, status, next_at, started_at, finished_at, duration_ms, outcome, http_status, error, body)
      ), u AS (
        UPDATE webhook_deliveries d
        SET status = r.status, attempts = r.attempt, next_attempt_at = r.next_at, locked_until = NULL, lease_token = NULL,
            last_attempt_at = r.started_at, last_http_status = r.http_status, last_error = r.error,
            delivered_at = CASE WHEN r.status = 'delivered' THEN r.finished_at END
        FROM r
        WHERE d.id = r.id AND d.lease_token = r.token
        RETURNING d.id, d.status, d.next_attempt_at, d.merchant_id, d.mode, d.ordering_key, d.url, d.event_seq
      ), followers AS (
        UPDATE webhook_deliveries f
        SET next_attempt_at = h.next_attempt_at
        FROM u h
        WHERE h.status = 'pending' AND f.status = 'pending' AND f.lease_token IS NULL
          AND f.merchant_id = h.merchant_id AND f.mode = h.mode AND f.ordering_key = h.ordering_key AND f.url = h.url
          AND f.event_seq > h.event_seq AND f.next_attempt_at < h.next_attempt_at
      )
      INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, outcome, http_status, error, response_body)
      SELECT r.id, r.attempt, r.started_at, r.duration_ms, r.outcome, r.http_status, r.error, r.body
      FROM r JOIN u ON u.id = r.id
      ON CONFLICT DO NOTHING
    `.execute(this.o.db);
  }

  private room(): number {
    return Math.max(2 * this.o.concurrency, MIN_HELD) - this.inFlight - this.queue.length - this.reserved;
  }

  /**
   * Starts queued deliveries in free slots. One whose claim would run out before its request and the recording of
   * its result could finish (slow endpoints kept the queue waiting) is let go unsent: it becomes due again when the
   * lease ends, rather than risk being sent by this worker and another.
   */
  private dispatch(): void {
    while (this.inFlight < this.o.concurrency && this.queue.length > 0) {
      const d = this.queue.shift()!;
      if (d.leaseUntil - this.o.clock.now().getTime() < this.o.timeoutMs + (this.o.leaseMs - this.o.timeoutMs) / 2)
        continue;
      this.launch(d);
    }
  }

  private launch(d: ClaimedDelivery): void {
    this.inFlight++;
    void this.send(d).then((result) => {
      this.inFlight--;
      this.results.push(result);
      this.writing ??= this.writeLoop();
      this.dispatch();
      // Claim more while results are being written, once there is room for a worthwhile batch.
      if (!this.closed && !this.refillAsked && this.room() >= Math.max(1, Math.ceil(this.o.concurrency / 2))) {
        this.refillAsked = true;
        this.onProgress();
      }
    });
  }

  /** Group commit: writes everything that finished, again and again until nothing is left. */
  private async writeLoop(): Promise<void> {
    while (this.results.length > 0) {
      const batch = this.results;
      this.results = [];
      try {
        await this.record(batch);
      } catch (err) {
        // The leases run out and the deliveries are sent again: at least once, never lost.
        this.o.log.error({ err, results: batch.length }, 'recording webhook attempts failed');
      }
    }
    this.writing = null;
    this.onProgress();
    this.checkIdle();
  }

  private checkIdle(): void {
    if (this.inFlight > 0 || this.queue.length > 0 || this.reserved > 0 || this.writing || this.results.length > 0)
      return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Drops cached secrets (a secret was rolled; called through NOTIFY in every process). */
  forgetSecrets(): void {
    this.secrets.clear();
  }

  /**
   * The merchant's webhook secrets as HMAC keys (two during a roll's overlap), cached briefly (decrypting on every
   * delivery would dominate at volume). The cache never outlives the overlap window it was read in.
   */
  private secret(merchantId: string): Promise<KeyObject[]> {
    const now = this.o.clock.millis();
    const hit = this.secrets.get(merchantId);
    if (hit && hit.until > now) return hit.value;
    const read = this.o.merchants.webhookSecrets(merchantId, this.o.clock.now());
    const value = read.then((r) => r.secrets.map(hmacKey));
    value.catch(() => this.secrets.delete(merchantId));
    if (this.secrets.size > 10_000) this.secrets.clear();
    const entry = { value, until: now + SECRET_CACHE_MS };
    void read.then(
      (r) => {
        if (r.previousUntil) entry.until = Math.min(entry.until, Math.max(now, r.previousUntil.getTime()));
      },
      () => {},
    );
    this.secrets.set(merchantId, entry);
    return value;
  }
}

/** PostgreSQL text cannot hold NUL; a response snippet may. */
function clean(text: string | null): string | null {
  return text === null ? null : text.replace(/\0/g, '\uFFFD');
}
