/**
 * Structured JSON logs (pino). Secrets never reach a log line: code never passes keys, seeds or webhook secrets to
 * the logger, and the few places a secret could ride along (an Authorization header in a logged request) are
 * redacted by exact path — wildcard redaction costs every log call, exact paths almost nothing.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Where logs go by default: a file descriptor written asynchronously, lines gathered up to 4 KiB (or for at most a
 * second) per write, so a busy API does not pay a system call per access log line. Pino flushes what is gathered
 * when the process exits; a process killed outright loses at most the last second of lines (never data: payments,
 * ledger, webhooks and mail are in PostgreSQL).
 */
export function logDestination(fd: number): DestinationStream {
  return pino.destination({ dest: fd, sync: false, minLength: 4096, periodicFlush: 1000 });
}

export function createLogger(level: string, destination?: NodeJS.WritableStream | DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'kasse' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'config.headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination ?? logDestination(1),
  );
}
