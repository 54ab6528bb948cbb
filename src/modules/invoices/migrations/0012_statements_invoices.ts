/**
 * Tax profiles and GST tax invoices, and the indexes monthly statements read by time.
 *
 * The tax profile is per merchant and mode (a test key cannot change what live invoices say), kept as json on the
 * merchant row so it travels with the merchant record in the key cache (`GET /account` answers from memory). Its shape
 * is validated by the invoices module.
 *
 * Invoice numbers are consecutive without gaps per merchant, mode and Indian financial year: the counter row is
 * incremented in the transaction that inserts the invoice, so a failed transaction gives its number back and
 * concurrent requests queue on the row. A sequence would leave gaps.
 *
 * Other modules' tables it makes or changes: `ledger_checkpoints` and `ledger_transactions.token` (modules/ledger),
 * `merchants`' tax profiles, the statements' indexes on `events` and `refunds`.
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode, tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE merchants ADD COLUMN tax_profile_test json, ADD COLUMN tax_profile_live json;

    CREATE TABLE tax_invoice_counters (
      ${merchantMode},
      -- '26-27' for April 2026 to March 2027 (IST)
      financial_year text NOT NULL CHECK (financial_year ~ '^[0-9]{2}-[0-9]{2}$'),
      last_number integer NOT NULL CHECK (last_number > 0),
      PRIMARY KEY (merchant_id, mode, financial_year)
    );

    CREATE TABLE tax_invoices (
      ${tenant},
      payment_id text NOT NULL UNIQUE REFERENCES payments(id),
      number text NOT NULL CHECK (number ~ '^[A-Za-z0-9/-]{1,16}$'),
      financial_year text NOT NULL,
      seq integer NOT NULL CHECK (seq > 0),
      issued_at timestamptz NOT NULL,
      customer_name text,
      customer_tax_id text,
      customer_state_code text,
      place_of_supply text NOT NULL CHECK (place_of_supply IN ('intra', 'inter')),
      currency text NOT NULL CHECK (currency = 'INR'),
      fx_rate text NOT NULL,
      fx_source text NOT NULL,
      fx_date text NOT NULL CHECK (fx_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
      usd_cents integer NOT NULL CHECK (usd_cents > 0),
      -- paise
      total bigint NOT NULL,
      taxable bigint NOT NULL,
      cgst bigint NOT NULL,
      sgst bigint NOT NULL,
      igst bigint NOT NULL,
      tax_rate_bps integer NOT NULL CHECK (tax_rate_bps BETWEEN 0 AND 10000),
      tax_inclusive boolean NOT NULL,
      sac text,
      description text,
      -- the seller as the tax profile said when the invoice was issued
      seller json NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (merchant_id, mode, financial_year, seq),
      UNIQUE (merchant_id, mode, number),
      CHECK (taxable + cgst + sgst + igst = total)
    );
    CREATE INDEX tax_invoices_list ON tax_invoices (merchant_id, mode, id DESC);

    -- The coin a posting concerns (the credited attempt's token; copied by reversals), so statements break the month
    -- down by coin in one pass over its entries. Filled for the credits posted before this column existed.
    ALTER TABLE ledger_transactions ADD COLUMN token text;
    UPDATE ledger_transactions t SET token = (
      SELECT min(e.currency) FROM ledger_entries e WHERE e.transaction_id = t.id AND e.currency <> 'USD'
    ) WHERE t.kind IN ('payment_credit', 'payment_reorg', 'payment_refund');

    -- Balances of ledger accounts at instants long past (month starts), so a statement's opening balance costs one
    -- lookup and the postings since, not a sum over the account's whole history. Entries are append-only and
    -- stamped when posted, so a balance at an instant an hour gone never changes.
    CREATE TABLE ledger_checkpoints (
      account text NOT NULL,
      currency text NOT NULL,
      at timestamptz NOT NULL,
      balance numeric(78, 0) NOT NULL,
      PRIMARY KEY (account, currency, at)
    );

    -- Statements reconcile the month against the payment event log and sent refunds, read by time.
    CREATE INDEX events_merchant_type_time ON events (merchant_id, mode, type, created_at);
    CREATE INDEX refunds_sent_time ON refunds (merchant_id, mode, settled_at) WHERE status = 'sent';
  `.execute(db);
}
