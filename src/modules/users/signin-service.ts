/** What the services of signing in (password, second factor, one-time links) share: their dependencies and clock. */
import type { Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { userTarget } from './entries.ts';
import type { UserDeps, UserRow } from './records.ts';
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

  /** Records in `tx` that `actor` did `action` to `user`'s account (an account-wide audit row). */
  protected recordOnUser(
    tx: Tx,
    user: Pick<UserRow, 'id' | 'merchant_id'>,
    actor: Actor,
    action: string,
  ): Promise<void> {
    return this.deps.audit.record(tx, { merchantId: user.merchant_id }, actor, action, userTarget(user.id));
  }
}
