/**
 * Webhooks: the event outbox, one delivery per event and destination, and a log of every delivery attempt.
 *
 * `events.data` is `json`, not `jsonb`: json keeps the text exactly as written, so the webhook body and
 * `GET /events/{id}` show the object's fields in the API's order, byte for byte the same on every retry.
 * A delivery is claimed with a lease (`locked_until`, `lease_token`, and `next_attempt_at` moved to the lease's end);
 * a worker that dies mid-delivery loses the claim when the lease runs out and the delivery is sent again (at least
 * once).
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE events (
      id text PRIMARY KEY,
      -- Global publication order: the order of events that share an ordering key.
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      ${merchantMode},
      type text NOT NULL,
      ordering_key text NOT NULL,
      -- Per-object destination (Payment.webhook_url); null = the account default at send time.
      destination text,
      data json NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX events_list ON events (merchant_id, mode, seq DESC);
    CREATE INDEX events_list_type ON events (merchant_id, mode, type, seq DESC);

    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      event_id text NOT NULL REFERENCES events(id),
      -- Copied from the event so the due and head-of-line queries need no join.
      event_seq bigint NOT NULL,
      merchant_id text NOT NULL,
      mode text NOT NULL,
      ordering_key text NOT NULL,
      url text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      -- Due time while pending (while claimed: the end of the lease, when it is due again); null once final.
      next_attempt_at timestamptz,
      -- The claim of the worker sending it now: until when, and the token its result must carry.
      locked_until timestamptz,
      lease_token text,
      last_attempt_at timestamptz,
      last_http_status integer,
      last_error text,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_head ON webhook_deliveries (merchant_id, mode, ordering_key, url, event_seq) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

    CREATE TABLE webhook_attempts (
      delivery_id text NOT NULL REFERENCES webhook_deliveries(id),
      attempt integer NOT NULL,
      started_at timestamptz NOT NULL,
      duration_ms integer NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('delivered', 'http_error', 'timeout', 'network_error', 'refused')),
      http_status integer,
      error text,
      response_body text,
      PRIMARY KEY (delivery_id, attempt)
    );
  `.execute(db);
}
