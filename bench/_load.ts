/** Load generation with autocannon, in the benchmark process while the servers run in a child process. */
import autocannon from 'autocannon';

export interface LoadResult {
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  total: number;
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
