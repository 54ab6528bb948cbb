/**
 * Live status for payers: the change feed behind `GET /p/<id>/events` (the payment itself is read through
 * `payments.reader`, by its unguessable id, which is the payer's capability).
 *
 * The feed is driven by PostgreSQL alone: one timer per process polls a fingerprint of every watched payment (status,
 * attempt statuses, deposit statuses and confirmations) in a single query every 100 ms while someone watches (so the
 * page shows a status within about 250 ms of its event, bench/results/detection/), and wakes the streams of
 * the payments whose fingerprint moved. Nothing but the list of open connections lives in memory, so a restart loses
 * nothing: browsers reconnect and are sent the current state.
 */
import type { Kasse } from '../kasse.ts';

/** How often watched payments are read from PostgreSQL (one query for all of them; none while nobody watches). */
export const POLL_INTERVAL_MS = 100;

type Listener = () => void;

/** One poller per process over every payment someone is watching. */
export class PaymentWatch {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly last = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly kasse: Kasse,
    private readonly intervalMs = POLL_INTERVAL_MS,
  ) {}

  /**
   * Calls `listener` whenever the payment's stored state may have changed (and once after the first poll); returns
   * the unsubscribe function. Subscribe before reading the state to show, so no change falls between the two.
   */
  subscribe(id: string, listener: Listener): () => void {
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    if (!this.timer) {
      this.timer = setInterval(() => void this.poll(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      set.delete(listener);
      if (set.size === 0) {
        this.listeners.delete(id);
        this.last.delete(id);
      }
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.listeners.size === 0) return;
    this.polling = true;
    try {
      const ids = [...this.listeners.keys()];
      for (const [id, fp] of await this.kasse.payments.reader.fingerprints(ids)) {
        const before = this.last.get(id);
        this.last.set(id, fp);
        // The first reading notifies too: a change between a stream's own first read and this poll is not missed.
        if (before !== fp) for (const l of this.listeners.get(id) ?? []) l();
      }
    } catch (err) {
      this.kasse.log.warn({ err }, 'checkout status poll failed');
    } finally {
      this.polling = false;
    }
  }
}
