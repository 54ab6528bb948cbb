/** Prometheus metrics (prom-client) in one registry per Kasse instance, so tests can run several side by side. */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'kasse_http_requests_total',
    help: 'HTTP requests answered, by listener, route and status',
    labelNames: ['listener', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'kasse_http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['listener'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
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
  readonly rpcCalls = new Counter({
    name: 'kasse_chain_rpc_calls_total',
    help: 'JSON-RPC calls made by chain code, by chain and outcome',
    labelNames: ['chain', 'outcome'] as const,
    registers: [this.registry],
  });

  constructor(defaults = false) {
    if (defaults) collectDefaultMetrics({ register: this.registry, prefix: 'kasse_' });
  }
}
