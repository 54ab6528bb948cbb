/** Load generation with autocannon, in the benchmark process while the servers run in a child process. */
import autocannon from 'autocannon';

export interface LoadResult {
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  total: number;
  /** Server CPU (user + system) per answered request, when the server reports its CPU time. */
  server_cpu_us_per_request?: number;
}

export interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | ((i: number) => string);
  /** Sends `Idempotency-Key: <prefix>-<n>` with every request, a new key each time (as an integration does). */
  idempotencyKeyPrefix?: string;
  connections?: number;
  seconds?: number;
}

export async function load(opts: Target): Promise<LoadResult> {
  let i = 0;
  const bodyFn = opts.body;
  const keyed = opts.idempotencyKeyPrefix;
  const setup = (req: Record<string, unknown>) => {
    const n = i++;
    return {
      ...req,
      ...(typeof bodyFn === 'function' ? { body: bodyFn(n) } : {}),
      ...(keyed !== undefined ? { headers: { ...(req.headers as Record<string, string>), 'idempotency-key': `${keyed}-${n}` } } : {}),
    };
  };
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    connections: opts.connections ?? 64,
    duration: opts.seconds ?? 10,
    ...(typeof bodyFn === 'function' || keyed !== undefined ? { requests: [{ setupRequest: setup }] } : {}),
    ...(typeof bodyFn === 'string' ? { body: bodyFn } : {}),
  });
  return {
    requests_per_sec: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
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
  opts: { rounds?: number; cpuUrl?: string } = {},
): Promise<{ baseline: LoadResult; subjects: Array<{ result: LoadResult; ratio: number; cpu_ratio: number | null }>; rounds: number }> {
  const rounds = opts.rounds ?? 3;
  const cpu = async (): Promise<number> => {
    if (!opts.cpuUrl) return 0;
    const u = (await (await fetch(opts.cpuUrl)).json()) as { user: number; system: number };
    return u.user + u.system;
  };
  const measure = async (target: Target): Promise<LoadResult> => {
    const before = await cpu();
    const r = await load(target);
    const used = (await cpu()) - before;
    return opts.cpuUrl ? { ...r, server_cpu_us_per_request: Math.round((used / Math.max(1, r.total)) * 10) / 10 } : r;
  };
  const runs: LoadResult[][] = [[], ...subjects.map(() => [])];
  for (let i = 0; i < rounds; i++) {
    for (const [j, target] of [baseline, ...subjects].entries()) runs[j]!.push(await measure(target));
  }
  const median = (xs: LoadResult[]) => [...xs].sort((x, y) => x.requests_per_sec - y.requests_per_sec)[Math.floor(xs.length / 2)]!;
  const base = median(runs[0]!);
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return {
    baseline: base,
    subjects: runs.slice(1).map((xs) => {
      const m = median(xs);
      const cpuRatio = base.server_cpu_us_per_request && m.server_cpu_us_per_request ? round2(base.server_cpu_us_per_request / m.server_cpu_us_per_request) : null;
      return { result: m, ratio: round2(m.requests_per_sec / base.requests_per_sec), cpu_ratio: cpuRatio };
    }),
    rounds,
  };
}

/** `compareAll` with one subject. */
export async function compare(
  baseline: Target,
  subject: Target,
  opts: { rounds?: number; cpuUrl?: string } = {},
): Promise<{ baseline: LoadResult; subject: LoadResult; ratio: number; rounds: number; cpu_ratio: number | null }> {
  const r = await compareAll(baseline, [subject], opts);
  const s = r.subjects[0]!;
  return { baseline: r.baseline, subject: s.result, ratio: s.ratio, rounds: r.rounds, cpu_ratio: s.cpu_ratio };
}
