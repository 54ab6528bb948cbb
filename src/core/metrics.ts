/** Prometheus metrics (prom-client) in one registry per Kasse instance, so tests can run several side by side. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Series {
  labels: { listener: string; route: string; status: string };
  /** Non-cumulative counts per bucket; the last slot is above the largest bound. */
  buckets: number[];
  sum: number;
}

/**
 * HTTP request count and duration by listener, route and status. Recording runs on every request, so a series is
 * a plain array found by one map lookup; prom-client's own histogram hashes a label object and converts a bucket
 * bound to a property name on each observation, which costs more than the rest of a cached API request's
 * bookkeeping. The series are exposed through the registry as a histogram and a counter, in the usual formats.
 */
export class HttpMetrics {
  private readonly series: Series[] = [];

  constructor(registry: Registry) {
    type Value = { metricName?: string; labels: Record<string, string>; value: number };
    // The shape prom-client's registry reads from a metric (the same as its own metrics produce).
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => Value[]) =>
      ({ name, help, type, get: async () => ({ name, help, type, values: values(), aggregator: 'sum' }) }) as never;
    registry.registerMetric(
      metric('kasse_http_requests_total', 'HTTP requests answered, by listener, route and status', 'counter', () =>
        this.series.map((s) => ({ labels: s.labels, value: s.buckets.reduce((a, b) => a + b, 0) })),
      ),
    );
    registry.registerMetric(
      metric(
        'kasse_http_request_duration_seconds',
        'HTTP request duration, by listener, route and status',
        'histogram',
        () =>
          this.series.flatMap((s) => {
            let cumulative = 0;
            const buckets = s.buckets.map((n, i) => {
              cumulative += n;
              const le = i < DURATION_BUCKETS.length ? String(DURATION_BUCKETS[i]) : '+Inf';
              return {
                metricName: 'kasse_http_request_duration_seconds_bucket',
                labels: { ...s.labels, le },
                value: cumulative,
              };
            });
            return [
              ...buckets,
              { metricName: 'kasse_http_request_duration_seconds_sum', labels: s.labels, value: s.sum },
              { metricName: 'kasse_http_request_duration_seconds_count', labels: s.labels, value: cumulative },
            ];
          }),
      ),
    );
  }

  /** A recorder for one listener: series are found by route (Fastify's own string) and then status, no key built. */
  recorder(listener: string): (route: string, status: number, seconds: number) => void {
    const byRoute = new Map<string, Map<number, Series>>();
    return (route, status, seconds) => {
      let byStatus = byRoute.get(route);
      if (!byStatus) byRoute.set(route, (byStatus = new Map()));
      let s = byStatus.get(status);
      if (!s) {
        s = {
          labels: { listener, route, status: String(status) },
          buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0),
          sum: 0,
        };
        byStatus.set(status, s);
        this.series.push(s);
      }
      let i = 0;
      while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
      s.buckets[i]!++;
      s.sum += seconds;
    };
  }
}

export class Metrics {
  readonly registry = new Registry();
  readonly http = new HttpMetrics(this.registry);
  readonly webhookDeliveries = new Counter({
    name: 'kasse_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly chainBlocks = new Counter({
    name: 'kasse_chain_blocks_scanned_total',
    help: 'Blocks scanned by chain watchers',
    labelNames: ['chain'] as const,
    registers: [this.registry],
  });
  readonly transferSteps = new Counter({
    name: 'kasse_chain_transfer_steps_total',
    help: 'Steps of outgoing hot-wallet transfers, by chain and outcome (progress, wait, done, retry)',
    labelNames: ['chain', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly rpcCalls = new Counter({
    name: 'kasse_chain_rpc_calls_total',
    help: 'JSON-RPC calls made by chain code, by chain and outcome',
    labelNames: ['chain', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly watchPath = new Gauge({
    name: 'kasse_chain_watch_path',
    help: 'How each chain watcher learns of new blocks: 1 on the live path (push: woken by its node; poll: interval only)',
    labelNames: ['chain', 'mode', 'path'] as const,
    registers: [this.registry],
  });

  constructor(defaults = false) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: 'kasse_' });
  }
}
