/** A logger whose lines a test reads back: each JSON line parsed, in order, as Kasse wrote it. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/core/log.ts';

export interface RecordedLog {
  log: Logger;
  lines: any[];
}

export function recordedLog(level = 'info'): RecordedLog {
  const lines: RecordedLog['lines'] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      cb();
    },
  });
  return { log: createLogger(level, sink), lines };
}
