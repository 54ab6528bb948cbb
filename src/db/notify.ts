/**
 * LISTEN/NOTIFY across processes: one dedicated connection per process dispatches notifications to handlers.
 * Used to drop cached API keys everywhere when one is revoked and to wake workers when new work is committed.
 * A lost connection is re-established; handlers are told (`onReconnect`) so they can resync what they cache.
 */
import pg from 'pg';

type Handler = (payload: string) => void;

export class Notifier {
  private client: pg.Client | null = null;
  private handlers = new Map<string, Set<Handler>>();
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  onReconnect: () => void = () => {};

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      for (const h of this.handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    client.on('error', () => this.scheduleReconnect());
    client.on('end', () => this.scheduleReconnect());
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    this.client = null;
    this.reconnectTimer = setTimeout(async () => {
      this.reconnectTimer = null;
      try {
        await this.start();
        this.onReconnect();
      } catch {
        this.scheduleReconnect();
      }
    }, 1000);
    this.reconnectTimer.unref();
  }

  async listen(channel: string, handler: Handler): Promise<void> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel ${channel}`);
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      if (this.client) await this.client.query(`LISTEN ${channel}`);
    }
    set.add(handler);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    await this.client?.end().catch(() => {});
    this.client = null;
  }
}
