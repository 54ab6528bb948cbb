/**
 * Subscriptions: scheduled invoices for a customer. Each invoice is an ordinary payment (created by the payments
 * module); `subscription_invoices` ties it to its subscription and period.
 *
 * Time lives in the rows. `run_at` is when the scheduler next has work for a subscription (a period falls due, an
 * invoice's 24 hours end, a cancelled subscription's open payments are to be withdrawn); workers in any process
 * select due rows with `FOR UPDATE SKIP LOCKED` through the partial index. Subscription times (`started_at`,
 * `next_due_at`, due and check times of invoices) are on the subscription's own clock: the wall clock plus
 * `clock_offset_ms`, which only the test API's advance ever moves (so it is 0 for every live subscription).
 *
 * A period is invoiced once: `(subscription_id, period, seq)` is unique, and the subscription row is locked while an
 * invoice is written. `seq` 1 is the period's invoice; 2, 3, … are fresh payments issued after the previous one
 * expired unpaid (grace). `check_at` is set on the latest invoice of a period that is not paid yet: the time the
 * scheduler looks at it again.
 */
import { sql, type Kysely } from 'kysely';
import { tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE subscriptions (
      ${tenant},
      customer_email text NOT NULL CHECK (char_length(customer_email) BETWEEN 3 AND 254),
      customer_name text CHECK (char_length(customer_name) <= 200),
      title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 120),
      amount_usd_cents integer NOT NULL CHECK (amount_usd_cents BETWEEN 100 AND 100000000),
      interval text NOT NULL CHECK (interval IN ('week', 'month', 'year')),
      interval_count integer NOT NULL CHECK (interval_count BETWEEN 1 AND 12),
      grace_days integer NOT NULL CHECK (grace_days BETWEEN 0 AND 30),
      status text NOT NULL CHECK (status IN ('active', 'past_due', 'cancelled')),
      started_at timestamptz NOT NULL,
      next_due_at timestamptz NOT NULL,
      periods_invoiced integer NOT NULL DEFAULT 0 CHECK (periods_invoiced >= 0),
      periods_paid integer NOT NULL DEFAULT 0 CHECK (periods_paid >= 0 AND periods_paid <= periods_invoiced),
      last_payment_id text,
      success_url text,
      -- json, not jsonb: the merchant's metadata comes back exactly as sent (key order included).
      metadata json NOT NULL,
      cancelled_at timestamptz,
      cancellation_reason text CHECK (cancellation_reason IN ('merchant', 'customer', 'unpaid')),
      clock_offset_ms bigint NOT NULL DEFAULT 0 CHECK (clock_offset_ms >= 0 AND (mode = 'test' OR clock_offset_ms = 0)),
      run_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL))
    );
    CREATE INDEX subscriptions_due ON subscriptions (run_at) WHERE run_at IS NOT NULL;
    CREATE INDEX subscriptions_list ON subscriptions (merchant_id, mode, id DESC);
    CREATE INDEX subscriptions_status ON subscriptions (merchant_id, mode, status, id DESC);
    CREATE INDEX subscriptions_customer ON subscriptions (merchant_id, mode, lower(customer_email), id DESC);

    CREATE TABLE subscription_invoices (
      payment_id text PRIMARY KEY REFERENCES payments(id),
      subscription_id text NOT NULL REFERENCES subscriptions(id),
      period integer NOT NULL CHECK (period >= 1),
      seq integer NOT NULL CHECK (seq >= 1),
      -- the period's due time and when its grace ends (subscription clock)
      due_at timestamptz NOT NULL,
      grace_ends_at timestamptz NOT NULL,
      -- when this payment was issued (subscription clock)
      issued_at timestamptz NOT NULL,
      check_at timestamptz,
      -- this payment is paid (kept by the payments hook; a period is paid when any of its payments is)
      paid boolean NOT NULL DEFAULT false,
      UNIQUE (subscription_id, period, seq)
    );
    CREATE INDEX subscription_invoices_open ON subscription_invoices (subscription_id, period) WHERE check_at IS NOT NULL;
  `.execute(db);
}
