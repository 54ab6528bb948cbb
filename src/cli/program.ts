/**
 * The `kasse` program: its command table and how a command line is read against it. Help lives here, once: every
 * command in the table answers `kasse COMMAND --help` (or `-h`) and `kasse help COMMAND` with its usage, and a
 * command group (`kasse help user`, `kasse user --help`) lists its commands, so a command added to the table has
 * its help without code of its own.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { KasseError } from '../../sdk/src/index.ts';
import { installedFamilies } from '../chains/families.ts';
import { ApiError } from '../core/errors.ts';
import { CommandError, UsageError } from '../core/flags.ts';
import { ConfigError } from '../config.ts';
import type { Command } from './context.ts';
import { developerCommands, type DeveloperCommand } from './commands/dev.ts';
import { DEFAULT_API_URL } from './commands/dev-remote.ts';

/** What the table knows of any command: its name (one or two words), usage line and flags. */
export interface CommandEntry {
  name: string;
  usage: string;
  flags: NonNullable<ParseArgsConfig['options']>;
}

export interface CommandTable {
  /** From any machine, against a Kasse test API by URL and key. */
  developer: readonly DeveloperCommand[];
  /** On the server, against its database. */
  operator: readonly Command[];
}

/** Where the program writes: stdout and stderr of the process, or a test's buffers. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

const REMOTE_NOTE = `--api-url URL (or KASSE_API_URL; default ${DEFAULT_API_URL}) and --api-key kasse_test_… (or KASSE_API_KEY)`;
const DATABASE_NOTE = "the server's database (DATABASE_URL, or the embedded one under KASSE_DATA_DIR)";

// Operator commands open the server's world (database, chains) when they run; their modules are loaded only when a
// command line needs them, so developer commands start quickly on a machine that has none of it.
async function operatorCommands(): Promise<Command[]> {
  const [{ merchantCommands }, { extraCommands, familyCommands }] = await Promise.all([
    import('./commands/merchants.ts'),
    import('./commands/index.ts'),
  ]);
  return [...merchantCommands, ...extraCommands, ...familyCommands(await installedFamilies())];
}

/** Every command of this installation: developer commands, then merchants', users', mail's and the chain families'. */
export async function commandTable(): Promise<CommandTable> {
  return { developer: developerCommands, operator: await operatorCommands() };
}

/** What a command line asks for. */
export type Reading =
  | { kind: 'overview'; exitCode: 0 | 2 }
  | { kind: 'help'; text: string; exitCode: 0 | 2 }
  | { kind: 'developer'; command: DeveloperCommand; flags: Record<string, unknown>; positionals: string[] }
  | { kind: 'operator'; command: Command; flags: Record<string, string | boolean | undefined>; positionals: string[] };

/**
 * Reads a command line (without `kasse`) against the table. Throws UsageError for an unknown command, and node's
 * ERR_PARSE_ARGS_* errors (with a pointer to the command's help) for an unknown option or a missing value.
 */
export function readCommandLine(argv: readonly string[], table: CommandTable): Reading {
  if (argv.length === 0) return { kind: 'overview', exitCode: 2 };
  if (argv[0] === 'help' || isHelp(argv[0]!)) {
    const words = argv.slice(1).filter((a) => !a.startsWith('-'));
    if (words.length === 0) return { kind: 'overview', exitCode: 0 };
    const command = all(table).find((c) => c.name === words.join(' '));
    if (command) return { kind: 'help', text: commandHelp(command, table), exitCode: 0 };
    const group = groupHelp(words.join(' '), table);
    if (group) return { kind: 'help', text: group, exitCode: 0 };
    throw new UsageError(`unknown command "${words.join(' ')}"; kasse help lists the commands`);
  }
  const command = all(table)
    .filter((c) => c.name.split(' ').every((w, i) => argv[i] === w))
    .sort((a, b) => b.name.length - a.name.length)[0];
  if (!command) {
    // A group's word alone (`kasse user`) or with flags only (`kasse user --help`): the group's commands.
    const group = argv.slice(1).every((a) => a.startsWith('-')) ? groupHelp(argv[0]!, table) : null;
    if (group) return { kind: 'help', text: group, exitCode: argv.slice(1).some(isHelp) ? 0 : 2 };
    throw new UsageError(`unknown command "${argv.join(' ')}"; kasse help lists the commands`);
  }
  const rest = argv.slice(command.name.split(' ').length);
  if (asksForHelp(rest)) return { kind: 'help', text: commandHelp(command, table), exitCode: 0 };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...rest], options: command.flags, allowPositionals: true, strict: true });
  } catch (err) {
    if (err instanceof Error) err.message = `${err.message}\nkasse help ${command.name} shows its usage`;
    throw err;
  }
  return table.developer.includes(command as DeveloperCommand)
    ? { kind: 'developer', command: command as DeveloperCommand, flags: parsed.values, positionals: parsed.positionals }
    : {
        kind: 'operator',
        command: command as Command,
        flags: parsed.values as Record<string, string | boolean | undefined>,
        positionals: parsed.positionals,
      };
}

const isHelp = (arg: string) => arg === '--help' || arg === '-h';

/** `--help` or `-h` among the flags (not after `--`, where every word is a positional). */
function asksForHelp(rest: readonly string[]): boolean {
  const end = rest.indexOf('--');
  return (end === -1 ? rest : rest.slice(0, end)).some(isHelp);
}

function all(table: CommandTable): CommandEntry[] {
  return [...table.developer, ...table.operator];
}

/** `kasse <usage>`, then its explanation (the usage's trailing parenthesis) on its own line. */
function usageLines(c: CommandEntry): { synopsis: string; about: string | null } {
  const m = /^(.*?)\s{2,}\((.*)\)$/.exec(c.usage);
  return m ? { synopsis: `kasse ${m[1]}`, about: m[2]! } : { synopsis: `kasse ${c.usage}`, about: null };
}

/** One command's help: usage, what it does, and where it runs. */
export function commandHelp(c: CommandEntry, table: CommandTable): string {
  const { synopsis, about } = usageLines(c);
  const developer = table.developer.some((d) => d.name === c.name);
  return [
    `usage: ${synopsis}`,
    ...(about ? ['', `  ${about}`] : []),
    '',
    developer
      ? `  Runs from any machine against a Kasse test API: ${REMOTE_NOTE}.`
      : `  Runs on the server, against ${DATABASE_NOTE}.`,
    ...(Object.hasOwn(c.flags, 'json') ? ['  --json prints exactly one JSON object on stdout.'] : []),
  ].join('\n');
}

/** The commands of a group (`user`, `mail`, `evm`, …), or null when no command starts with these words. */
function groupHelp(words: string, table: CommandTable): string | null {
  const members = all(table).filter((c) => c.name.startsWith(`${words} `));
  if (members.length === 0) return null;
  return [
    `usage: kasse ${words} <command> [flags]`,
    '',
    ...members.map((c) => `  kasse ${c.usage}`),
    '',
    `kasse help ${words} <command> shows one command's usage.`,
  ].join('\n');
}

/** Every command with its usage line, developer commands apart from operator commands. */
export function overview(table: CommandTable): string {
  return [
    'usage: kasse <command> [flags]',
    '',
    'Developer commands: from any machine, against a Kasse test API by URL and key (no database)',
    ...table.developer.map((c) => `  kasse ${c.usage}`),
    `  Both take ${REMOTE_NOTE}.`,
    '',
    `Operator commands: on the server, against ${DATABASE_NOTE}`,
    ...table.operator.map((c) => `  kasse ${c.usage}`),
    '',
    "kasse help COMMAND (or kasse COMMAND --help) shows one command's usage.",
  ].join('\n');
}

function print(value: unknown, json: boolean, output: Output): void {
  output.out(`${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), json ? undefined : 2)}\n`);
}

/**
 * Prints what an operator command answered and resolves to its exit code: 0; or, when it failed in part (a
 * `CommandError` with a report of what it did), the report as usual, the failure on stderr, and 1. Other failures are
 * thrown to `runCli`.
 */
export async function answer(result: Promise<unknown>, json: boolean, output: Output): Promise<number> {
  try {
    print(await result, json, output);
    return 0;
  } catch (err) {
    if (!(err instanceof CommandError) || err.report === undefined) throw err;
    print(err.report, json, output);
    output.err(`kasse: ${err.message}\n`);
    return 1;
  }
}

/** Runs one command line; resolves to the exit code (0 done, 1 failed, 2 called wrongly). */
export async function runCli(argv: readonly string[], output: Output): Promise<number> {
  try {
    const developerOnly = developerCommands.some((c) => c.name === argv[0]);
    const table: CommandTable = developerOnly ? { developer: developerCommands, operator: [] } : await commandTable();
    const reading = readCommandLine(argv, table);
    switch (reading.kind) {
      case 'overview':
        (reading.exitCode === 0 ? output.out : output.err)(`${overview(table)}\n`);
        return reading.exitCode;
      case 'help':
        (reading.exitCode === 0 ? output.out : output.err)(`${reading.text}\n`);
        return reading.exitCode;
      case 'developer':
        return await reading.command.run(reading.flags, reading.positionals);
      case 'operator': {
        const { command, flags, positionals } = reading;
        const { withKasse } = await import('./context.ts');
        return await answer(
          withKasse((kasse) => command.run(kasse, flags, positionals)),
          flags.json === true,
          output,
        );
      }
    }
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof ConfigError ||
      err instanceof ApiError ||
      err instanceof KasseError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      output.err(`kasse: ${(err as Error).message}\n`);
      return 2;
    }
    // A command that failed for a reason it can say in words (a node that does not answer) prints only that.
    output.err(
      `kasse: ${err instanceof CommandError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return 1;
  }
}
