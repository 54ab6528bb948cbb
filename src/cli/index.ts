/**
 * `kasse` — operator commands against the same database as the server, whether or not it runs, and developer
 * commands (`listen`, `trigger`) that talk to a Kasse API by URL and test key from any machine.
 * With --json a command prints exactly one JSON object on stdout and nothing else; diagnostics go to stderr.
 */
import { parseArgs } from 'node:util';
import { KasseError } from '../../sdk/src/index.ts';
import { installedFamilies } from '../chains/families.ts';
import { ApiError } from '../core/errors.ts';
import { CommandError, UsageError } from '../core/flags.ts';
import { ConfigError } from '../config.ts';
import type { Command } from './context.ts';
import { developerCommands } from './commands/dev.ts';
import { DEFAULT_API_URL } from './commands/dev-remote.ts';

// Operator commands open the server's world (database, chains); loaded only when needed, so developer commands
// start quickly on a machine that has none of it.
let commands: Command[] = [];
async function loadOperatorCommands(): Promise<void> {
  const [{ merchantCommands }, { extraCommands, familyCommands }] = await Promise.all([import('./commands/merchants.ts'), import('./commands/index.ts')]);
  commands = [...merchantCommands, ...extraCommands, ...familyCommands(await installedFamilies())];
}

function help(): string {
  return [
    'usage: kasse <command> [flags]',
    '',
    'Developer commands: from any machine, against a Kasse test API by URL and key (no database)',
    ...developerCommands.map((c) => `  kasse ${c.usage}`),
    `  Both take --api-url URL (or KASSE_API_URL; default ${DEFAULT_API_URL}) and --api-key kasse_test_… (or KASSE_API_KEY).`,
    '',
    "Operator commands: on the server, against its database (DATABASE_URL, or the embedded one under KASSE_DATA_DIR)",
    ...commands.map((c) => `  kasse ${c.usage}`),
  ].join('\n');
}

function print(value: unknown, json: boolean): void {
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), json ? undefined : 2);
  process.stdout.write(text + '\n');
}

async function run(argv: string[]): Promise<number> {
  const dev = developerCommands.find((c) => argv[0] === c.name);
  if (dev) {
    const { values, positionals } = parseArgs({ args: argv.slice(1), options: dev.flags, allowPositionals: true, strict: true });
    return dev.run(values, positionals);
  }
  await loadOperatorCommands();
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(help() + '\n');
    return argv.length === 0 ? 2 : 0;
  }
  const cmd = commands.find((c) => {
    const words = c.name.split(' ');
    return words.every((w, i) => argv[i] === w);
  });
  if (!cmd) {
    process.stderr.write(`kasse: unknown command "${argv.join(' ')}"\n\n${help()}\n`);
    return 2;
  }
  const rest = argv.slice(cmd.name.split(' ').length);
  const { values, positionals } = parseArgs({ args: rest, options: cmd.flags, allowPositionals: true, strict: true });
  const { withKasse } = await import('./context.ts');
  const result = await withKasse((kasse) => cmd.run(kasse, values, positionals));
  print(result, values.json === true);
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError || err instanceof ConfigError || err instanceof ApiError || err instanceof KasseError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`kasse: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`kasse: ${err instanceof CommandError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
