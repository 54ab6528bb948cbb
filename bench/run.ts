/**
 * `npm run bench [name…]`: runs each benchmark module (bench/<name>.ts exporting `run()`), prints its result and
 * keeps it as a new record, bench/results/<name>/<UTC date and time>.json, together with the machine it ran on (and
 * its load average before and after) and the date. A record is never overwritten: bench/README.md quotes figures by
 * linking to the record they were read from (test/unit/bench-figures.test.ts checks every link).
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { recordPath } from './_records.ts';

const ALL = readdirSync('bench')
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .map((f) => f.replace(/\.ts$/, ''));

function machine() {
  let os = '';
  try {
    os = execSync('. /etc/os-release && echo "$PRETTY_NAME"', { shell: '/bin/sh' }).toString().trim();
  } catch {
    // not Linux
  }
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    os,
  };
}

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ALL;
for (const name of names) {
  const mod = (await import(`./${name}.ts`)) as { run(): Promise<object> };
  process.stdout.write(`bench ${name}: running\n`);
  // The 1-minute load average before and after: other work on the same cores shows in absolute figures.
  const loadBefore = Math.round(loadavg()[0]! * 100) / 100;
  const result = await mod.run();
  const load_average = { start: loadBefore, end: Math.round(loadavg()[0]! * 100) / 100 };
  const date = new Date();
  const record = { benchmark: name, date: date.toISOString(), machine: { ...machine(), load_average }, result };
  const path = recordPath(name, date);
  mkdirSync(`bench/results/${name}`, { recursive: true });
  writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`, { flag: 'wx' });
  process.stdout.write(`${JSON.stringify(record, null, 2)}\nkept as ${path}\n`);
}
process.exit(0);
