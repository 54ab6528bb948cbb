/**
 * The audit log: who (a dashboard user, an API key, the operator's CLI), did what, to which object, when and from
 * which address. Every sign-in (success and failure) and every change made from the dashboard or by API key is a row.
 *
 * A row is written with the change it records, never after it, so neither can exist without the other:
 * - inside the change's own transaction: `record(tx, entry)`;
 * - for a change that is a single statement (creating a link), `statement(change, entry)` wraps it as
 *   `WITH change AS (<statement> RETURNING …) INSERT INTO audit_log … SELECT … FROM change` — one statement, so the
 *   audit row costs no extra round trip to the database;
 * - for a change written as several writes in one statement (creating a payment, the API's hot path, through
 *   db/statement.ts), `write(entry)` is one more of those writes;
 * - for what changes nothing (a refused action), `recordAlone(entry)` writes the row on its own.
 * Reads are scoped by merchant; owners see them on the dashboard. Rules: docs/dashboard.md (Audit log).
 */
import { CompiledQuery, sql, type OperationNodeSource, type RawBuilder } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Clock } from '../../core/clock.ts';
import { decodeCursor, fetchPage } from '../../core/cursor.ts';
import type { Db, DbOrTx } from '../../db/index.ts';
import { rowInsert, rowWrite, type Write } from '../../db/statement.ts';

/** Who made a change, and from where. */
export interface Actor {
  type: 'user' | 'key' | 'operator' | 'anonymous';
  /** usr_… for users, key_… for API keys; null for the operator and for unknown accounts. */
  id: string | null;
  /** What to show for the actor: a user's email, a key's mode and last characters. */
  label?: string | null;
  /** Client address as the listener saw it (behind a proxy: X-Forwarded-For, see trustProxy). */
  ip: string | null;
}

export interface AuditEntry {
  merchantId: string | null;
  /** The mode of the object changed; null for account-wide changes (team, settings, sign-ins). */
  mode: Mode | null;
  actor: Actor;
  /** Dotted, object first: `payment.create`, `link.update`, `user.invite`, `signin.failed`, … */
  action: string;
  target?: { type: string; id: string | null } | null;
  /** Small JSON object with what changed (never secrets). */
  details?: Record<string, unknown> | null;
}

export interface AuditRecord {
  seq: string;
  at: string;
  mode: Mode | null;
  actor: { type: Actor['type']; id: string | null; label: string | null; ip: string | null };
  action: string;
  target: { type: string; id: string | null } | null;
  details: Record<string, unknown> | null;
}

export interface AuditQuery {
  /** Actions starting with this (e.g. `payment.` or `signin.`). */
  action?: string;
  /** Actions starting with any of these; `*` stands for any characters (`*refused`). */
  actions?: string[];
  actorId?: string;
  mode?: Mode;
  from?: Date;
  to?: Date;
  cursor?: string;
  limit?: number;
}

const INSERT_ENTRY = rowInsert('audit_log', [
  'merchant_id',
  'mode',
  'at',
  'actor_type',
  'actor_id',
  'actor_label',
  'action',
  'target_type',
  'target_id',
  'ip',
  'details',
]);

/** A LIKE pattern for actions starting with `prefix`, in which `*` matches any characters. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%')}%`;
}

export class AuditLog {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Writes one entry in `db` (the change's transaction). */
  async record(db: DbOrTx, e: AuditEntry): Promise<void> {
    await db.executeQuery(CompiledQuery.raw(INSERT_ENTRY.sql, this.values(e)));
  }

  /** Writes one entry on its own: for what changes nothing, such as an action refused for a missing permission. */
  recordAlone(e: AuditEntry): Promise<void> {
    return this.record(this.db, e);
  }

  /** The INSERT of one entry, to write it in the same statement as its change (db/statement.ts). */
  write(e: AuditEntry): Write {
    return rowWrite(INSERT_ENTRY, this.values(e));
  }

  private values(e: AuditEntry): unknown[] {
    return [
      e.merchantId,
      e.mode,
      this.clock.now(),
      e.actor.type,
      e.actor.id,
      e.actor.label ?? null,
      e.action,
      e.target?.type ?? null,
      e.target?.id ?? null,
      e.actor.ip,
      e.details ? JSON.stringify(e.details) : null,
    ];
  }

  /**
   * `change` (an INSERT/UPDATE … RETURNING with an `id` column) and its audit row as one statement; the entry's
   * target id is the changed row's `id`. Execute the result where the change would have run; its rows are the
   * change's RETURNING rows.
   */
  statement<R>(change: OperationNodeSource, e: AuditEntry): RawBuilder<R> {
    return sql<R>`
      WITH change AS (${change}), audit AS (
        INSERT INTO audit_log (merchant_id, mode, at, actor_type, actor_id, actor_label, action, target_type, target_id, ip, details)
        SELECT ${e.merchantId}, ${e.mode}, ${this.clock.now()}, ${e.actor.type}, ${e.actor.id}, ${e.actor.label ?? null}, ${e.action},
          ${e.target?.type ?? null}, change.id, ${e.actor.ip}, ${e.details ? JSON.stringify(e.details) : null}::json
        FROM change
      )
      SELECT * FROM change`;
  }

  /** The merchant's entries, newest first, filtered. */
  async list(merchantId: string, q: AuditQuery = {}): Promise<{ data: AuditRecord[]; next_cursor: string | null }> {
    const limit = q.limit ?? 50;
    let query = this.db.selectFrom('audit_log').selectAll().where('merchant_id', '=', merchantId);
    if (q.action) query = query.where('action', 'like', likePrefix(q.action));
    if (q.actions) {
      const patterns = q.actions.map(likePrefix);
      query = query.where((eb) => eb.or(patterns.map((p) => eb('action', 'like', p))));
    }
    if (q.actorId) query = query.where('actor_id', '=', q.actorId);
    if (q.mode) query = query.where('mode', '=', q.mode);
    if (q.from) query = query.where('at', '>=', q.from);
    if (q.to) query = query.where('at', '<', q.to);
    if (q.cursor) query = query.where('seq', '<', BigInt(decodeCursor(q.cursor)));
    const { page, next_cursor } = await fetchPage(query.orderBy('seq', 'desc'), limit, (r) => r.seq);
    return {
      data: page.map((r) => ({
        seq: r.seq.toString(),
        at: r.at.toISOString(),
        mode: r.mode,
        actor: { type: r.actor_type, id: r.actor_id, label: r.actor_label, ip: r.ip },
        action: r.action,
        target: r.target_type ? { type: r.target_type, id: r.target_id } : null,
        details: (r.details ?? null) as Record<string, unknown> | null,
      })),
      next_cursor,
    };
  }
}
