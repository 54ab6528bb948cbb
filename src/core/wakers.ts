/**
 * A module whose workers wait for it: workers register with `onWork`, and the module calls `nudge` when it made
 * work due (a commit that queued deliveries, a changed payment a schedule waits for).
 */
export class WorkNotifier {
  private readonly wakers = new Set<() => void>();

  /** Registers a callback run whenever work may be due; returns its removal. */
  onWork(waker: () => void): () => void {
    this.wakers.add(waker);
    return () => this.wakers.delete(waker);
  }

  /** Tells registered workers that work may be due. */
  nudge(): void {
    for (const w of this.wakers) w();
  }
}
