/**
 * Payments settled outside the checkout (the x402 facilitator, a subscription's charge): the payment and its one
 * `external` coin choice, or such a coin choice added to a payment, written in the caller's transaction.
 */
import type { Insertable } from 'kysely';
import { newId } from '../../../core/ids.ts';
import type { Tx } from '../../../db/index.ts';
import type { AttemptsTable, PaymentsTable } from '../tables.ts';
import type { AttemptRow } from './payments.ts';

export type ExternalPayment = Omit<Insertable<PaymentsTable>, 'id' | 'source'>;
export type ExternalAttempt = Omit<Insertable<AttemptsTable>, 'id' | 'payment_id' | 'external'>;

/** Inserts the payment (`source` x402) and its coin choice; answers their ids. */
export async function insertExternal(
  tx: Tx,
  payment: ExternalPayment,
  attempt: ExternalAttempt,
): Promise<{ paymentId: string; attemptId: string }> {
  const paymentId = newId('pay');
  const attemptId = newId('att');
  await tx
    .insertInto('payments')
    .values({ ...payment, id: paymentId, source: 'x402' })
    .execute();
  await tx
    .insertInto('attempts')
    .values({ ...attempt, id: attemptId, payment_id: paymentId, external: true })
    .execute();
  return { paymentId, attemptId };
}

/** Adds an `external` coin choice to an existing payment; answers its row. */
export async function insertAttempt(
  tx: Tx,
  attempt: Omit<Insertable<AttemptsTable>, 'id' | 'external'>,
): Promise<AttemptRow> {
  return tx
    .insertInto('attempts')
    .values({ ...attempt, id: newId('att'), external: true })
    .returningAll()
    .executeTakeFirstOrThrow();
}
