/**
 * The audit log: who (a dashboard user, an API key, the operator's CLI), did what, to which object, when and from
 * which address. Every sign-in (success and failure) and every change made from the dashboard, by API key or by the
 * operator is a row.
 *
 * One helper writes every row: `record(tx, scope, actor, action, target, details)`, in the change's own transaction,
 * so neither can exist without the other. Changes written in a single statement take the same arguments:
 * `statement(change, scope, actor, action, targetType, details)` wraps one INSERT/UPDATE as
 * `WITH change AS (<statement> RETURNING …) INSERT INTO audit_log … SELECT … FROM change` (creating a link), and
 * `writes(…)` is one more write of a change written as several (creating a payment, the API's hot path, through
 * db/statement.ts). What changes nothing (a refused action) is `recordAlone(…)`.
 *
 * Every change names its `Actor`. The log records the account's people and keys (`user`, `key`), the operator and
 * the outsiders acting on the account itself (`anonymous`: a sign-in attempt, a customer's emailed link); it does not
 * record a payer on a public page (`payer`: choosing a coin, paying a link) nor Kasse following its own rules
 * (`system`: workers, and what follows from a change already recorded). Those show in the objects' own events. The
 * helper decides this in one place (`recorded`). Reads are scoped by merchant; owners see them on the dashboard.
 * Rules: docs/dashboard.md (Audit log).
 */
import { CompiledQuery, sql, type OperationNodeSource, type RawBuilder } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Clock } from '../../core/clock.ts';
import type { Tenant } from '../../core/tenant.ts';
import { decodeCursor, fetchPage } from '../../core/cursor.ts';
import type { Db, DbOrTx } from '../../db/index.ts';
import { rowInsert, rowWrite, type Write } from '../../db/statement.ts';

/** An actor the audit log records: a dashboard user, an API key, the operator, an outsider acting on the account. */
export interface RecordedActor {
  type: 'user' | 'key' | 'operator' | 'anonymous';
  /** usr_… for users, key_… for API keys; null for the operator and for unknown accounts. */
  id: string | null;
  /** What to show for the actor: a user's email, a key's mode and last characters. */
  label?: string | null;
  /** Client address as the listener saw it (behind a proxy: X-Forwarded-For, see trustProxy). */
  ip: string | null;
}

/** A payer on a public page, or Kasse itself (`label`: which job): their changes are not in the audit log. */
export interface UnrecordedActor {
  type: 'payer' | 'system';
  id: null;
  label: string;
  ip: string | null;
}

/** Who makes a change, and from where. Every service method that changes a merchant's data takes one. */
export type Actor = RecordedActor | UnrecordedActor;

/** The operator at the `kasse` command line. */
export const OPERATOR: Actor = { type: 'operator', id: null, label: 'kasse CLI', ip: null };

/** Kasse itself, following its rules: `job` names what (a worker, or the change this one follows from). */
export function systemActor(job: string): Actor {
  return { type: 'system', id: null, label: job, ip: null };
}

/** A payer on the checkout or a link page (not signed in). */
export function payerActor(ip: string | null): Actor {
  return { type: 'payer', id: null, label: 'payer', ip };
}

/**
 * Whose log a row joins: a merchant's data in one mode (a `Tenant`), the merchant's account as a whole
 * (`{ merchantId }`: team, settings, sign-ins, recorded with no mode), or no merchant (a sign-in attempt with an
 * email no account has).
 */
export type AuditScope = Tenant | { readonly merchantId: string } | null;

/** The object changed; its id null when there is none (yet). */
export type AuditTarget = { type: string; id: string | null } | null;

/** Small JSON object with what changed (never secrets). */
export type AuditDetails = Record<string, unknown> | null;

/** One entry as `record`, `recordAlone` and `writes` take it: whose log, who, what, to which object, what changed. */
type AuditEntry = [scope: AuditScope, actor: Actor, action: string, target?: AuditTarget, details?: AuditDetails];

export interface AuditRecord {
  seq: string;
  at: string;
  mode: Mode | null;
  actor: { type: RecordedActor['type']; id: string | null; label: string | null; ip: string | null };
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

/** Whether the log records what `actor` does (see the header). */
function recorded(actor: Actor): actor is RecordedActor {
  return actor.type !== 'payer' && actor.type !== 'system';
}

export class AuditLog {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /**
   * Records that `actor` did `action` to `target` of `scope`, in `tx`: the change's own transaction. Dotted actions,
   * object first: `payment.create`, `link.update`, `user.invite`, `signin.failed`, …
   */
  async record(tx: DbOrTx, ...entry: AuditEntry): Promise<void> {
    const values = this.values(...entry);
    if (values) await tx.executeQuery(CompiledQuery.raw(INSERT_ENTRY.sql, values));
  }

  /** `record` on its own: for what changes nothing, such as an action refused for a missing permission. */
  recordAlone(...entry: AuditEntry): Promise<void> {
    return this.record(this.db, ...entry);
  }

  /** `record` as writes of a change written as one statement (db/statement.ts): the row's INSERT, or none. */
  writes(...entry: AuditEntry): Write[] {
    const values = this.values(...entry);
    return values ? [rowWrite(INSERT_ENTRY, values)] : [];
  }

  /**
   * `change` (an INSERT/UPDATE … RETURNING with an `id` column) and its row as one statement: `record` with the
   * target's id taken from the changed row. Execute the result where the change would have run; its rows are the
   * change's RETURNING rows.
   */
  statement<R>(
    change: OperationNodeSource,
    scope: AuditScope,
    actor: Actor,
    action: string,
    targetType: string,
    details: AuditDetails = null,
  ): RawBuilder<R> {
    const values = this.values(scope, actor, action, { type: targetType, id: null }, details);
    if (!values) return sql<R>`${change}`;
    const [merchantId, mode, at, type, id, label, , kind, , ip, json] = values;
    return sql<R>`
      WITH change AS (${change}), audit AS (
        INSERT INTO audit_log (merchant_id, mode, at, actor_type, actor_id, actor_label, action, target_type, target_id, ip, details)
        SELECT ${merchantId}, ${mode}, ${at}, ${type}, ${id}, ${label}, ${action}, ${kind}, change.id, ${ip}, ${json}::json
        FROM change
      )
      SELECT * FROM change`;
  }

  /** The row's columns in INSERT_ENTRY's order; null when the log does not record the actor. */
  private values(...[scope, actor, action, target = null, details = null]: AuditEntry): unknown[] | null {
    if (!recorded(actor)) return null;
    return [
      scope?.merchantId ?? null,
      scope && 'mode' in scope ? scope.mode : null,
      this.clock.now(),
      actor.type,
      actor.id,
      actor.label ?? null,
      action,
      target?.type ?? null,
      target?.id ?? null,
      actor.ip,
      details ? JSON.stringify(details) : null,
    ];
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
