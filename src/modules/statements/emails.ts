/**
 * The monthly statement by email: owners opt in per mode, and on the 1st of each month (UTC) the worker writes
 * each of them a mail with last month's statement — its figures in the text, the PDF attached, a link to the
 * dashboard — through the email outbox.
 *
 * Exactly once per merchant, mode and month, with any number of workers and across crashes: the schedule row of a
 * merchant and mode (`statement_email_schedule`: the month due next and when) is taken with `FOR UPDATE SKIP LOCKED`,
 * and the month's mails are written and the row moved to the next month in that one transaction. Another worker
 * skips the locked row; a worker that dies before the commit wrote nothing and the row is due again; after the
 * commit the row names the next month. Each mail also carries a dedupe key (merchant, mode, month, user), so the
 * outbox itself refuses a second copy. Delivery from the outbox is the email worker's (docs/email.md).
 *
 * The schedule is created by the first opt-in of a merchant and mode and kept after the last opt-out, so it follows
 * the calendar: a later subscriber gets the month in progress first, not months long past. A worker that was down
 * sends every month it missed, oldest first. Decisions: docs/statements.md (Emailed statements).
 */
import type { Tenant } from '../../core/tenant.ts';
import { sql } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { CoinNames } from '../../chains/names.ts';
import { HOUR, MINUTE, type Clock } from '../../core/clock.ts';
import { invalidState } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import { type EmailService, renderEmail } from '../email/index.ts';
import type { MerchantService } from '../merchants/index.ts';
import type { Team } from '../users/index.ts';
import { balanceLines, dollars, monthName, signedAmount, statementPdf } from './render.ts';
import { monthRange, type StatementService } from './service.ts';

/** A month's statement goes out this long after the month ended, once postings stamped before midnight have committed. */
export const STATEMENT_EMAIL_DELAY_MS = 15 * MINUTE;
/** Waits after a failed try (the last one repeats): the statement still goes out once the cause is fixed. */
const RETRY_DELAYS_MS = [5 * MINUTE, 15 * MINUTE, 1 * HOUR, 3 * HOUR, 6 * HOUR] as const;

export interface StatementEmailDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  statements: StatementService;
  email: Pick<EmailService, 'enqueue'>;
  users: Pick<Team, 'list'>;
  merchants: Pick<MerchantService, 'get' | 'brands'>;
  audit: AuditLog;
  /** Names the statement's coins in its PDF. */
  chains: CoinNames;
  /** Absolute URL of a dashboard path (`/test/statements/2026-03`). */
  dashboardUrl: (path: string) => string;
}

/** `YYYY-MM` of an instant (UTC). */
export function monthOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** The month after `month`. */
export function nextMonth(month: string): string {
  return monthOf(monthRange(month).end);
}

/** When the statement of `month` is mailed. */
export function statementEmailDue(month: string): Date {
  return new Date(monthRange(month).end.getTime() + STATEMENT_EMAIL_DELAY_MS);
}

export class StatementEmails {
  constructor(private readonly deps: StatementEmailDeps) {}

  /** Whether the user receives the mode's statement by email. */
  async subscribed(userId: string, mode: Mode): Promise<boolean> {
    return !!(await this.deps.db
      .selectFrom('statement_subscribers')
      .select('user_id')
      .where('user_id', '=', userId)
      .where('mode', '=', mode)
      .executeTakeFirst());
  }

  /** The month whose statement goes out next for a merchant and mode, and when; null before anyone opted in. */
  async next(tenant: Tenant): Promise<{ month: string; dueAt: Date } | null> {
    const { mode, merchantId } = tenant;
    const row = await this.deps.db
      .selectFrom('statement_email_schedule')
      .select(['month', 'due_at'])
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .executeTakeFirst();
    return row ? { month: row.month, dueAt: row.due_at } : null;
  }

  /** Opts an owner in (idempotent); the first opt-in of the merchant and mode starts the schedule at this month. */
  async subscribe(user: { id: string; merchant_id: string; role: string }, mode: Mode, actor: Actor): Promise<void> {
    if (user.role !== 'owner') throw invalidState('Only owners receive the statement by email.');
    const now = this.deps.clock.now();
    const month = monthOf(now);
    await withTx(this.deps.db, async (tx) => {
      const added = await tx
        .insertInto('statement_subscribers')
        .values({ user_id: user.id, mode, merchant_id: user.merchant_id, created_at: now })
        .onConflict((oc) => oc.columns(['user_id', 'mode']).doNothing())
        .returning('user_id')
        .executeTakeFirst();
      await tx
        .insertInto('statement_email_schedule')
        .values({ merchant_id: user.merchant_id, mode, month, due_at: statementEmailDue(month) })
        .onConflict((oc) => oc.columns(['merchant_id', 'mode']).doNothing())
        .execute();
      if (added) await this.recordChoice(tx, user, mode, actor, 'subscribe');
    });
  }

  /** Opts a user out (idempotent). */
  async unsubscribe(user: { id: string; merchant_id: string }, mode: Mode, actor: Actor): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const removed = await tx
        .deleteFrom('statement_subscribers')
        .where('user_id', '=', user.id)
        .where('mode', '=', mode)
        .executeTakeFirst();
      if (removed.numDeletedRows) await this.recordChoice(tx, user, mode, actor, 'unsubscribe');
    });
  }

  /** Audits a user's opt-in or opt-out (only when it changed something). */
  private recordChoice(
    tx: Tx,
    user: { id: string; merchant_id: string },
    mode: Mode,
    actor: Actor,
    choice: 'subscribe' | 'unsubscribe',
  ): Promise<void> {
    return this.deps.audit.record(tx, { mode, merchantId: user.merchant_id }, actor, `statement_email.${choice}`, {
      type: 'user',
      id: user.id,
    });
  }

  /** One worker pass: every due merchant, mode and month, oldest first. Returns the months handled. */
  async runOnce(): Promise<number> {
    let handled = 0;
    const failed = new Set<string>();
    for (;;) {
      const outcome = await this.runOne(failed);
      if (outcome === 'idle') return handled;
      if (outcome === 'sent') handled++;
    }
  }

  /** Takes one due schedule row, writes its month's mails and moves it on — all in one transaction. */
  private async runOne(failed: Set<string>): Promise<'sent' | 'failed' | 'idle'> {
    let taken: { merchant_id: string; mode: Mode; month: string; attempts: number } | null = null;
    try {
      return await withTx(this.deps.db, async (tx) => {
        const now = this.deps.clock.now();
        const { rows } = await sql<{ merchant_id: string; mode: Mode; month: string; attempts: number }>`
          SELECT merchant_id, mode, month, attempts FROM statement_email_schedule
          WHERE due_at <= ${now} AND NOT (merchant_id || ':' || mode = ANY(${[...failed]}::text[]))
          ORDER BY due_at, merchant_id, mode LIMIT 1
          FOR UPDATE SKIP LOCKED`.execute(tx);
        taken = rows[0] ?? null;
        if (!taken) return 'idle';
        const { merchant_id: merchantId, mode, month } = taken;
        const subscribers = new Set(
          (
            await tx
              .selectFrom('statement_subscribers')
              .select('user_id')
              .where('merchant_id', '=', merchantId)
              .where('mode', '=', mode)
              .execute()
          ).map((r) => r.user_id),
        );
        // Only owners whose account is set up; a subscriber who is no longer an owner stops receiving it.
        const recipients =
          subscribers.size > 0
            ? (await this.deps.users.list(merchantId)).filter(
                (u) => subscribers.has(u.id) && u.role === 'owner' && u.status === 'active',
              )
            : [];
        if (recipients.length > 0) {
          const mail = await this.compose({ mode, merchantId }, month);
          for (const u of recipients) {
            await this.deps.email.enqueue(tx, {
              merchantId,
              mode,
              kind: 'statement.monthly',
              to: u.email,
              ...mail,
              dedupeKey: `statement:${merchantId}:${mode}:${month}:${u.id}`,
            });
          }
        }
        const next = nextMonth(month);
        await tx
          .updateTable('statement_email_schedule')
          .set({ month: next, due_at: statementEmailDue(next), attempts: 0, last_error: null })
          .where('merchant_id', '=', merchantId)
          .where('mode', '=', mode)
          .execute();
        this.deps.log.info(
          { merchant: merchantId, mode, month, recipients: recipients.length },
          'monthly statement mailed',
        );
        return 'sent';
      });
    } catch (err) {
      if (!taken) throw err;
      const t: { merchant_id: string; mode: Mode; month: string; attempts: number } = taken;
      failed.add(`${t.merchant_id}:${t.mode}`);
      const delay = RETRY_DELAYS_MS[Math.min(t.attempts, RETRY_DELAYS_MS.length - 1)]!;
      this.deps.log.error(
        { err, merchant: t.merchant_id, mode: t.mode, month: t.month },
        'monthly statement email failed; will retry',
      );
      await this.deps.db
        .updateTable('statement_email_schedule')
        .set({
          due_at: new Date(this.deps.clock.millis() + delay),
          attempts: t.attempts + 1,
          last_error: String((err as Error)?.message ?? err).slice(0, 500),
        })
        .where('merchant_id', '=', t.merchant_id)
        .where('mode', '=', t.mode)
        .where('month', '=', t.month)
        .execute();
      return 'failed';
    }
  }

  /** The mail of a month's statement: figures in the text, the PDF attached, a link to the dashboard page. */
  private async compose(tenant: Tenant, month: string) {
    const { mode, merchantId } = tenant;
    const [statement, merchant] = await Promise.all([
      this.deps.statements.get(tenant, month),
      this.deps.merchants.get(merchantId),
    ]);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is taken out of the name
    const name = merchant.name.replace(/[\u0000-\u001f\u007f]+/g, ' ');
    const period = monthName(month);
    const modeText = mode === 'test' ? ' (test mode)' : '';
    const gap = statement.reconciliation_gap_usd_cents;
    const body = renderEmail({
      heading: `Statement for ${period}${modeText}`,
      paragraphs: [
        `The ${mode} statement of ${name} for ${period} (UTC) is attached as a PDF.`,
        ...(gap !== 0
          ? [
              `Warning: this statement shows a reconciliation gap of ${dollars(gap)}: the ledger and the payment records disagree. Tell the operator of your Kasse.`,
            ]
          : []),
      ],
      details: [
        ...balanceLines(statement).map((l): [string, string] => [l.label, signedAmount(l)]),
        [`Held at the end of the month (${statement.held.count})`, dollars(statement.held.value_usd_cents)],
        ['Reconciliation gap', dollars(gap)],
      ],
      action: { label: 'Open the statement', url: this.deps.dashboardUrl(`/${mode}/statements/${month}`) },
      footer: [
        `You receive this because you turned on monthly statements for ${mode} mode on the Statements page of the ${name} dashboard. You can turn them off there.`,
      ],
    });
    const pdf = await statementPdf(statement, {
      merchantName: merchant.name,
      mode,
      chains: this.deps.chains,
      brand: await this.deps.merchants.brands.pdf(merchantId),
    });
    return {
      subject: `${name}: statement for ${period}${modeText}`,
      text: body.text,
      html: body.html,
      attachments: [{ filename: `statement-${month}-${mode}.pdf`, contentType: 'application/pdf', content: pdf }],
    };
  }
}
