/**
 * The team of a merchant: users created by the operator (`kasse user create`) or invited by an owner, either way with
 * a set-up link (links.ts) — emailed with an invitation, through the email outbox in the same transaction as the
 * user. Roles change and users are removed here; the last owner of a merchant can be neither removed nor demoted
 * (checked with every user of the merchant locked).
 */
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { textLength } from '../../core/text.ts';
import { withTx, type DbOrTx, type Tx, isUniqueViolation } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { renderEmail } from '../email/index.ts';
import { approvalsRequired } from '../merchants/index.ts';
import type { OneTimeLinks } from './links.ts';
import { ROLES, type Role } from './permissions.ts';
import { userTarget } from './entries.ts';
import {
  EMAIL,
  merchantUsers,
  normalEmail,
  toUserRecord,
  type UserDeps,
  type UserRecord,
  type UserRow,
} from './records.ts';
import type { Sessions } from './sessions.ts';

export class Team {
  constructor(
    private readonly deps: UserDeps,
    private readonly links: OneTimeLinks,
    private readonly sessions: Sessions,
  ) {}

  private now(): Date {
    return this.deps.clock.now();
  }

  /**
   * Creates a user with a set-up link. `invite` (an owner on the Team page) also emails the link; the operator's CLI
   * prints it instead. 400 for a bad email or role, or an email another user already has.
   */
  async create(input: {
    merchantId: string;
    email: string;
    role: string;
    actor: Actor;
    invite: boolean;
  }): Promise<{ user: UserRecord; setup_url: string; expires_at: string }> {
    const email = normalEmail(input.email);
    if (textLength(email) > 254 || !EMAIL.test(email)) throw invalid('Enter an email address.', 'email');
    if (!(ROLES as readonly string[]).includes(input.role))
      throw invalid('role must be owner, member or viewer', 'role');
    const merchant = await this.deps.merchants.get(input.merchantId);
    const now = this.now();
    try {
      return await withTx(this.deps.db, async (tx) => {
        const user = await tx
          .insertInto('users')
          .values({
            id: newId('usr'),
            merchant_id: merchant.id,
            email,
            role: input.role as Role,
            invited_by: input.actor.type === 'user' ? input.actor.id : null,
            created_at: now,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        const link = await this.links.issueToken(tx, user.id, 'setup');
        if (input.invite) await this.sendInvite(tx, user, merchant.name, link.url, input.actor.label ?? null);
        await this.deps.audit.record(
          tx,
          { merchantId: merchant.id },
          input.actor,
          input.invite ? 'user.invite' : 'user.create',
          userTarget(user.id),
          { email, role: user.role },
        );
        return { user: toUserRecord(user), setup_url: link.url, expires_at: link.expiresAt.toISOString() };
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw invalid('A Kasse user with this email already exists.', 'email');
      throw err;
    }
  }

  /** A new set-up link for an invited user, emailed again (earlier links stop working). */
  async resendInvite(merchantId: string, userId: string, actor: Actor): Promise<void> {
    const merchant = await this.deps.merchants.get(merchantId);
    await withTx(this.deps.db, async (tx) => {
      const user = await this.lockUser(tx, merchantId, userId);
      if (user.password_hash !== null) throw invalidState('This user has already set up their account.');
      const link = await this.links.issueToken(tx, user.id, 'setup');
      await this.sendInvite(tx, user, merchant.name, link.url, actor.label ?? null);
      await this.deps.audit.record(tx, { merchantId }, actor, 'user.invite_resend', userTarget(user.id), {
        email: user.email,
      });
    });
  }

  async list(merchantId: string): Promise<UserRecord[]> {
    const rows = await merchantUsers(this.deps.db, merchantId).selectAll().orderBy('id').execute();
    return rows.map(toUserRecord);
  }

  /** Users of every merchant, or of one (operator). */
  async listAll(merchantId?: string): Promise<UserRecord[]> {
    let q = this.deps.db.selectFrom('users').selectAll().where('removed_at', 'is', null);
    if (merchantId) q = q.where('merchant_id', '=', merchantId);
    return (await q.orderBy('id').execute()).map(toUserRecord);
  }

  /** How many owners the merchant has (in `db`, the caller's transaction when it holds one). */
  async ownerCount(merchantId: string, db: DbOrTx = this.deps.db): Promise<number> {
    const r = await merchantUsers(db, merchantId)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Changes a user's role. 422 when it would leave the merchant without an owner or below its approval quorum. */
  async changeRole(merchantId: string, userId: string, role: string, actor: Actor): Promise<UserRecord> {
    if (!(ROLES as readonly string[]).includes(role)) throw invalid('role must be owner, member or viewer', 'role');
    return withTx(this.deps.db, async (tx) => {
      const user = await this.lockUser(tx, merchantId, userId);
      if (user.role === role) return toUserRecord(user);
      if (user.role === 'owner') await this.assertOwnersAfter(tx, merchantId, 'demote');
      const updated = await tx
        .updateTable('users')
        .set({ role: role as Role })
        .where('id', '=', user.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await this.deps.audit.record(tx, { merchantId }, actor, 'user.role_change', userTarget(user.id), {
        email: user.email,
        from: user.role,
        to: role,
      });
      return toUserRecord(updated);
    });
  }

  /** Removes a user: their sessions end at once. 422 for the last owner. */
  async remove(merchantId: string, userId: string, actor: Actor): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const user = await this.lockUser(tx, merchantId, userId);
      if (user.role === 'owner') await this.assertOwnersAfter(tx, merchantId, 'remove');
      await tx.updateTable('users').set({ removed_at: this.now() }).where('id', '=', user.id).execute();
      await this.links.endLinks(tx, user.id);
      await this.sessions.revokeAll(tx, user.id);
      await this.deps.audit.record(tx, { merchantId }, actor, 'user.remove', userTarget(user.id), {
        email: user.email,
        role: user.role,
      });
    });
  }

  /** Locks every user of the merchant (so concurrent role changes serialize) and returns the one asked for. */
  private async lockUser(tx: Tx, merchantId: string, userId: string): Promise<UserRow> {
    const all = await merchantUsers(tx, merchantId).selectAll().orderBy('id').forUpdate().execute();
    const user = all.find((u) => u.id === userId);
    if (!user) throw notFound('user');
    return user;
  }

  /** One owner fewer must leave at least one owner, and at least the merchant's fixed approval quorum. */
  private async assertOwnersAfter(tx: Tx, merchantId: string, what: 'demote' | 'remove'): Promise<void> {
    const owners = (await this.ownerCount(merchantId, tx)) - 1;
    if (owners < 1)
      throw invalidState(
        `The last owner cannot be ${what === 'remove' ? 'removed' : 'given another role'}. Make another user an owner first.`,
      );
    const quorum = await approvalsRequired(tx, merchantId);
    if (quorum !== null && owners < quorum) {
      throw invalidState(
        `Disbursements need ${quorum} owner approvals; lower the quorum in Settings before leaving fewer owners.`,
      );
    }
  }

  private async sendInvite(
    tx: Tx,
    user: UserRow,
    merchantName: string,
    url: string,
    inviter: string | null,
  ): Promise<void> {
    const mail = renderEmail({
      heading: `Join ${merchantName} on Kasse`,
      paragraphs: [
        `${inviter ?? 'The owner of the account'} invited you to the ${merchantName} dashboard on Kasse as ${user.role === 'owner' ? 'an owner' : `a ${user.role}`}.`,
        'Open the link to choose your password. It works once, for 24 hours.',
      ],
      action: { label: 'Set up your account', url },
      footer: ['If you did not expect this invitation, ignore this email; nothing happens until the link is used.'],
    });
    await this.deps.email.enqueue(tx, {
      merchantId: user.merchant_id,
      mode: null,
      kind: 'user.invite',
      to: user.email,
      subject: `You are invited to ${merchantName} on Kasse`,
      text: mail.text,
      html: mail.html,
      sensitive: true,
    });
  }
}
