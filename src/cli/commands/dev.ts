/**
 * Developer commands: run by a merchant's developer on their own machine against a Kasse API by URL and test key,
 * through the SDK — no database, no server configuration, no port of theirs reachable from Kasse. `kasse listen`
 * forwards test events to a local URL; `kasse trigger` makes a test payment fire a chosen event.
 */
import type { ParseArgsConfig } from 'node:util';
import { listen } from './dev-listen.ts';
import { REMOTE_FLAGS } from './dev-remote.ts';
import { trigger, TRIGGERS } from './dev-trigger.ts';

export interface DeveloperCommand {
  name: string;
  usage: string;
  flags: NonNullable<ParseArgsConfig['options']>;
  /** Runs the command, printing as it goes; resolves to the exit code. */
  run(flags: Record<string, unknown>, positionals: string[]): Promise<number>;
}

export const developerCommands: DeveloperCommand[] = [
  {
    name: 'listen',
    usage:
      'listen --forward-to URL [--events TYPE,…] [--print-secret]   (test events as they happen, re-signed and POSTed to URL)',
    flags: {
      'forward-to': { type: 'string' },
      events: { type: 'string' },
      'print-secret': { type: 'boolean' },
      ...REMOTE_FLAGS,
    },
    run: (f) => listen(f),
  },
  {
    name: 'trigger',
    usage: `trigger EVENT [--override FIELD=VALUE]… [--json]   (a test payment that fires EVENT: ${Object.keys(TRIGGERS).join(', ')})`,
    flags: { override: { type: 'string', multiple: true }, json: { type: 'boolean' }, ...REMOTE_FLAGS },
    run: (f, pos) => trigger(f, pos),
  },
];
