/**
 * The email delivery worker (`runOnce`, run by the workers role): sends what is due in the outbox through SMTP, or
 * keeps it for the dashboard's Mail page when no SMTP server is configured.
 *
 * Delivery is at most once as far as SMTP allows (states in migrations/0010_email.ts): before a message is
 * offered to the server its row is marked `handed` (a batch of them in one statement, before any of the batch is
 * offered, so a worker that dies mid-batch leaves the batch `uncertain`, never sent twice); a refusal the server answered, or a failure before the offer,
 * puts it back to `pending` for a retry with backoff (1 min, 5 min, 15 min, 1 h, 3 h, 6 h, 12 h; then `failed`), a
 * 5xx refusal fails it at once. A connection lost while the server may have taken the message, or a worker that died
 * while it was `handed`, makes it `uncertain`: it is logged and never sent again on its own (an operator may resend
 * it with `kasse mail resend`; the copy carries the same Message-ID).
 * Rules: docs/email.md.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { HOUR, MINUTE, type Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Db } from '../../db/index.ts';
import { attachmentsOf, type MailComposers, type MailParts, type OutboxRow } from './parts.ts';
import { SmtpTransport, type OutgoingMail, type SmtpSession } from './smtp.ts';

/** Delays after the 1st … 7th attempt that the server refused for now; the 8th failure is final. */
export const EMAIL_RETRY_DELAYS_MS = [
  1 * MINUTE,
  5 * MINUTE,
  15 * MINUTE,
  1 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
] as const;
export const EMAIL_MAX_ATTEMPTS = EMAIL_RETRY_DELAYS_MS.length + 1;
/** How long a worker's claim on a batch holds; a message is only offered with at least `SEND_MARGIN_MS` of it left. */
const CLAIM_LEASE_MS = 10 * MINUTE;
const SEND_MARGIN_MS = 3 * MINUTE;
/** Mails claimed per round (a worker that dies while offering them leaves at most this many `uncertain`). */
const BATCH = 50;
/** SMTP connections a worker sends a batch over at once. */
export const SMTP_CONNECTIONS = 4;
/** …one more connection for every this many mails of the batch. */
const MAILS_PER_CONNECTION = 10;

export interface EmailDeliveryDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  mail: { smtpUrl: string | null; from: string };
  composers: MailComposers;
}

export class EmailDelivery {
  private readonly transport: SmtpTransport | null;

  constructor(private readonly deps: EmailDeliveryDeps) {
    this.transport = deps.mail.smtpUrl ? new SmtpTransport(deps.mail.smtpUrl) : null;
  }

  /** Whether mail goes out over SMTP (else it is kept for the dashboard's Mail page). */
  get sending(): boolean {
    return this.transport !== null;
  }

  /**
   * One worker pass: settles claims whose worker died, then sends (or keeps) what is due, batch after batch until
   * nothing is due. Returns the number of mails handled. Tests call it after moving the fake clock.
   */
  async runOnce(): Promise<number> {
    await this.recover();
    let total = 0;
    // The pass's SMTP connections, kept from batch to batch and closed when nothing more is due.
    const sessions: Array<SmtpSession | null> = [];
    try {
      for (;;) {
        const batch = await this.claim();
        if (batch.length === 0) return total;
        total += batch.length;
        if (!this.transport) await this.keep(batch);
        else await this.sendBatch(this.transport, sessions, batch);
      }
    } finally {
      for (const s of sessions) s?.close();
    }
  }

  /** Claims of dead workers: `claimed` goes back to pending (nothing was offered), `handed` becomes uncertain. */
  private async recover(): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.db
      .updateTable('email_outbox')
      .set({ status: 'pending', next_attempt_at: now, locked_until: null, lease_token: null })
      .where('status', '=', 'claimed')
      .where('locked_until', '<=', now)
      .execute();
    const lost = await this.deps.db
      .updateTable('email_outbox')
      .set({
        status: 'uncertain',
        locked_until: null,
        lease_token: null,
        last_error: 'the worker stopped while handing the message to the SMTP server',
      })
      .where('status', '=', 'handed')
      .where('locked_until', '<=', now)
      .returning(['id', 'kind', 'to_address'])
      .execute();
    for (const r of lost)
      this.deps.log.warn(
        { mail: r.id, kind: r.kind },
        'mail may or may not have been delivered (worker stopped mid-send); not resending it on its own',
      );
  }

  private async claim() {
    const now = this.deps.clock.now();
    const token = randomBytes(12).toString('base64url');
    const { rows } = await sql<OutboxRow>`
      UPDATE email_outbox SET status = 'claimed', lease_token = ${token}, locked_until = ${new Date(now.getTime() + CLAIM_LEASE_MS)},
        attempts = attempts + 1, next_attempt_at = NULL
      WHERE id IN (
        SELECT id FROM email_outbox WHERE status = 'pending' AND next_attempt_at <= ${now}
        ORDER BY next_attempt_at, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED
      )
      RETURNING *
    `.execute(this.deps.db);
    return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  private async keep(batch: OutboxRow[]): Promise<void> {
    const parts = await this.deps.composers.parts(batch);
    await this.deps.db
      .updateTable('email_outbox')
      .set({ status: 'kept', locked_until: null, lease_token: null })
      .where(
        'id',
        'in',
        batch.map((r) => r.id),
      )
      .execute();
    for (const r of batch) {
      // The body is not logged: it may carry a sign-in link. `kasse mail show <id>` prints it.
      this.deps.log.info(
        { mail: r.id, kind: r.kind, to: r.to_address, subject: parts.get(r.id)?.subject ?? null },
        'mail kept, not sent (KASSE_SMTP_URL is not set); see the dashboard Mail page or `kasse mail show`',
      );
    }
  }

  /**
   * Sends a claimed batch over up to `SMTP_CONNECTIONS` connections at once. The batch is marked `handed` in one
   * statement before any of it is offered (a worker that dies from then on leaves the batch `uncertain`, never sent
   * twice), each connection takes the next message as it is free, and the outcomes are written in one statement.
   */
  private async sendBatch(
    transport: SmtpTransport,
    sessions: Array<SmtpSession | null>,
    batch: OutboxRow[],
  ): Promise<void> {
    const ready: OutboxRow[] = [];
    const outcomes: Outcome[] = [];
    const parts = await this.deps.composers.parts(batch);
    for (const row of batch) {
      if (!parts.has(row.id))
        outcomes.push(
          this.failure(
            row,
            'no',
            true,
            `the ${row.kind} mail could not be composed from ${row.content_ref}: what it names is gone or not this mail's merchant and mode`,
          ),
        );
      else if (row.locked_until!.getTime() - this.deps.clock.millis() < SEND_MARGIN_MS)
        outcomes.push(this.failure(row, 'no', false, 'claim ran out before the message could be offered'));
      else ready.push(row);
    }
    const handed = await this.markHanded(ready);
    const queue = ready.filter((r) => handed.has(r.id));
    let connectError: string | null = null;
    const connection = async (slot: number): Promise<void> => {
      let session = sessions[slot] ?? null;
      try {
        for (let row = queue.shift(); row; row = queue.shift()) {
          if (connectError !== null) {
            outcomes.push(this.failure(row, 'no', false, connectError));
            continue;
          }
          if (!session || !session.usable) {
            session?.close();
            session = null;
            try {
              session = await transport.open();
            } catch (err) {
              // Nothing was offered on it: this mail, and every one not yet offered, is retried later.
              connectError = `SMTP connection failed: ${(err as Error).message}`.slice(0, 500);
              this.deps.log.warn(
                { err: { message: (err as Error).message, code: (err as { code?: string }).code } },
                'SMTP connection failed; mail will be retried',
              );
              outcomes.push(this.failure(row, 'no', false, connectError));
              continue;
            }
          }
          const outcome = await session.send(this.outgoing(row, parts.get(row.id)!));
          outcomes.push(
            outcome.ok
              ? { row, status: 'sent', response: outcome.response.slice(0, 500), next: null, error: null }
              : this.failure(row, outcome.delivered, outcome.permanent, outcome.error),
          );
        }
      } finally {
        sessions[slot] = session;
      }
    };
    try {
      // A connection costs several round trips before its first message: a few mails go over one.
      const connections = Math.min(SMTP_CONNECTIONS, Math.ceil(queue.length / MAILS_PER_CONNECTION));
      await Promise.all(Array.from({ length: connections }, (_, slot) => connection(slot)));
    } finally {
      await this.record(outcomes);
    }
  }

  /** Marks the claimed rows `handed` (about to be offered), one statement; returns those still held by this claim. */
  private async markHanded(rows: readonly OutboxRow[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const { rows: done } = await sql<{ id: string }>`
      UPDATE email_outbox AS o SET status = 'handed'
      FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.lease_token)}::text[]) AS v(id, lease_token)
      WHERE o.id = v.id AND o.lease_token = v.lease_token AND o.status = 'claimed'
      RETURNING o.id`.execute(this.deps.db);
    return new Set(done.map((r) => r.id));
  }

  /** What a failed try makes of a mail: uncertain, failed for good, or pending again after its backoff (logged). */
  private failure(row: OutboxRow, delivered: 'no' | 'unknown', permanent: boolean, error: string): Outcome {
    const status =
      delivered === 'unknown' ? 'uncertain' : permanent || row.attempts >= EMAIL_MAX_ATTEMPTS ? 'failed' : 'pending';
    const next =
      status === 'pending' ? new Date(this.deps.clock.millis() + EMAIL_RETRY_DELAYS_MS[row.attempts - 1]!) : null;
    const level = status === 'pending' ? 'info' : 'warn';
    this.deps.log[level](
      { mail: row.id, kind: row.kind, status, attempts: row.attempts, error },
      status === 'uncertain'
        ? 'mail may or may not have been delivered; not resending it on its own'
        : status === 'failed'
          ? 'mail failed'
          : 'mail will be retried',
    );
    return { row, status, response: null, next, error };
  }

  /** The outcomes of a batch, one statement (only rows this claim still holds). */
  private async record(outcomes: readonly Outcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    const now = this.deps.clock.now();
    const col = <T>(f: (o: Outcome) => T) => outcomes.map(f);
    await sql`
      UPDATE email_outbox AS o SET status = v.status, next_attempt_at = v.next_attempt_at, last_error = v.last_error,
        smtp_response = COALESCE(v.smtp_response, o.smtp_response), sent_at = CASE WHEN v.status = 'sent' THEN ${now}::timestamptz ELSE o.sent_at END,
        locked_until = NULL, lease_token = NULL
      FROM unnest(${col((o) => o.row.id)}::text[], ${col((o) => o.row.lease_token)}::text[], ${col((o) => o.status)}::text[],
        ${col((o) => (o.next ? o.next.toISOString() : null))}::timestamptz[], ${col((o) => o.error)}::text[], ${col((o) => o.response)}::text[])
        AS v(id, lease_token, status, next_attempt_at, last_error, smtp_response)
      WHERE o.id = v.id AND o.lease_token = v.lease_token`.execute(this.deps.db);
  }

  private outgoing(row: OutboxRow, body: MailParts): OutgoingMail {
    return {
      from: this.deps.mail.from,
      to: { address: row.to_address, name: row.to_name },
      subject: body.subject,
      text: body.text,
      html: body.html,
      messageId: row.message_id,
      date: row.created_at,
      attachments: attachmentsOf(row).map((a) => ({
        filename: a.filename,
        contentType: a.content_type,
        content: Buffer.from(a.content_base64, 'base64'),
      })),
    };
  }
}

/** What became of one mail of a batch, as written back to its row. */
interface Outcome {
  row: OutboxRow;
  status: 'sent' | 'pending' | 'failed' | 'uncertain';
  response: string | null;
  next: Date | null;
  error: string | null;
}
