/**
 * `kasse` — operator commands against the same database as the server, whether or not it runs, and developer
 * commands (`listen`, `trigger`) that talk to a Kasse API by URL and test key from any machine. Every command
 * answers `--help`; `kasse help` lists them all (program.ts).
 * With --json a command prints exactly one JSON object on stdout and nothing else; diagnostics go to stderr.
 */
import { runCli } from './program.ts';

runCli(process.argv.slice(2), { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) }).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`kasse: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
