/**
 * What the email sender makes of nodemailer's errors for one message (smtp.ts `sendFailure`), each error raised by a
 * real nodemailer connection to a real SMTP server in the state it describes: whether the message may have been taken
 * (never sent again on its own) and whether sending it again can help.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { sendFailure } from '../../src/modules/email/smtp.ts';
import { SMTP_PASS, SMTP_USER, startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';

let smtp: SmtpReceiver;

before(async () => {
  smtp = await startSmtpReceiver();
});
after(async () => {
  await smtp.close();
});

const RAW = 'From: shop@example.com\r\nTo: customer@example.com\r\nSubject: test\r\n\r\nHello\r\n';

async function connected(): Promise<SMTPConnection> {
  const { port } = new URL(smtp.url);
  const conn = new SMTPConnection({ host: '127.0.0.1', port: Number(port), logger: false });
  conn.on('error', () => {});
  await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
  await new Promise<void>((resolve, reject) =>
    conn.login({ user: SMTP_USER, pass: SMTP_PASS }, (err) => (err ? reject(err) : resolve())),
  );
  return conn;
}

/** The error nodemailer gives for one message sent on `conn` to `to`. */
function errorOf(conn: SMTPConnection, to = 'customer@example.com'): Promise<Error> {
  return new Promise((resolve, reject) =>
    conn.send({ from: 'shop@example.com', to: [to] }, RAW, (err) => (err ? resolve(err) : reject(new Error('sent')))),
  );
}

/** Whether the mail may have been taken, and whether sending it again cannot help. */
const verdict = (o: ReturnType<typeof sendFailure>) => ({ delivered: o.delivered, permanent: o.permanent });

test('a connection the server closed, found half-closed before nodemailer says so: not offered, sent again later', async () => {
  const conn = await connected();
  // What the server's FIN leaves until the socket's close is reported: the client's side is ended, `'end'` not yet emitted.
  (conn as unknown as { _socket: { end(): void } })._socket.end();
  const offered = smtp.offered;
  const outcome = sendFailure(await errorOf(conn), false);
  assert.deepEqual(verdict(outcome), { delivered: 'no', permanent: false });
  assert.match(outcome.error, /half-closed/);
  assert.equal(smtp.offered, offered);
  conn.close();
});

test('a connection already closed: not offered, sent again later', async () => {
  const conn = await connected();
  conn.close();
  const outcome = sendFailure(await errorOf(conn), false);
  assert.deepEqual(verdict(outcome), { delivered: 'no', permanent: false });
});

test('refusals the server answered: 4xx sent again later, 5xx never', async () => {
  const conn = await connected();
  smtp.refuseNext(451);
  const temporary = sendFailure(await errorOf(conn), false);
  assert.deepEqual(verdict(temporary), { delivered: 'no', permanent: false });
  smtp.refuseNext(550);
  const permanent = sendFailure(await errorOf(conn), false);
  assert.deepEqual(verdict(permanent), { delivered: 'no', permanent: true });
  conn.close();
});

test('an envelope the client cannot send: not offered, and sending it again cannot help', async () => {
  const conn = await connected();
  const outcome = sendFailure(await errorOf(conn, 'not an address'), false);
  assert.deepEqual(verdict(outcome), { delivered: 'no', permanent: true });
  conn.close();
});

test('the connection drops while the server reads the message: it may have been taken', async () => {
  const conn = await connected();
  smtp.dropNext();
  const outcome = sendFailure(await errorOf(conn), false);
  assert.deepEqual(verdict(outcome), { delivered: 'unknown', permanent: false });
});
