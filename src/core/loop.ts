/**
 * A worker loop: calls `tick` every `intervalMs`, or sooner when woken (after a commit that made work). One tick
 * at a time; `stop` waits for the running tick to finish. Errors are logged and the loop goes on.
 */
import type { Logger } from './log.ts';

export class Loop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private again = false;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly tick: () => Promise<unknown>,
    private readonly log: Logger,
  ) {}

  start(): this {
    this.schedule(0);
    return this;
  }

  /** Runs a tick soon (coalesced with one already queued or running). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), ms);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    this.timer = null;
    this.running = (async () => {
      try {
        await this.tick();
      } catch (err) {
        this.log.error({ err, worker: this.name }, 'worker tick failed');
      }
    })();
    await this.running;
    this.running = null;
    if (this.again) {
      this.again = false;
      this.schedule(0);
    } else {
      this.schedule(this.intervalMs);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
