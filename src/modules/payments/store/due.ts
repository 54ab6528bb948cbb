/** The due work: the next payment (locked, skipping locked ones) whose lifetime, coin hold or late window ran out. */
import { sql } from 'kysely';
import type { Mode } from '../../../core/mode.ts';

export interface DueRow {
  id: string;
  mode: Mode;
}

/** The next payment (locked, skipping locked ones) whose 24 hours ran out while waiting. */
export const dueLifetime = (now: Date) => (skip: string[]) =>
  sql<DueRow>`
  SELECT p.id, p.mode FROM payments p
  WHERE p.status = 'waiting' AND p.expires_at <= ${now} AND p.id <> ALL(${skip}::text[])
  ORDER BY p.expires_at LIMIT 1 FOR UPDATE SKIP LOCKED`;

/** The next payment (locked) with a coin hold that ran out. */
export const dueHold = (now: Date) => (skip: string[]) =>
  sql<DueRow>`
  SELECT p.id, p.mode FROM attempts a JOIN payments p ON p.id = a.payment_id
  WHERE a.status = 'waiting' AND a.expires_at <= ${now} AND p.id <> ALL(${skip}::text[])
  ORDER BY a.expires_at LIMIT 1 FOR UPDATE OF p SKIP LOCKED`;

/** The next late payment (locked) still inside the auto-acceptance window and without a refund requested. */
export const dueLate = (since: Date) => (skip: string[]) =>
  sql<DueRow>`
  SELECT p.id, p.mode FROM payments p
  WHERE p.status = 'late' AND p.expires_at > ${since} AND p.id <> ALL(${skip}::text[])
    AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id AND r.status <> 'failed')
  ORDER BY p.expires_at LIMIT 1 FOR UPDATE OF p SKIP LOCKED`;
