/**
 * The email outbox. Any module sends mail by calling `enqueue(tx, message)` inside the transaction that causes it, so
 * a mail exists exactly when the change it reports was committed; the email worker (`runOnce`, run by the workers
 * role) sends what is due through SMTP, or keeps it for the dashboard's Mail page when no SMTP server is configured.
 *
 * Delivery is at most once as far as SMTP allows (states in src/db/migrations/0010_email.ts): before a message is
 * offered to the server its row is marked `handed` (a batch of them in one statement, before any of the batch is
 * offered, so a worker that dies mid-batch leaves the batch `uncertain`, never sent twice); a refusal the server answered, or a failure before the offer,
 * puts it back to `pending` for a retry with backoff (1 min, 5 min, 15 min, 1 h, 3 h, 6 h, 12 h; then `failed`), a
 * 5xx refusal fails it at once. A connection lost while the server may have taken the message, or a worker that died
 * while it was `handed`, makes it `uncertain`: it is logged and never sent again on its own (an operator may resend
 * it with `kasse mail resend`; the copy carries the same Message-ID). A mail may be stored as the layout's blocks
 * (`content`) and rendered when sent or shown, or by reference (`ref`): a module registers a composer for its kinds
 * (`composeWith`) that builds the subject and blocks of many mails at once when they are sent or shown. Rules and the
 * API: docs/email.md.
 */
import { randomBytes } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import { HOUR, MINUTE, type Clock } from '../../core/clock.ts';
import { decodeCursor, encodeCursor } from '../../core/cursor.ts';
import { invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import { afterCommit, type Db, type DbOrTx, type Tx } from '../../db/index.ts';
import type { EmailOutboxTable } from '../../db/schema.ts';
import { SmtpTransport, type OutgoingMail, type SmtpSession } from './smtp.ts';
import { renderEmail, type EmailContent } from './template.ts';

/** NOTIFY channel: mail is due. */
export const EMAIL_CHANNEL = 'kasse_email';

/** Delays after the 1st … 7th attempt that the server refused for now; the 8th failure is final. */
export const EMAIL_RETRY_DELAYS_MS = [1 * MINUTE, 5 * MINUTE, 15 * MINUTE, 1 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR] as const;
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

/** A mail to send. Every string is plain text; `html` is markup the caller built with escaping (see renderEmail). */
export interface MailMessage {
  /** The merchant the mail belongs to (null for operator mail); scopes the Mail page. */
  merchantId: string | null;
  /** Mode of the object the mail is about; null for account mail (invitations, password resets). */
  mode: Mode | null;
  /** What the mail is, dotted like event types: `user.invite`, `user.password_reset`, `subscription.invoice`, … */
  kind: string;
  to: string;
  toName?: string | null;
  subject: string;
  /** The plain-text part (or give `content`). */
  text?: string;
  html?: string | null;
  /**
   * The mail as the shared layout's blocks instead of `text`/`html`: stored as they are (a few hundred bytes) and
   * rendered with renderEmail when the mail is sent or shown — the same parts every time.
   */
  content?: EmailContent;
  /** At most one mail per key (e.g. `subscription:<id>:invoice:<period>`); a repeat enqueue is ignored. */
  dedupeKey?: string | null;
  /** The mail carries a credential (a sign-in link): the dashboard never shows its body. */
  sensitive?: boolean;
  /** Files sent with the mail (a statement's PDF); stored with it, so a retry sends the same bytes. */
  attachments?: MailAttachment[];
}

/**
 * A mail stored by reference: its subject and blocks are built when it is sent or shown by the composer registered
 * for its `kind` (`EmailService.composeWith`), from what `ref` names — a few dozen bytes in the outbox.
 */
export interface MailReference {
  merchantId: string | null;
  mode: Mode | null;
  kind: string;
  to: string;
  toName?: string | null;
  /** What the composer builds the mail from (e.g. a payment id); at most 200 characters. */
  ref: string;
  dedupeKey?: string | null;
}

/** A mail built by a composer. */
export interface ComposedMail {
  subject: string;
  content: EmailContent;
}

/** A stored mail by reference, as its composer is given it. */
export interface MailRef {
  kind: string;
  ref: string;
  merchantId: string | null;
  mode: Mode | null;
}

/**
 * Builds the mails of its kinds stored by reference, many in one call (a batch being sent, a page being shown),
 * keyed by `ref`. A ref it cannot build (what it names is gone) is left out: that mail fails and is not sent.
 */
export type MailComposer = (db: DbOrTx, mails: readonly MailRef[]) => Promise<Map<string, ComposedMail>>;

const isReference = (m: MailMessage | MailReference): m is MailReference => 'ref' in m;

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
}

export type MailStatus = 'pending' | 'claimed' | 'handed' | 'sent' | 'failed' | 'uncertain' | 'kept';

/** A stored mail as the dashboard and the CLI show it. */
export interface StoredMail {
  id: string;
  merchant_id: string | null;
  mode: Mode | null;
  kind: string;
  to: string;
  to_name: string | null;
  subject: string;
  text: string;
  html: string | null;
  message_id: string;
  sensitive: boolean;
  status: MailStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_error: string | null;
  sent_at: string | null;
  created_at: string;
  /** Names, types and sizes of the files sent with it. */
  attachments: Array<{ filename: string; content_type: string; bytes: number }>;
}

export interface EmailServiceDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  mail: { smtpUrl: string | null; from: string };
  /** Host part of Message-IDs (the checkout host's name). */
  messageIdHost: () => string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export class EmailService {
  private readonly transport: SmtpTransport | null;
  private readonly wakers = new Set<() => void>();
  private readonly composers = new Map<string, MailComposer>();

  constructor(private readonly deps: EmailServiceDeps) {
    this.transport = deps.mail.smtpUrl ? new SmtpTransport(deps.mail.smtpUrl) : null;
  }

  /** Registers the composer of mails of `kinds` stored by reference (at start, by the module that writes them). */
  composeWith(kinds: readonly string[], composer: MailComposer): void {
    for (const k of kinds) this.composers.set(k, composer);
  }

  /** Whether mail goes out over SMTP (else it is kept for the dashboard's Mail page). */
  get sending(): boolean {
    return this.transport !== null;
  }

  /**
   * Writes a mail into the outbox in `db` — the caller's transaction, so it is sent only if that commits. Returns its
   * id, or null when `dedupeKey` was already used. One statement; workers in every process are woken at commit.
   */
  async enqueue(db: DbOrTx, m: MailMessage | MailReference): Promise<{ id: string } | null> {
    const id = newId('eml');
    const now = this.deps.clock.now();
    const messageId = `<${id.toLowerCase()}.${randomBytes(6).toString('hex')}@${this.deps.messageIdHost()}>`;
    const r = columnsOf(m);
    const { rows } = await sql<{ id: string }>`
      WITH m AS (
        INSERT INTO email_outbox (id, merchant_id, mode, kind, to_address, to_name, subject, text_body, html_body, content, content_ref, message_id, dedupe_key, sensitive, next_attempt_at, created_at, attachments)
        VALUES (${id}, ${m.merchantId}, ${m.mode}, ${m.kind}, ${m.to}, ${m.toName ?? null}, ${r.subject}, ${r.text_body}, ${r.html_body}, ${r.content === null ? null : JSON.stringify(r.content)}, ${r.content_ref}, ${messageId}, ${m.dedupeKey ?? null}, ${r.sensitive}, ${now}, ${now}, ${r.attachments})
        ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING id
      )
      SELECT id, pg_notify(${EMAIL_CHANNEL}, '') FROM m
    `.execute(db);
    if (rows.length === 0) return null;
    if (!('isTransaction' in db && db.isTransaction) || !afterCommit(db as Tx, () => this.nudge())) this.nudge();
    return { id };
  }

  /** `enqueue` for many mails in one statement (a module mailing many customers in one change); skips used dedupe keys. */
  async enqueueMany(tx: Tx, messages: readonly (MailMessage | MailReference)[]): Promise<number> {
    if (messages.length === 0) return 0;
    const now = this.deps.clock.now();
    const ids = messages.map(() => newId('eml'));
    const host = this.deps.messageIdHost();
    const messageIds = ids.map((id) => `<${id.toLowerCase()}.${randomBytes(6).toString('hex')}@${host}>`);
    // The batch travels as one JSON parameter (serialised natively; large bodies need no array escaping).
    const input = JSON.stringify(
      messages.map((m, i) => ({
        id: ids[i],
        merchant_id: m.merchantId,
        mode: m.mode,
        kind: m.kind,
        to_address: m.to,
        to_name: m.toName ?? null,
        ...columnsOf(m),
        message_id: messageIds[i],
        dedupe_key: m.dedupeKey ?? null,
      })),
    );
    const { rows } = await sql<{ n: string }>`
      WITH m AS (
        INSERT INTO email_outbox (id, merchant_id, mode, kind, to_address, to_name, subject, text_body, html_body, content, content_ref, message_id, dedupe_key, sensitive, next_attempt_at, created_at, attachments)
        SELECT id, merchant_id, mode, kind, to_address, to_name, subject, text_body, html_body, content, content_ref, message_id, dedupe_key, sensitive, ${now}, ${now}, attachments::jsonb
        FROM json_to_recordset(${input}::json) AS u(id text, merchant_id text, mode text, kind text, to_address text, to_name text, subject text,
          text_body text, html_body text, content json, content_ref text, message_id text, dedupe_key text, sensitive boolean, attachments text)
        ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING id
      )
      SELECT count(*) AS n, pg_notify(${EMAIL_CHANNEL}, '') FROM m HAVING count(*) > 0
    `.execute(tx);
    const n = rows.length === 0 ? 0 : Number(rows[0]!.n);
    if (n > 0 && !afterCommit(tx, () => this.nudge())) this.nudge();
    return n;
  }

  /** The merchant's mail, newest first (the dashboard's Mail page). */
  async list(merchantId: string, opts: { cursor?: string; limit?: number; statuses?: MailStatus[] } = {}): Promise<{ data: StoredMail[]; next_cursor: string | null }> {
    const limit = opts.limit ?? 25;
    let q = this.deps.db.selectFrom('email_outbox').selectAll().where('merchant_id', '=', merchantId);
    if (opts.statuses) q = q.where('status', 'in', opts.statuses);
    if (opts.cursor) q = q.where('id', '<', decodeCursor(opts.cursor, /^eml_[0-9A-Z]{26}$/));
    const rows = await q.orderBy('id', 'desc').limit(limit + 1).execute();
    const page = rows.slice(0, limit);
    return { data: await this.stored(page), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : null };
  }

  /** One mail; with `merchantId`, only that merchant's (else 404). */
  async get(id: string, merchantId?: string): Promise<StoredMail> {
    let q = this.deps.db.selectFrom('email_outbox').selectAll().where('id', '=', id);
    if (merchantId !== undefined) q = q.where('merchant_id', '=', merchantId);
    const row = await q.executeTakeFirst();
    if (!row) throw notFound('mail');
    return (await this.stored([row]))[0]!;
  }

  /** Operator: every merchant's mail, or only that in one status (uncertain, failed, …), newest first. */
  async forOperator(opts: { status?: MailStatus; limit?: number } = {}): Promise<{ data: StoredMail[]; has_more: boolean }> {
    const limit = opts.limit ?? 100;
    let q = this.deps.db.selectFrom('email_outbox').selectAll();
    if (opts.status) q = q.where('status', '=', opts.status);
    const rows = await q.orderBy('id', 'desc').limit(limit + 1).execute();
    return { data: await this.stored(rows.slice(0, limit)), has_more: rows.length > limit };
  }

  /** Operator: sends an `uncertain` or `failed` mail again (the copy has the same Message-ID). */
  async resend(id: string): Promise<StoredMail> {
    const row = await this.deps.db
      .updateTable('email_outbox')
      .set({ status: 'pending', attempts: 0, next_attempt_at: this.deps.clock.now(), last_error: null })
      .where('id', '=', id)
      .where('status', 'in', ['uncertain', 'failed'])
      .returningAll()
      .executeTakeFirst();
    if (!row) {
      await this.get(id);
      throw invalidState('Only an uncertain or failed mail can be sent again.');
    }
    this.nudge();
    return (await this.stored([row]))[0]!;
  }

  onWork(waker: () => void): () => void {
    this.wakers.add(waker);
    return () => this.wakers.delete(waker);
  }

  nudge(): void {
    for (const w of this.wakers) w();
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
      .set({ status: 'uncertain', locked_until: null, lease_token: null, last_error: 'the worker stopped while handing the message to the SMTP server' })
      .where('status', '=', 'handed')
      .where('locked_until', '<=', now)
      .returning(['id', 'kind', 'to_address'])
      .execute();
    for (const r of lost) this.deps.log.warn({ mail: r.id, kind: r.kind }, 'mail may or may not have been delivered (worker stopped mid-send); not resending it on its own');
  }

  private async claim() {
    const now = this.deps.clock.now();
    const token = randomBytes(12).toString('base64url');
    const { rows } = await sql<RowOf>`
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

  private async keep(batch: RowOf[]): Promise<void> {
    const parts = await this.parts(batch);
    await this.deps.db
      .updateTable('email_outbox')
      .set({ status: 'kept', locked_until: null, lease_token: null })
      .where('id', 'in', batch.map((r) => r.id))
      .execute();
    for (const r of batch) {
      // The body is not logged: it may carry a sign-in link. `kasse mail show <id>` prints it.
      this.deps.log.info({ mail: r.id, kind: r.kind, to: r.to_address, subject: parts.get(r.id)?.subject ?? null }, 'mail kept, not sent (KASSE_SMTP_URL is not set); see the dashboard Mail page or `kasse mail show`');
    }
  }

  /**
   * Sends a claimed batch over up to `SMTP_CONNECTIONS` connections at once. The batch is marked `handed` in one
   * statement before any of it is offered (a worker that dies from then on leaves the batch `uncertain`, never sent
   * twice), each connection takes the next message as it is free, and the outcomes are written in one statement.
   */
  private async sendBatch(transport: SmtpTransport, sessions: Array<SmtpSession | null>, batch: RowOf[]): Promise<void> {
    const ready: RowOf[] = [];
    const outcomes: Outcome[] = [];
    const parts = await this.parts(batch);
    for (const row of batch) {
      if (!parts.has(row.id)) outcomes.push(this.failure(row, 'no', true, `the ${row.kind} mail could not be composed from ${row.content_ref}: what it names is gone or not this mail's merchant and mode`));
      else if (row.locked_until!.getTime() - this.deps.clock.millis() < SEND_MARGIN_MS) outcomes.push(this.failure(row, 'no', false, 'claim ran out before the message could be offered'));
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
              this.deps.log.warn({ err: { message: (err as Error).message, code: (err as { code?: string }).code } }, 'SMTP connection failed; mail will be retried');
              outcomes.push(this.failure(row, 'no', false, connectError));
              continue;
            }
          }
          const outcome = await session.send(this.outgoing(row, parts.get(row.id)!));
          outcomes.push(outcome.ok ? { row, status: 'sent', response: outcome.response.slice(0, 500), next: null, error: null } : this.failure(row, outcome.delivered, outcome.permanent, outcome.error));
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
  private async markHanded(rows: readonly RowOf[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const { rows: done } = await sql<{ id: string }>`
      UPDATE email_outbox AS o SET status = 'handed'
      FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.lease_token)}::text[]) AS v(id, lease_token)
      WHERE o.id = v.id AND o.lease_token = v.lease_token AND o.status = 'claimed'
      RETURNING o.id`.execute(this.deps.db);
    return new Set(done.map((r) => r.id));
  }

  /** What a failed try makes of a mail: uncertain, failed for good, or pending again after its backoff (logged). */
  private failure(row: RowOf, delivered: 'no' | 'unknown', permanent: boolean, error: string): Outcome {
    const status = delivered === 'unknown' ? 'uncertain' : permanent || row.attempts >= EMAIL_MAX_ATTEMPTS ? 'failed' : 'pending';
    const next = status === 'pending' ? new Date(this.deps.clock.millis() + EMAIL_RETRY_DELAYS_MS[row.attempts - 1]!) : null;
    const level = status === 'pending' ? 'info' : 'warn';
    this.deps.log[level]({ mail: row.id, kind: row.kind, status, attempts: row.attempts, error }, status === 'uncertain' ? 'mail may or may not have been delivered; not resending it on its own' : status === 'failed' ? 'mail failed' : 'mail will be retried');
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

  /**
   * The subject and parts of stored mails, by id: as written, rendered from their blocks, or composed by their kind's
   * composer (one call per kind). A mail whose composer is missing or could not build it has none.
   */
  private async parts(rows: readonly RowOf[]): Promise<Map<string, MailParts>> {
    const out = new Map<string, MailParts>();
    const byKind = new Map<string, RowOf[]>();
    for (const r of rows) {
      if (r.content_ref === null) out.set(r.id, { subject: r.subject!, ...bodiesOf(r) });
      else if (byKind.has(r.kind)) byKind.get(r.kind)!.push(r);
      else byKind.set(r.kind, [r]);
    }
    for (const [kind, list] of byKind) {
      const composer = this.composers.get(kind);
      if (!composer) continue;
      const made = await composer(this.deps.db, list.map((r) => ({ kind: r.kind, ref: r.content_ref!, merchantId: r.merchant_id, mode: r.mode })));
      for (const r of list) {
        const mail = made.get(r.content_ref!);
        if (mail) out.set(r.id, { subject: mail.subject, ...renderEmail(mail.content) });
      }
    }
    return out;
  }

  private async stored(rows: readonly RowOf[]): Promise<StoredMail[]> {
    const parts = await this.parts(rows);
    return rows.map((r) => toStored(r, parts.get(r.id) ?? { subject: `(${r.kind} mail of ${r.content_ref}: cannot be composed)`, text: '', html: null }));
  }

  private outgoing(row: RowOf, body: MailParts): OutgoingMail {
    return {
      from: this.deps.mail.from,
      to: { address: row.to_address, name: row.to_name },
      subject: body.subject,
      text: body.text,
      html: body.html,
      messageId: row.message_id,
      date: row.created_at,
      attachments: attachmentsOf(row).map((a) => ({ filename: a.filename, contentType: a.content_type, content: Buffer.from(a.content_base64, 'base64') })),
    };
  }
}

type RowOf = Selectable<EmailOutboxTable>;

interface MailParts {
  subject: string;
  text: string;
  html: string | null;
}

/** What became of one mail of a batch, as written back to its row. */
interface Outcome {
  row: RowOf;
  status: 'sent' | 'pending' | 'failed' | 'uncertain';
  response: string | null;
  next: Date | null;
  error: string | null;
}

interface StoredAttachment {
  filename: string;
  content_type: string;
  content_base64: string;
}

function storedAttachments(list: MailAttachment[] | undefined): string | null {
  if (!list || list.length === 0) return null;
  return JSON.stringify(list.map((a): StoredAttachment => ({ filename: a.filename, content_type: a.contentType, content_base64: a.content.toString('base64') })));
}

function attachmentsOf(r: RowOf): StoredAttachment[] {
  return Array.isArray(r.attachments) ? (r.attachments as StoredAttachment[]) : [];
}

/** The columns that hold what a mail says: its subject and parts, its blocks, or its reference. */
function columnsOf(m: MailMessage | MailReference) {
  if (isReference(m)) {
    if (m.ref.length === 0 || m.ref.length > 200) throw new Error(`mail ${m.kind}: a reference has 1 to 200 characters`);
    return { subject: null, text_body: null, html_body: null, content: null, content_ref: m.ref, sensitive: false, attachments: null };
  }
  if (!m.content && m.text === undefined) throw new Error(`mail ${m.kind} has neither text nor content`);
  return {
    subject: m.subject,
    text_body: m.content ? null : m.text!,
    html_body: m.html ?? null,
    content: m.content ?? null,
    content_ref: null,
    sensitive: m.sensitive ?? false,
    attachments: storedAttachments(m.attachments),
  };
}

/** The text and HTML parts of a stored mail: as written, or built from its layout blocks. */
function bodiesOf(r: RowOf): { text: string; html: string | null } {
  if (r.text_body !== null) return { text: r.text_body, html: r.html_body };
  return renderEmail(r.content as EmailContent);
}

function toStored(r: RowOf, body: MailParts): StoredMail {
  return {
    id: r.id,
    merchant_id: r.merchant_id,
    mode: r.mode,
    kind: r.kind,
    to: r.to_address,
    to_name: r.to_name,
    subject: body.subject,
    text: body.text,
    html: body.html,
    message_id: r.message_id,
    sensitive: r.sensitive,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: iso(r.next_attempt_at),
    last_error: r.last_error,
    sent_at: iso(r.sent_at),
    created_at: r.created_at.toISOString(),
    attachments: attachmentsOf(r).map((a) => ({ filename: a.filename, content_type: a.content_type, bytes: Buffer.byteLength(a.content_base64, 'base64') })),
  };
}
