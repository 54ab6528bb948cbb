/**
 * Dashboard users: one merchant per user, a role, a password, a second factor, sessions and one-time links — each
 * in its own service, built here with the one set of dependencies they share.
 *
 * - team.ts: users created by the operator or invited by an owner, roles, removal (never of the last owner).
 * - links.ts: one-time set-up and password-reset links.
 * - signin.ts: the password step (throttled, audited) and a change of password.
 * - second-factor.ts: TOTP enrolment, the second step of sign-in, recovery codes, fresh codes for sensitive actions.
 * - sessions.ts: the sessions rows behind the browser's cookie (an hour idle, 12 hours in all).
 * - throttle.ts and notes.ts: sign-in throttling, and what a session sees once on its next page.
 */
import { SessionNotes } from './notes.ts';
import { OneTimeLinks } from './links.ts';
import type { UserDeps } from './records.ts';
import { SecondFactor } from './second-factor.ts';
import { Sessions } from './sessions.ts';
import { SignIn } from './signin.ts';
import { Team } from './team.ts';
import { SigninThrottle } from './throttle.ts';

export { PASSWORD_MIN } from './credentials.ts';
export { migrations } from './migrations/index.ts';
export { NOTE_PAGE_MAX } from './notes.ts';
export { isOwner, ownerEmails } from './owners.ts';
export { can, ROLES, type Permission } from './permissions.ts';
export { normalEmail, type ClientMeta, type SessionRow, type UserRow } from './records.ts';
export type { Team } from './team.ts';

export class Users {
  readonly team: Team;
  readonly links: OneTimeLinks;
  readonly signin: SignIn;
  readonly factors: SecondFactor;
  readonly sessions: Sessions;
  readonly throttle: SigninThrottle;
  /** What a session sees once on its next page (a new API key, a failed form's page). */
  readonly notes: SessionNotes;

  constructor(deps: UserDeps) {
    this.throttle = new SigninThrottle(deps.db, deps.clock);
    this.notes = new SessionNotes(deps.db, deps.clock, deps.secretKey);
    this.sessions = new Sessions(deps);
    this.links = new OneTimeLinks(deps, this.sessions, this.throttle);
    this.team = new Team(deps, this.links, this.sessions);
    this.signin = new SignIn(deps, this.sessions, this.throttle);
    this.factors = new SecondFactor(deps, this.sessions, this.throttle);
  }
}
