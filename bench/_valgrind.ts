/**
 * User-space instructions per request, counted by valgrind's callgrind over a window of requests after a warm-up.
 * Unlike time on a shared machine the count varies little between runs, so it shows what a code change saves; it
 * leaves out the kernel (the loopback send is a large part of a small request), so it is not a throughput ratio.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild } from './_child.ts';

export function haveValgrind(): boolean {
  return spawnSync('valgrind', ['--version']).status === 0 && spawnSync('callgrind_control', ['--version']).status === 0;
}

/**
 * Starts `script` under callgrind, lets `drive` send `warmup` requests, then counts the instructions of the next
 * `window` requests (all threads, including the JIT and the garbage collector) and returns the count per request.
 */
export async function instructionsPerRequest<T>(script: string, env: Record<string, string>, drive: (info: T, n: number) => Promise<void>, warmup = 3000, window = 8000): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'kasse-vg-'));
  const callgrind = ['valgrind', '--tool=callgrind', '--dump-instr=no', '--collect-jumps=no', `--callgrind-out-file=${join(dir, 'out')}`, `--log-file=${join(dir, 'log')}`];
  const { info, child, stop } = await startChild<T>(script, env, callgrind);
  try {
    await drive(info, warmup);
    execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
    await drive(info, window);
    execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
    let total = 0;
    for (const f of readdirSync(dir).filter((f) => f.startsWith('out'))) {
      const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
      if (m) total += Number(m[1]);
    }
    if (total === 0) throw new Error('callgrind wrote no count');
    return Math.round(total / window);
  } finally {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
