/** CPU time of benchmark processes, read from /proc (Linux). */
import { readFileSync } from 'node:fs';
import pg from 'pg';

/** CPU seconds (user + system) a process has used, with its reaped children's when asked (PostgreSQL backends). */
export function cpuSeconds(pid: number, withChildren = false): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0)) / 100;
}

/** The postmaster's pid of the PostgreSQL server at `url` (the parent of a backend). */
export async function postmasterOf(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return Number(readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  } finally {
    await c.end();
  }
}

/** CPU seconds of the whole PostgreSQL server: the postmaster, its live children and those already gone. */
export function postgresCpu(postmaster: number): number {
  let total = cpuSeconds(postmaster, true);
  for (const c of readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number)) {
    try {
      total += cpuSeconds(c);
    } catch {
      // exited meanwhile; counted in the postmaster's children time
    }
  }
  return total;
}
