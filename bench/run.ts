/**
 * `npm run bench [name…]`: runs each benchmark module (bench/<name>.ts exporting `run()`), prints its result and
 * records it under bench/results/<name>.json together with the machine it ran on (and its load average before and
 * after), and the date.
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { execSync } from 'node:child_process';

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
mkdirSync('bench/results', { recursive: true });
for (const name of names) {
  const mod = (await import(`./${name}.ts`)) as { run(): Promise<object> };
  process.stdout.write(`bench ${name}: running\n`);
  // The 1-minute load average before and after: other work on the same cores shows in absolute figures.
  const loadBefore = Math.round(loadavg()[0]! * 100) / 100;
  const result = await mod.run();
  const load_average = { start: loadBefore, end: Math.round(loadavg()[0]! * 100) / 100 };
  const record = { benchmark: name, date: new Date().toISOString(), machine: { ...machine(), load_average }, result };
  writeFileSync(`bench/results/${name}.json`, `${JSON.stringify(record, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
}
process.exit(0);
