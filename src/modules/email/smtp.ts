/**
 * The SMTP side of the email worker, on nodemailer's SMTP connection and MIME composer (both public parts of
 * nodemailer). The connection is driven step by step — connect and sign in, then one message at a time — so the
 * worker can record that a message is being handed over before the server can accept it, and can tell from each
 * failure whether the server certainly did not take the message (safe to retry) or might have (never resent).
 */
import { loadOnce } from '../../core/lazy.ts';

export interface OutgoingMail {
  from: string;
  to: { address: string; name: string | null };
  subject: string;
  text: string;
  html: string | null;
  messageId: string;
  date: Date;
  attachments?: Array<{ filename: string; contentType: string; content: Buffer }>;
}

/** What became of one message. */
export type SendOutcome =
  | { ok: true; response: string }
  /**
   * `delivered: 'no'`: the server refused it with a reply, or the failure came before the message was offered — safe
   * to send again (`permanent` for a 5xx refusal). `'unknown'`: the connection failed while the server may have been
   * taking it.
   */
  | { ok: false; delivered: 'no' | 'unknown'; permanent: boolean; error: string };

export interface SmtpSession {
  send(mail: OutgoingMail): Promise<SendOutcome>;
  /** Whether the connection is still usable for another message. */
  readonly usable: boolean;
  close(): void;
}

interface ServerOptions {
  host: string;
  port: number;
  secure: boolean;
  auth: { user: string; pass: string } | null;
}

/** `smtp://[user:pass@]host[:port]` (STARTTLS when offered; port 587) or `smtps://…` (TLS from the start; port 465). */
export function parseSmtpUrl(url: string): ServerOptions {
  const u = new URL(url);
  const secure = u.protocol === 'smtps:';
  const user = decodeURIComponent(u.username);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    auth: user ? { user, pass: decodeURIComponent(u.password) } : null,
  };
}

type SmtpError = Error & { responseCode?: number; code?: string; command?: string; response?: string };

/**
 * What nodemailer's error for one message means (`gone`: the connection was seen to go before the message was given
 * to it). A reply code is a refusal (5xx for good). An error raised by the client itself (`command` 'API') means
 * nothing was offered: because the connection had gone (`ECONNECTION`, also when the server closed it — its idle
 * timeout, its limit of messages per connection — and the socket is half-closed before nodemailer says 'end'), to
 * be sent again; or because the message or envelope cannot be sent at all. Any other failure came while the server
 * may have been taking the message.
 */
export function sendFailure(e: SmtpError, gone: boolean): Extract<SendOutcome, { ok: false }> {
  const error = describe(e);
  if (typeof e.responseCode === 'number')
    return { ok: false, delivered: 'no', permanent: e.responseCode >= 500, error };
  if (e.command === 'API' && (gone || e.code === 'ECONNECTION'))
    return { ok: false, delivered: 'no', permanent: false, error };
  if (e.command === 'API' || e.code === 'EENVELOPE' || e.code === 'EMESSAGE')
    return { ok: false, delivered: 'no', permanent: true, error };
  return { ok: false, delivered: 'unknown', permanent: false, error };
}

/** One line for logs and the outbox row: no credentials ever appear in nodemailer's messages. */
function describe(err: SmtpError): string {
  return (err.message || String(err)).replace(/\s+/g, ' ').slice(0, 500);
}

/** nodemailer's connection and composer, loaded when mail is first sent, not by every process that imports this. */
const nodemailer = loadOnce(() =>
  Promise.all([import('nodemailer/lib/smtp-connection'), import('nodemailer/lib/mail-composer')]).then(([c, m]) => ({
    SMTPConnection: c.default,
    MailComposer: m.default,
  })),
);

export class SmtpTransport {
  private readonly server: ServerOptions;

  constructor(
    url: string,
    private readonly timeouts = { connectMs: 30_000, socketMs: 60_000 },
  ) {
    this.server = parseSmtpUrl(url);
  }

  /** Opens a connection and signs in; throws (nothing was offered to the server) when that fails. */
  async open(): Promise<SmtpSession> {
    const { SMTPConnection, MailComposer } = await nodemailer();
    const conn = new SMTPConnection({
      host: this.server.host,
      port: this.server.port,
      secure: this.server.secure,
      connectionTimeout: this.timeouts.connectMs,
      greetingTimeout: this.timeouts.connectMs,
      socketTimeout: this.timeouts.socketMs,
      logger: false,
    });
    let broken = false;
    /** Settles the message in flight when the connection goes away without its callback (it may have been taken). */
    let lost: ((why: string) => void) | null = null;
    const gone = (why: string) => {
      broken = true;
      lost?.(why);
    };
    conn.on('error', (err: Error) => gone(describe(err as SmtpError)));
    conn.on('end', () => gone('the connection closed'));
    // Connecting and signing in end with their callback, or with the connection going away (nothing was offered).
    const step = (run: (done: (err?: Error | null) => void) => void) =>
      new Promise<void>((resolve, reject) => {
        lost = (why) => reject(new Error(why));
        run((err) => (err ? reject(err) : resolve()));
      }).finally(() => {
        lost = null;
      });
    try {
      await step((done) => conn.connect(done));
      if (this.server.auth)
        await step((done) => conn.login({ user: this.server.auth!.user, pass: this.server.auth!.pass }, done));
    } catch (err) {
      conn.close();
      throw err;
    }
    return {
      get usable() {
        return !broken;
      },
      send: async (mail) => {
        let raw: Buffer;
        try {
          raw = await new MailComposer({
            from: mail.from,
            to: mail.to.name ? { name: mail.to.name, address: mail.to.address } : mail.to.address,
            subject: mail.subject,
            text: mail.text,
            ...(mail.html ? { html: mail.html } : {}),
            messageId: mail.messageId,
            date: mail.date,
            headers: { 'Auto-Submitted': 'auto-generated' },
            ...(mail.attachments?.length
              ? {
                  attachments: mail.attachments.map((a) => ({
                    filename: a.filename,
                    contentType: a.contentType,
                    content: a.content,
                  })),
                }
              : {}),
          })
            .compile()
            .build();
        } catch (err) {
          return {
            ok: false,
            delivered: 'no',
            permanent: true,
            error: `message could not be built: ${describe(err as SmtpError)}`,
          };
        }
        const from = /<([^<>]+)>\s*$/.exec(mail.from)?.[1] ?? mail.from;
        return new Promise<SendOutcome>((resolve) => {
          let settled = false;
          const settle = (o: SendOutcome) => {
            if (settled) return;
            settled = true;
            lost = null;
            resolve(o);
          };
          lost = (why) => settle({ ok: false, delivered: 'unknown', permanent: false, error: why });
          conn.send({ from, to: [mail.to.address] }, raw, (err, info) => {
            if (!err) return settle({ ok: true, response: info?.response ?? '' });
            const outcome = sendFailure(err as SmtpError, broken);
            if (outcome.delivered === 'unknown' || (err as SmtpError).code === 'ECONNECTION') broken = true;
            settle(outcome);
          });
        });
      },
      close: () => {
        if (!broken) conn.quit();
        else conn.close();
      },
    };
  }
}
