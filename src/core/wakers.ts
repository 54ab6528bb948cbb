/**
 * The callbacks a module runs when it made worker work due (a commit that queued deliveries, a changed payment a
 * schedule waits for). Workers register with `add` and get back their removal; `wake` runs every one.
 */
export class Wakers {
  private readonly callbacks = new Set<() => void>();

  add(waker: () => void): () => void {
    this.callbacks.add(waker);
    return () => this.callbacks.delete(waker);
  }

  wake(): void {
    for (const w of this.callbacks) w();
  }
}
