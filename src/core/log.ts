/**
 * Structured JSON logs (pino). Secrets never reach a log line: code never passes keys, seeds or webhook secrets to
 * the logger, and the few places a secret could ride along (an Authorization header in a logged request) are
 * redacted by exact path — wildcard redaction costs every log call, exact paths almost nothing.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

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
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
