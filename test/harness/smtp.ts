/**
 * A real SMTP server for tests (`smtp-server` on 127.0.0.1, a free port) that parses every accepted message with
 * `mailparser`, as a merchant's or a user's mail server would receive it. Point Kasse at it with
 * `KASSE_SMTP_URL: receiver.url`.
 *
 * Faults for delivery tests: `refuseNext(code, n)` answers the next n messages' DATA with an SMTP error (4xx
 * temporary, 5xx permanent) after reading them; `dropNext(n)` reads the next n messages and closes the connection
 * without answering (the client cannot know whether the message was taken); `closeAfterNext(n)` accepts the next n
 * messages and then closes each one's connection in good order, as a server with a limit of messages per connection
 * or an idle timeout does; `authFails` refuses every login.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

export interface ReceivedMail {
  /** Envelope sender and recipients as the client gave them. */
  envelope: { from: string; to: string[] };
  parsed: ParsedMail;
  /** Convenience: the first To address, subject, text and HTML parts. */
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  raw: Buffer;
}

export interface SmtpReceiver {
  /** `smtp://user:pass@127.0.0.1:<port>` */
  url: string;
  /** Every message accepted so far, in order. */
  messages: ReceivedMail[];
  /** Messages the server read but refused or dropped (they were offered). */
  offered: number;
  /** Resolves with the first accepted message (already received or still to come) that `match` accepts. */
  waitFor(match: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  refuseNext(code: number, n?: number): void;
  dropNext(n?: number): void;
  closeAfterNext(n?: number): void;
  authFails: boolean;
  close(): Promise<void>;
}

export const SMTP_USER = 'kasse';
export const SMTP_PASS = 'mail-secret';

export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const messages: ReceivedMail[] = [];
  const waiters: Array<{ match: (m: ReceivedMail) => boolean; resolve: (m: ReceivedMail) => void }> = [];
  const refusals: number[] = [];
  let drops = 0;
  let closes = 0;
  const receiver: SmtpReceiver = {
    url: '',
    messages,
    offered: 0,
    authFails: false,
    waitFor(match, timeoutMs = 10_000) {
      const found = messages.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const w = {
          match,
          resolve: (m: ReceivedMail) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(
            new Error(
              `no matching mail arrived within ${timeoutMs} ms (received: ${messages.map((m) => m.subject).join(' | ') || 'none'})`,
            ),
          );
        }, timeoutMs);
        waiters.push(w);
      });
    },
    refuseNext(code, n = 1) {
      for (let i = 0; i < n; i++) refusals.push(code);
    },
    dropNext(n = 1) {
      drops += n;
    },
    closeAfterNext(n = 1) {
      closes += n;
    },
    close: async () => {},
  };

  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: false,
    logger: false,
    onAuth(auth, _session, cb) {
      if (!receiver.authFails && auth.username === SMTP_USER && auth.password === SMTP_PASS)
        return cb(null, { user: auth.username });
      cb(new Error('Invalid username or password'));
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        if (drops > 0) {
          drops--;
          receiver.offered++;
          // Read the whole message, then vanish without a reply.
          (session as unknown as { _socket?: { destroy(): void } })._socket?.destroy();
          for (const conn of connections) conn.destroy();
          return;
        }
        const code = refusals.shift();
        if (code !== undefined) {
          receiver.offered++;
          const err = new Error(code >= 500 ? 'Mailbox unavailable' : 'Try again later') as Error & {
            responseCode: number;
          };
          err.responseCode = code;
          return cb(err);
        }
        void simpleParser(raw).then((parsed) => {
          const mail: ReceivedMail = {
            envelope: {
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
            },
            parsed,
            to: session.envelope.rcptTo[0]?.address ?? '',
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
            messageId: parsed.messageId ?? '',
            raw,
          };
          messages.push(mail);
          receiver.offered++;
          cb();
          if (closes > 0) {
            closes--;
            // The 250 is written; then the server ends this connection (FIN), without waiting for QUIT.
            for (const conn of connections) if (conn.remotePort === session.remotePort) conn.end();
          }
          for (const w of [...waiters]) {
            if (w.match(mail)) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(mail);
            }
          }
        }, cb);
      });
    },
  });
  const connections = new Set<import('node:net').Socket>();
  server.server.on('connection', (socket: import('node:net').Socket) => {
    connections.add(socket);
    socket.on('close', () => connections.delete(socket));
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  receiver.url = `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const c of connections) c.destroy();
      server.close(() => resolve());
    });
  return receiver;
}

/** The first https?:// URL in a text that contains `path`. */
export function linkIn(text: string, path: string): string {
  const m = text.match(/https?:\/\/[^\s<>"]+/g)?.find((u) => u.includes(path));
  if (!m) throw new Error(`no link with ${path} in:\n${text}`);
  return m;
}
