/** Load generation with autocannon, in the benchmark process while the servers run in a child process. */
import autocannon from 'autocannon';
import { postgresCpu } from './_cpu.ts';

export interface LoadResult {
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  /** Answers by HTTP status (a keyed creation answered 200 was a replay, not a creation). */
  statuses: Record<string, number>;
  errors: number;
  total: number;
  /** Server CPU (user + system) per answered request, when the server reports its CPU time. */
  server_cpu_us_per_request?: number;
  /** PostgreSQL's CPU per answered request, when its postmaster is given. */
  postgres_cpu_us_per_request?: number;
}

export interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | ((i: number) => string);
  /** Sends `Idempotency-Key: <prefix>-<load>-<n>` with every request, a new key each time (as an integration does). */
  idempotencyKeyPrefix?: string;
  connections?: number;
  seconds?: number;
  /** Send this many requests (then the rate is their number over the time they took) instead of for `seconds`. */
  amount?: number;
  /** Headers of the `i`-th request, replacing `headers` (a key per merchant, say). */
  headersOf?: (i: number) => Record<string, string>;
}

/** Loads made so far: each load's keys are its own, so a later round of the same target sends no key twice. */
let loads = 0;

export async function load(opts: Target): Promise<LoadResult> {
  let i = 0;
  const bodyFn = opts.body;
  const keyed = opts.idempotencyKeyPrefix === undefined ? undefined : `${opts.idempotencyKeyPrefix}-${++loads}`;
  const setup = (req: Record<string, unknown>) => {
    const n = i++;
    const headers = opts.headersOf ? opts.headersOf(n) : (req.headers as Record<string, string>);
    return {
      ...req,
      ...(typeof bodyFn === 'function' ? { body: bodyFn(n) } : {}),
      ...(opts.headersOf ? { headers } : {}),
      ...(keyed !== undefined ? { headers: { ...headers, 'idempotency-key': `${keyed}-${n}` } } : {}),
    };
  };
  const started = performance.now();
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    connections: opts.connections ?? 64,
    ...(opts.amount ? { amount: opts.amount } : { duration: opts.seconds ?? 10 }),
    ...(typeof bodyFn === 'function' || keyed !== undefined || opts.headersOf
      ? { requests: [{ setupRequest: setup }] }
      : {}),
    ...(typeof bodyFn === 'string' ? { body: bodyFn } : {}),
  });
  const seconds = (performance.now() - started) / 1000;
  return {
    requests_per_sec: Math.round(opts.amount ? result.requests.total / seconds : result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    statuses: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count])),
    errors: result.errors,
    total: result.requests.total,
  };
}

/**
 * Measures a baseline and one or more subjects in alternating rounds and keeps each one's median round, so a
 * neighbour's load on a shared machine falls on every side instead of skewing the ratios.
 */
export async function compareAll(
  baseline: Target,
  subjects: Target[],
  opts: { rounds?: number; cpuUrl?: string; postmaster?: number } = {},
): Promise<{
  baseline: LoadResult;
  subjects: Array<{ result: LoadResult; ratio: number; cpu_ratio: number | null }>;
  rounds: number;
}> {
  const rounds = opts.rounds ?? 3;
  const cpu = async (): Promise<number> => {
    if (!opts.cpuUrl) return 0;
    const u = (await (await fetch(opts.cpuUrl)).json()) as { user: number; system: number };
    return u.user + u.system;
  };
  const pgCpu = () => (opts.postmaster ? postgresCpu(opts.postmaster) * 1e6 : 0);
  const perRequest = (us: number, r: LoadResult) => Math.round((us / Math.max(1, r.total)) * 10) / 10;
  const measure = async (target: Target): Promise<LoadResult> => {
    const before = { server: await cpu(), postgres: pgCpu() };
    const r = await load(target);
    const used = { server: (await cpu()) - before.server, postgres: pgCpu() - before.postgres };
    return {
      ...r,
      ...(opts.cpuUrl ? { server_cpu_us_per_request: perRequest(used.server, r) } : {}),
      ...(opts.postmaster ? { postgres_cpu_us_per_request: perRequest(used.postgres, r) } : {}),
    };
  };
  const runs: LoadResult[][] = [[], ...subjects.map(() => [])];
  for (let i = 0; i < rounds; i++) {
    for (const [j, target] of [baseline, ...subjects].entries()) runs[j]!.push(await measure(target));
  }
  const median = (xs: LoadResult[]) =>
    [...xs].sort((x, y) => x.requests_per_sec - y.requests_per_sec)[Math.floor(xs.length / 2)]!;
  const base = median(runs[0]!);
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return {
    baseline: base,
    subjects: runs.slice(1).map((xs) => {
      const m = median(xs);
      const cpuRatio =
        base.server_cpu_us_per_request && m.server_cpu_us_per_request
          ? round2(base.server_cpu_us_per_request / m.server_cpu_us_per_request)
          : null;
      return { result: m, ratio: round2(m.requests_per_sec / base.requests_per_sec), cpu_ratio: cpuRatio };
    }),
    rounds,
  };
}

/** `compareAll` with one subject. */
export async function compare(
  baseline: Target,
  subject: Target,
  opts: { rounds?: number; cpuUrl?: string; postmaster?: number } = {},
): Promise<{ baseline: LoadResult; subject: LoadResult; ratio: number; rounds: number; cpu_ratio: number | null }> {
  const r = await compareAll(baseline, [subject], opts);
  const s = r.subjects[0]!;
  return { baseline: r.baseline, subject: s.result, ratio: s.ratio, rounds: r.rounds, cpu_ratio: s.cpu_ratio };
}
