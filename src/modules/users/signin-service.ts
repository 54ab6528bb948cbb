/** What the services of signing in (password, second factor, one-time links) share: their dependencies and clock. */
import type { UserDeps } from './records.ts';
import type { Sessions } from './sessions.ts';
import type { SigninThrottle } from './throttle.ts';

export abstract class SigninService {
  constructor(
    protected readonly deps: UserDeps,
    protected readonly sessions: Sessions,
    protected readonly throttle: SigninThrottle,
  ) {}

  protected now(): Date {
    return this.deps.clock.now();
  }
}
