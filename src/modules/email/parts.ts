/**
 * What a stored mail says: its subject and parts as written, rendered from its layout blocks, or built by the
 * composer its module registered for its kind (a mail stored by reference). The outbox's views (the Mail page, the
 * CLI) and the delivery worker both read mail through here, so a mail says the same wherever it is shown or sent.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { EmailOutboxTable } from './tables.ts';
import type { MailComposer } from './service.ts';
import { renderEmail, type EmailContent } from './template.ts';

export type OutboxRow = Selectable<EmailOutboxTable>;

export interface MailParts {
  subject: string;
  text: string;
  html: string | null;
}

export interface StoredAttachment {
  filename: string;
  content_type: string;
  content_base64: string;
}

export function attachmentsOf(r: OutboxRow): StoredAttachment[] {
  return Array.isArray(r.attachments) ? (r.attachments as StoredAttachment[]) : [];
}

/** The text and HTML parts of a stored mail: as written, or built from its layout blocks. */
function bodiesOf(r: OutboxRow): { text: string; html: string | null } {
  if (r.text_body !== null) return { text: r.text_body, html: r.html_body };
  return renderEmail(r.content as EmailContent);
}

/** The composers of mails stored by reference, by kind. */
export class MailComposers {
  private readonly composers = new Map<string, MailComposer>();

  constructor(private readonly db: Db) {}

  /** Registers the composer of mails of `kinds` stored by reference (at start, by the module that writes them). */
  composeWith(kinds: readonly string[], composer: MailComposer): void {
    for (const k of kinds) this.composers.set(k, composer);
  }

  /**
   * The subject and parts of stored mails, by id: as written, rendered from their blocks, or composed by their kind's
   * composer (one call per kind). A mail whose composer is missing or could not build it has none.
   */
  async parts(rows: readonly OutboxRow[]): Promise<Map<string, MailParts>> {
    const out = new Map<string, MailParts>();
    const byKind = new Map<string, OutboxRow[]>();
    for (const r of rows) {
      if (r.content_ref === null) out.set(r.id, { subject: r.subject!, ...bodiesOf(r) });
      else if (byKind.has(r.kind)) byKind.get(r.kind)!.push(r);
      else byKind.set(r.kind, [r]);
    }
    for (const [kind, list] of byKind) {
      const composer = this.composers.get(kind);
      if (!composer) continue;
      const made = await composer(
        this.db,
        list.map((r) => ({ kind: r.kind, ref: r.content_ref!, merchantId: r.merchant_id, mode: r.mode })),
      );
      for (const r of list) {
        const mail = made.get(r.content_ref!);
        if (mail) out.set(r.id, { subject: mail.subject, ...renderEmail(mail.content) });
      }
    }
    return out;
  }
}
