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

export async function load(opts: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string | ((i: number) => string); connections?: number; seconds?: number }): Promise<LoadResult> {
  let i = 0;
  const bodyFn = opts.body;
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    connections: opts.connections ?? 64,
    duration: opts.seconds ?? 10,
    ...(typeof bodyFn === 'function'
      ? { requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: bodyFn(i++) }) }] }
      : bodyFn !== undefined
        ? { body: bodyFn }
        : {}),
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
 * Measures two targets in alternating rounds and keeps each one's median round, so a neighbour's load on a shared
 * machine falls on both sides instead of skewing the ratio.
 */
export async function compare(
  baseline: Parameters<typeof load>[0],
  subject: Parameters<typeof load>[0],
  opts: { rounds?: number; cpuUrl?: string } = {},
): Promise<{ baseline: LoadResult; subject: LoadResult; ratio: number; rounds: number; cpu_ratio: number | null }> {
  const rounds = opts.rounds ?? 3;
  const cpu = async (): Promise<number> => {
    if (!opts.cpuUrl) return 0;
    const u = (await (await fetch(opts.cpuUrl)).json()) as { user: number; system: number };
    return u.user + u.system;
  };
  const measure = async (target: Parameters<typeof load>[0]): Promise<LoadResult> => {
    const before = await cpu();
    const r = await load(target);
    const used = (await cpu()) - before;
    return opts.cpuUrl ? { ...r, server_cpu_us_per_request: Math.round((used / Math.max(1, r.total)) * 10) / 10 } : r;
  };
  const a: LoadResult[] = [];
  const b: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    a.push(await measure(baseline));
    b.push(await measure(subject));
  }
  const median = (xs: LoadResult[]) => [...xs].sort((x, y) => x.requests_per_sec - y.requests_per_sec)[Math.floor(xs.length / 2)]!;
  const ma = median(a);
  const mb = median(b);
  const cpuRatio = ma.server_cpu_us_per_request && mb.server_cpu_us_per_request ? Math.round((ma.server_cpu_us_per_request / mb.server_cpu_us_per_request) * 100) / 100 : null;
  return { baseline: ma, subject: mb, ratio: Math.round((mb.requests_per_sec / ma.requests_per_sec) * 100) / 100, rounds, cpu_ratio: cpuRatio };
}
