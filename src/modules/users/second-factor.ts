/**
 * The second factor: TOTP enrolment (owners must enrol before anything else), the sign-in step with a TOTP or a
 * single-use recovery code, a fresh code before a sensitive action, new recovery codes, and the operator's reset for
 * a lost device. Codes are throttled per account and every failure is in the audit log.
 */
import { MINUTE } from '../../core/clock.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { decryptSecret, encryptSecret } from '../../core/secrets.ts';
import { withTx, type Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import {
  looksLikeRecoveryCode,
  newRecoveryCodes,
  newTotp,
  recoveryCodeHash,
  totpStep,
  totpUri,
} from './credentials.ts';
import { userActor } from './entries.ts';
import {
  normalEmail,
  toUserRecord,
  type ClientMeta,
  type SessionRow,
  type UserRecord,
  type UserRow,
} from './records.ts';
import { THROTTLE_LIMITS } from './throttle.ts';
import { SigninService } from './signin-service.ts';

/** A second-factor check before a sensitive action counts for this long. */
export const FRESH_SECOND_FACTOR_MS = 5 * MINUTE;

export class SecondFactor extends SigninService {
  /**
   * The second step: a TOTP code or one of the recovery codes (each works once). 429 while throttled, 400 (param
   * `code`) for a wrong code. The session becomes full.
   */
  async secondFactor(
    session: SessionRow,
    user: UserRow,
    code: string,
    meta: ClientMeta,
  ): Promise<{ recoveryCodesLeft: number | null }> {
    if (session.stage !== 'password') throw invalidState('No second factor is due for this session.');
    const recovery = looksLikeRecoveryCode(code);
    const usedRecovery = await this.verifySecondFactor(user, code, meta, 'signin.failed');
    return withTx(this.deps.db, async (tx) => {
      await tx
        .updateTable('sessions')
        .set({ stage: 'full', second_factor_at: this.now() })
        .where('id', '=', session.id)
        .execute();
      await this.sessions.signedIn(tx, user, meta, recovery ? 'recovery_code' : 'totp');
      if (!usedRecovery) return { recoveryCodesLeft: null };
      const left = await tx
        .selectFrom('user_recovery_codes')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('user_id', '=', user.id)
        .where('used_at', 'is', null)
        .executeTakeFirstOrThrow();
      return { recoveryCodesLeft: Number(left.n) };
    });
  }

  /**
   * A fresh second-factor check before a sensitive action (revealing the webhook secret, approving a disbursement):
   * the user's current TOTP code. Throttled like sign-in; a failure is in the audit log. Marks the session.
   */
  async confirmSecondFactor(
    session: SessionRow,
    user: UserRow,
    code: string,
    meta: ClientMeta,
    purpose: string,
  ): Promise<void> {
    if (user.totp_enabled_at === null)
      throw invalidState('Set up two-factor authentication on your Account page first.');
    if (looksLikeRecoveryCode(code)) throw invalid('Enter the 6-digit code from your authenticator app.', 'code');
    await this.verifySecondFactor(user, code, meta, 'second_factor.failed', purpose);
    await this.deps.db
      .updateTable('sessions')
      .set({ second_factor_at: this.now() })
      .where('id', '=', session.id)
      .execute();
  }

  /** Whether the session gave its second factor recently enough for a sensitive action. */
  hasFreshSecondFactor(session: SessionRow): boolean {
    return (
      session.second_factor_at !== null &&
      this.now().getTime() - session.second_factor_at.getTime() <= FRESH_SECOND_FACTOR_MS
    );
  }

  /** Checks a TOTP or recovery code; true when a recovery code was used up. Throttled; failures audited. */
  private async verifySecondFactor(
    user: UserRow,
    code: string,
    meta: ClientMeta,
    failAction: string,
    purpose?: string,
  ): Promise<boolean> {
    const keys = [{ key: `factor:${user.id}`, limit: THROTTLE_LIMITS.secondFactor }];
    const actor = userActor(user, meta.ip);
    try {
      await this.throttle.check(keys);
    } catch (err) {
      await this.deps.audit.record(this.deps.db, { merchantId: user.merchant_id }, actor, failAction, null, {
        reason: 'throttled',
        ...(purpose ? { purpose } : {}),
      });
      throw err;
    }
    const fresh = await this.deps.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    let ok = false;
    let recovery = false;
    if (looksLikeRecoveryCode(code)) {
      const r = await this.deps.db
        .updateTable('user_recovery_codes')
        .set({ used_at: this.now() })
        .where('user_id', '=', user.id)
        .where('code_hash', '=', recoveryCodeHash(this.deps.secretKey, user.id, code))
        .where('used_at', 'is', null)
        .executeTakeFirst();
      ok = recovery = r.numUpdatedRows === 1n;
    } else if (fresh.totp_secret_enc && fresh.totp_enabled_at) {
      const step = totpStep(decryptSecret(this.deps.secretKey, fresh.totp_secret_enc), code, this.deps.clock.millis());
      if (step !== null) {
        // A code is good once: the step must be later than the last one accepted (checked and set in one statement).
        const r = await this.deps.db
          .updateTable('users')
          .set({ totp_last_step: step })
          .where('id', '=', user.id)
          .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', BigInt(step))]))
          .executeTakeFirst();
        ok = r.numUpdatedRows === 1n;
      }
    }
    if (!ok) {
      await this.throttle.fail(keys);
      await this.deps.audit.record(this.deps.db, { merchantId: user.merchant_id }, actor, failAction, null, {
        reason: 'code',
        ...(purpose ? { purpose } : {}),
      });
      throw invalid('That code is not valid. Enter the current 6-digit code, or one of your recovery codes.', 'code');
    }
    await this.throttle.clear(keys.map((k) => k.key));
    return recovery;
  }

  /** Starts (or restarts) TOTP enrolment: a new secret kept unconfirmed until a code from it is entered. */
  async beginEnrolment(user: UserRow, issuer: string): Promise<{ secret: string; uri: string }> {
    if (user.totp_enabled_at !== null) throw invalidState('Two-factor authentication is already set up.');
    const t = newTotp(user.email, issuer);
    await this.deps.db
      .updateTable('users')
      .set({ totp_secret_enc: encryptSecret(this.deps.secretKey, t.secret) })
      .where('id', '=', user.id)
      .where('totp_enabled_at', 'is', null)
      .execute();
    return t;
  }

  /** The unconfirmed enrolment secret (to show the same QR code again after a wrong code). */
  pendingEnrolment(user: UserRow, issuer: string): { secret: string; uri: string } | null {
    if (user.totp_enabled_at !== null || !user.totp_secret_enc) return null;
    const secret = decryptSecret(this.deps.secretKey, user.totp_secret_enc);
    return { secret, uri: totpUri(user.email, issuer, secret) };
  }

  /** Confirms enrolment with a code from the app; returns the 10 recovery codes (shown once). The session becomes full. */
  async confirmEnrolment(session: SessionRow, user: UserRow, code: string, meta: ClientMeta): Promise<string[]> {
    if (user.totp_enabled_at !== null || !user.totp_secret_enc)
      throw invalidState('Start setting up two-factor authentication first.');
    const keys = [{ key: `factor:${user.id}`, limit: THROTTLE_LIMITS.secondFactor }];
    await this.throttle.check(keys);
    const step = totpStep(decryptSecret(this.deps.secretKey, user.totp_secret_enc), code, this.deps.clock.millis());
    if (step === null) {
      await this.throttle.fail(keys);
      throw invalid(
        'That code does not match. Check the time on your phone and enter the current 6-digit code.',
        'code',
      );
    }
    const codes = newRecoveryCodes();
    await withTx(this.deps.db, async (tx) => {
      await tx
        .updateTable('users')
        .set({ totp_enabled_at: this.now(), totp_last_step: step })
        .where('id', '=', user.id)
        .execute();
      await this.replaceRecoveryCodes(tx, user.id, codes);
      const wasEnrolStage = session.stage === 'enrol';
      await tx
        .updateTable('sessions')
        .set({ stage: 'full', second_factor_at: this.now() })
        .where('id', '=', session.id)
        .execute();
      const actor = userActor(user, meta.ip);
      await this.recordOnUser(tx, user, actor, 'user.second_factor_enrol');
      if (wasEnrolStage) await this.sessions.signedIn(tx, user, meta, 'password');
    });
    return codes;
  }

  /** New recovery codes (the old ones stop working), after a fresh TOTP code. */
  async regenerateRecoveryCodes(session: SessionRow, user: UserRow, code: string, meta: ClientMeta): Promise<string[]> {
    await this.confirmSecondFactor(session, user, code, meta, 'recovery_codes');
    const codes = newRecoveryCodes();
    await withTx(this.deps.db, async (tx) => {
      await this.replaceRecoveryCodes(tx, user.id, codes);
      await this.recordOnUser(tx, user, userActor(user, meta.ip), 'user.recovery_codes');
    });
    return codes;
  }

  private async replaceRecoveryCodes(tx: Tx, userId: string, codes: string[]): Promise<void> {
    await tx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    await tx
      .insertInto('user_recovery_codes')
      .values(codes.map((c) => ({ user_id: userId, code_hash: recoveryCodeHash(this.deps.secretKey, userId, c) })))
      .execute();
  }

  /** Operator: removes a user's second factor and recovery codes (lost device); they enrol again at next sign-in. */
  async resetSecondFactor(email: string, actor: Actor): Promise<UserRecord> {
    return withTx(this.deps.db, async (tx) => {
      const user = await tx
        .updateTable('users')
        .set({ totp_secret_enc: null, totp_enabled_at: null, totp_last_step: null })
        .where('email', '=', normalEmail(email))
        .where('removed_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!user) throw notFound('user');
      await tx.deleteFrom('user_recovery_codes').where('user_id', '=', user.id).execute();
      await this.sessions.revokeAll(tx, user.id);
      await this.recordOnUser(tx, user, actor, 'user.second_factor_reset');
      return toUserRecord(user);
    });
  }
}
