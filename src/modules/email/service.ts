/**
 * The email outbox. Any module sends mail by calling `enqueue(tx, message)` inside the transaction that causes it, so
 * a mail exists exactly when the change it reports was committed; the delivery worker (delivery.ts, `runOnce`, run by
 * the workers role) sends what is due through SMTP, or keeps it for the dashboard's Mail page when no SMTP server is
 * configured. A mail may be stored as the layout's blocks (`content`) and rendered when sent or shown, or by
 * reference (`ref`): a module registers a composer for its kinds (`composeWith`, parts.ts) that builds the subject
 * and blocks of many mails at once when they are sent or shown. Rules and the API: docs/email.md.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Clock } from '../../core/clock.ts';
import { decodeCursor, fetchPage } from '../../core/cursor.ts';
import { invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import { afterCommit, type Db, type DbOrTx, type Tx } from '../../db/index.ts';
import { EmailDelivery } from './delivery.ts';
import { attachmentsOf, MailComposers, type MailParts, type OutboxRow, type StoredAttachment } from './parts.ts';
import type { EmailContent } from './template.ts';
import { WorkNotifier } from '../../core/wakers.ts';

/** NOTIFY channel: mail is due. */
export const EMAIL_CHANNEL = 'kasse_email';

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

export class EmailService extends WorkNotifier {
  /** The delivery worker; the workers role runs `runOnce` in a loop. */
  readonly delivery: EmailDelivery;
  private readonly composers: MailComposers;

  constructor(private readonly deps: EmailServiceDeps) {
    super();
    this.composers = new MailComposers(deps.db);
    this.delivery = new EmailDelivery({
      db: deps.db,
      clock: deps.clock,
      log: deps.log,
      mail: deps.mail,
      composers: this.composers,
    });
  }

  /** Registers the composer of mails of `kinds` stored by reference (at start, by the module that writes them). */
  composeWith(kinds: readonly string[], composer: MailComposer): void {
    this.composers.composeWith(kinds, composer);
  }

  /** Whether mail goes out over SMTP (else it is kept for the dashboard's Mail page). */
  get sending(): boolean {
    return this.delivery.sending;
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
  async list(
    merchantId: string,
    opts: { cursor?: string; limit?: number; statuses?: MailStatus[] } = {},
  ): Promise<{ data: StoredMail[]; next_cursor: string | null }> {
    const limit = opts.limit ?? 25;
    let q = this.deps.db.selectFrom('email_outbox').selectAll().where('merchant_id', '=', merchantId);
    if (opts.statuses) q = q.where('status', 'in', opts.statuses);
    if (opts.cursor) q = q.where('id', '<', decodeCursor(opts.cursor, /^eml_[0-9A-Z]{26}$/));
    const { page, next_cursor } = await fetchPage(q.orderBy('id', 'desc'), limit, (r) => r.id);
    return {
      data: await this.stored(page),
      next_cursor,
    };
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
  async forOperator(
    opts: { status?: MailStatus; limit?: number } = {},
  ): Promise<{ data: StoredMail[]; has_more: boolean }> {
    const limit = opts.limit ?? 100;
    let q = this.deps.db.selectFrom('email_outbox').selectAll();
    if (opts.status) q = q.where('status', '=', opts.status);
    const rows = await q
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
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

  /** One delivery pass now (the workers role runs it in a loop; tests after moving the fake clock). */
  runOnce(): Promise<number> {
    return this.delivery.runOnce();
  }

  private async stored(rows: readonly OutboxRow[]): Promise<StoredMail[]> {
    const parts = await this.composers.parts(rows);
    return rows.map((r) =>
      toStored(
        r,
        parts.get(r.id) ?? {
          subject: `(${r.kind} mail of ${r.content_ref}: cannot be composed)`,
          text: '',
          html: null,
        },
      ),
    );
  }
}

function storedAttachments(list: MailAttachment[] | undefined): string | null {
  if (!list || list.length === 0) return null;
  return JSON.stringify(
    list.map(
      (a): StoredAttachment => ({
        filename: a.filename,
        content_type: a.contentType,
        content_base64: a.content.toString('base64'),
      }),
    ),
  );
}

/** The columns that hold what a mail says: its subject and parts, its blocks, or its reference. */
function columnsOf(m: MailMessage | MailReference) {
  if (isReference(m)) {
    if (m.ref.length === 0 || m.ref.length > 200)
      throw new Error(`mail ${m.kind}: a reference has 1 to 200 characters`);
    return {
      subject: null,
      text_body: null,
      html_body: null,
      content: null,
      content_ref: m.ref,
      sensitive: false,
      attachments: null,
    };
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

function toStored(r: OutboxRow, body: MailParts): StoredMail {
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
    attachments: attachmentsOf(r).map((a) => ({
      filename: a.filename,
      content_type: a.content_type,
      bytes: Buffer.byteLength(a.content_base64, 'base64'),
    })),
  };
}
