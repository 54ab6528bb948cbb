/**
 * Child process for the subscriptions benchmark's email part: an SMTP server (`smtp-server`, no auth, no TLS) that
 * reads every message and acknowledges it without parsing, so the receiver's cost stays out of the measurement.
 * Prints one JSON line with its URL and `countUrl`, where `GET` answers how many messages it accepted.
 */
import { createServer } from 'node:http';
import { SMTPServer } from 'smtp-server';

let count = 0;
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  size: 1024 * 1024,
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => {
      count++;
      callback();
    });
  },
});
const http = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ count }));
});
smtp.listen(0, '127.0.0.1', () => {
  const smtpPort = (smtp.server.address() as { port: number }).port;
  http.listen(0, '127.0.0.1', () => {
    const { port } = http.address() as { port: number };
    process.stdout.write(
      `${JSON.stringify({ url: `smtp://127.0.0.1:${smtpPort}`, countUrl: `http://127.0.0.1:${port}/count` })}\n`,
    );
  });
});
