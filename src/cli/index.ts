/**
 * `kasse` — operator commands against the same database as the server, whether or not it runs.
 * With --json a command prints exactly one JSON object on stdout and nothing else; diagnostics go to stderr.
 */
import { parseArgs } from 'node:util';
import { installedFamilies } from '../chains/families.ts';
import { ApiError } from '../core/errors.ts';
import { ConfigError } from '../config.ts';
import { merchantCommands } from './commands/merchants.ts';
import { UsageError, withKasse, type Command } from './context.ts';
import { extraCommands, familyCommands } from './commands/index.ts';

const commands: Command[] = [...merchantCommands, ...extraCommands, ...familyCommands(await installedFamilies())];

function help(): string {
  return ['usage: kasse <command> [flags]', '', ...commands.map((c) => `  kasse ${c.usage}`)].join('\n');
}

function print(value: unknown, json: boolean): void {
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), json ? undefined : 2);
  process.stdout.write(text + '\n');
}

async function run(argv: string[]): Promise<number> {
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
  const result = await withKasse((kasse) => cmd.run(kasse, values, positionals));
  print(result, values.json === true);
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError || err instanceof ConfigError || err instanceof ApiError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`kasse: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`kasse: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
