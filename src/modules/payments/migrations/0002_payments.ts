/**
 * Payments, their coin choices (attempts), the deposits seen on chain, refunds, and the double-entry ledger.
 *
 * Due times live in the rows (`payments.expires_at`, `attempts.expires_at`) with partial indexes, so workers select
 * due rows from here and nothing time-based is held in memory. Token amounts are numeric(78,0) (a uint256 fits).
 * Every ledger transaction must balance per currency: a deferred constraint trigger checks it at commit, and
 * entries are append-only.
 *
 * Other modules' tables it makes: `ledger_transactions`, `ledger_entries` and their triggers (modules/ledger), and
 * `refunds` (modules/refunds).
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode, mode, network, tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Deposit address numbers, one per attempt across all modes and chains, so no address is ever issued twice.
    CREATE SEQUENCE deposit_address_index AS bigint START 1;

    CREATE TABLE payments (
      ${tenant},
      status text NOT NULL CHECK (status IN ('waiting', 'detected', 'confirming', 'paid', 'underpaid', 'expired', 'late', 'refunded', 'cancelled')),
      price_amount integer NOT NULL CHECK (price_amount BETWEEN 1 AND 100000000),
      price_currency text NOT NULL CHECK (price_currency = 'USD'),
      order_id text NOT NULL,
      description text,
      success_url text,
      cancel_url text,
      webhook_url text,
      -- json, not jsonb: the merchant's metadata comes back exactly as sent (key order included).
      metadata json NOT NULL,
      expires_at timestamptz NOT NULL,
      paid_at timestamptz,
      paid_attempt_id text,
      -- Confirmed amount of the paid attempt when it was last marked paid (state machine's paidAmount).
      paid_amount numeric(78, 0),
      -- How many times the payment became paid (ledger dedupe keys), and whether that credit is still standing.
      credit_seq integer NOT NULL DEFAULT 0,
      credited boolean NOT NULL DEFAULT false,
      -- Set in the statement that recounts confirmations; cleared when the state machine has run on the payment.
      deposits_dirty boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE INDEX payments_list ON payments (merchant_id, mode, id DESC);
    CREATE INDEX payments_order ON payments (merchant_id, mode, order_id, id DESC);
    CREATE INDEX payments_status ON payments (merchant_id, mode, status, id DESC);
    CREATE INDEX payments_due ON payments (expires_at) WHERE status = 'waiting';
    CREATE INDEX payments_late ON payments (expires_at) WHERE status = 'late';
    CREATE INDEX payments_dirty ON payments (id) WHERE deposits_dirty;

    CREATE TABLE attempts (
      id text PRIMARY KEY,
      payment_id text NOT NULL REFERENCES payments(id),
      ${network},
      token text NOT NULL,
      address text NOT NULL,
      address_index bigint NOT NULL UNIQUE,
      pay_amount numeric(78, 0) NOT NULL CHECK (pay_amount > 0),
      rate text NOT NULL,
      rate_source text NOT NULL CHECK (rate_source IN ('coingecko', 'binance', 'peg')),
      status text NOT NULL CHECK (status IN ('waiting', 'detected', 'confirming', 'paid', 'underpaid', 'expired', 'late', 'refunded')),
      overpaid boolean NOT NULL DEFAULT false,
      wrong_asset boolean NOT NULL DEFAULT false,
      confirmation_tier integer NOT NULL,
      confirmations_required integer NOT NULL CHECK (confirmations_required > 0),
      expires_at timestamptz NOT NULL,
      uri text,
      created_at timestamptz NOT NULL
    );
    CREATE UNIQUE INDEX attempts_address ON attempts (mode, chain, lower(address));
    CREATE INDEX attempts_payment ON attempts (payment_id, id);
    CREATE INDEX attempts_due ON attempts (expires_at) WHERE status = 'waiting';

    CREATE TABLE deposits (
      id text PRIMARY KEY,
      attempt_id text NOT NULL REFERENCES attempts(id),
      payment_id text NOT NULL REFERENCES payments(id),
      ${network},
      token text NOT NULL,
      tx_hash text NOT NULL,
      log_index integer NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      from_address text,
      -- null for simulated deposits, which no watcher follows
      block_number bigint,
      block_hash text,
      status text NOT NULL CHECK (status IN ('pending', 'confirmed', 'final', 'orphaned')),
      confirmations integer NOT NULL DEFAULT 0,
      confirmations_required integer NOT NULL,
      -- US cents the deposit was worth when seen (null without a price), and whether it reaches its coin's minimum
      value_cents bigint,
      at_least_min boolean NOT NULL,
      seen_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (mode, chain, tx_hash, log_index)
    );
    CREATE INDEX deposits_payment ON deposits (payment_id);
    CREATE INDEX deposits_open ON deposits (mode, chain, block_number) WHERE status IN ('pending', 'confirmed');

    CREATE TABLE refunds (
      id text PRIMARY KEY,
      payment_id text NOT NULL REFERENCES payments(id),
      attempt_id text NOT NULL REFERENCES attempts(id),
      ${merchantMode},
      status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
      destination text NOT NULL,
      token text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      tx_hash text,
      note text,
      error text,
      -- settled by the built-in test-mode sender (no chain sender for this network)
      simulated boolean NOT NULL,
      created_at timestamptz NOT NULL,
      settled_at timestamptz
    );
    -- At most one refund in flight or sent per payment; a failed one can be retried.
    CREATE UNIQUE INDEX refunds_open ON refunds (payment_id) WHERE status <> 'failed';
    CREATE INDEX refunds_simulated ON refunds (created_at) WHERE status = 'pending' AND simulated;

    CREATE TABLE ledger_transactions (
      id text PRIMARY KEY,
      ${mode},
      merchant_id text REFERENCES merchants(id),
      kind text NOT NULL,
      payment_id text REFERENCES payments(id),
      -- One posting per business fact (e.g. the n-th credit of a payment): a retry cannot post twice.
      dedupe_key text NOT NULL UNIQUE,
      reverses text REFERENCES ledger_transactions(id),
      created_at timestamptz NOT NULL
    );
    CREATE INDEX ledger_transactions_merchant ON ledger_transactions (merchant_id, mode, created_at);
    CREATE INDEX ledger_transactions_payment ON ledger_transactions (payment_id);

    -- amount > 0 is a debit, < 0 a credit, in the currency's smallest unit (USD: cents; coins: token id).
    CREATE TABLE ledger_entries (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      transaction_id text NOT NULL REFERENCES ledger_transactions(id),
      account text NOT NULL,
      currency text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount <> 0)
    );
    CREATE INDEX ledger_entries_account ON ledger_entries (account, currency);
    CREATE INDEX ledger_entries_transaction ON ledger_entries (transaction_id);

    CREATE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM ledger_entries WHERE transaction_id = NEW.transaction_id GROUP BY currency HAVING sum(amount) <> 0) THEN
        RAISE EXCEPTION 'ledger transaction % does not balance', NEW.transaction_id USING ERRCODE = 'check_violation';
      END IF;
      RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();

    CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'ledger entries are append-only; post a reversal instead' USING ERRCODE = 'check_violation';
    END $$;
    CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
      FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
  `.execute(db);
}
