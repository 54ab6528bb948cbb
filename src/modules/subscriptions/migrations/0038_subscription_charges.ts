/**
 * Subscriptions that charge themselves (docs/subscriptions.md, "Charged automatically"): the subscription's
 * `collection`, the grants payers give (`subscription_grants`: the terms as signed, their on-chain key, their
 * state), each merchant's receiving address per network for charges (`subscription_receivers`, allotted once from
 * the deposit addresses' sequence, like a deposit address swept to the treasury), and every charge attempt
 * (`subscription_charges`: one row per attempt, recorded before anything is sent; its id is the chain transfer's).
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode, tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE subscriptions ADD COLUMN collection text NOT NULL DEFAULT 'send_invoice'
      CHECK (collection IN ('send_invoice', 'charge_automatically'));

    CREATE TABLE subscription_receivers (
      ${merchantMode},
      chain text NOT NULL,
      address text NOT NULL,
      address_index bigint NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (merchant_id, mode, chain)
    );

    CREATE TABLE subscription_grants (
      ${tenant},
      subscription_id text NOT NULL REFERENCES subscriptions(id),
      chain text NOT NULL,
      token text NOT NULL,
      payer text NOT NULL,
      receiver text NOT NULL,
      amount_per_period numeric(78, 0) NOT NULL CHECK (amount_per_period > 0),
      period_seconds integer NOT NULL CHECK (period_seconds > 0),
      -- the first period it may charge (its due time) and the end of the grant (nothing at or after it)
      starts_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL CHECK (expires_at > starts_at),
      -- what the payer allowed in all (the permit's value, the delegate's cap)
      total numeric(78, 0) NOT NULL CHECK (total >= amount_per_period),
      -- the grant on chain: its id (a digest of the signed terms, say) and the family's own record of the terms
      key text NOT NULL,
      terms jsonb NOT NULL,
      -- limits enforced by a contract, or a token delegate capped at the total with the period limit kept by Kasse
      enforcement text NOT NULL CHECK (enforcement IN ('contract', 'delegate', 'simulated')),
      -- test-mode simulator only: whether the simulated wallet holds enough for the next charge
      funded boolean,
      status text NOT NULL CHECK (status IN ('pending', 'active', 'revoked', 'exhausted', 'failed')),
      error text,
      charges integer NOT NULL DEFAULT 0 CHECK (charges >= 0),
      charged numeric(78, 0) NOT NULL DEFAULT 0 CHECK (charged >= 0 AND charged <= total),
      -- the relay of the grant and of a revoke Kasse submitted (their chain transfer ids), when there was one
      grant_transfer text,
      revoke_transfer text,
      created_at timestamptz NOT NULL,
      granted_at timestamptz,
      ended_at timestamptz,
      updated_at timestamptz NOT NULL,
      CHECK ((status = 'active') = (granted_at IS NOT NULL AND ended_at IS NULL) OR status IN ('revoked', 'exhausted'))
    );
    -- One grant in force (or on its way) per subscription; a grant's on-chain key is recorded once.
    CREATE UNIQUE INDEX subscription_grants_current ON subscription_grants (subscription_id)
      WHERE status IN ('pending', 'active');
    CREATE UNIQUE INDEX subscription_grants_key ON subscription_grants (mode, chain, key);
    CREATE INDEX subscription_grants_of ON subscription_grants (subscription_id, created_at DESC);
    CREATE INDEX subscription_grants_pending ON subscription_grants (created_at) WHERE status = 'pending';

    CREATE TABLE subscription_charges (
      ${tenant},
      subscription_id text NOT NULL REFERENCES subscriptions(id),
      grant_id text NOT NULL REFERENCES subscription_grants(id),
      period integer NOT NULL CHECK (period >= 1),
      attempt integer NOT NULL CHECK (attempt >= 1),
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      -- scheduled (due at due_at) -> submitted (its chain transfer recorded; followed) -> succeeded | failed;
      -- cancelled: not attempted after all (the period was paid otherwise, the subscription ended or went to invoices)
      status text NOT NULL CHECK (status IN ('scheduled', 'submitted', 'succeeded', 'failed', 'cancelled')),
      -- when it is to be submitted, or looked at again (the subscription's clock)
      due_at timestamptz NOT NULL,
      locked_until timestamptz,
      -- the payment it paid (succeeded)
      payment_id text,
      tx_hash text,
      failure_reason text CHECK (failure_reason IN ('insufficient_funds', 'allowance_exhausted', 'grant_revoked',
        'grant_expired', 'transaction_failed')),
      failure_message text,
      created_at timestamptz NOT NULL,
      submitted_at timestamptz,
      settled_at timestamptz,
      UNIQUE (subscription_id, period, attempt),
      CHECK ((status = 'failed') = (failure_reason IS NOT NULL))
    );
    CREATE INDEX subscription_charges_due ON subscription_charges (due_at) WHERE status IN ('scheduled', 'submitted');
    CREATE INDEX subscription_charges_of ON subscription_charges (subscription_id, period, attempt);
  `.execute(db);
}
