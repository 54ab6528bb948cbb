/**
 * Dashboard users and the email outbox, for the operator.
 *
 *   kasse user create --merchant mer_… --email E --role owner|member|viewer [--json]   prints a one-time set-up link
 *   kasse user list [--merchant mer_…] [--json]
 *   kasse user setup-link --email E [--json]      a fresh one-time link (set-up, or password reset)
 *   kasse user reset-2fa --email E [--json]       removes a lost second factor; the user enrols again at sign-in
 *   kasse mail list [--status uncertain|failed|kept|…] [--limit N] [--json]   every mail, newest first
 *   kasse mail show ID [--json]                   a stored mail with its body (mail kept without SMTP)
 *   kasse mail resend ID [--json]                 sends an uncertain or failed mail again (same Message-ID)
 *
 * Everything a command changes is in the audit log as done by the operator.
 */
import { OPERATOR } from '../../modules/audit/index.ts';
import type { MailStatus } from '../../modules/email/index.ts';
import { listFilters, listFlags, requireArg, requireString, type Command } from '../context.ts';

const STATUSES: MailStatus[] = ['pending', 'claimed', 'handed', 'sent', 'failed', 'uncertain', 'kept'];
/** The most `mail list --limit` shows at once. */
const MAIL_LIST_MAX = 1000;

export const userCommands: Command[] = [
  {
    name: 'user create',
    usage:
      'user create --merchant ID --email EMAIL --role owner|member|viewer [--json]   (prints a one-time set-up link, valid 24 hours)',
    flags: {
      merchant: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
      json: { type: 'boolean' },
    },
    run: async (kasse, f) => {
      const r = await kasse.users.team.create({
        merchantId: requireString(f, 'merchant'),
        email: requireString(f, 'email'),
        role: requireString(f, 'role'),
        actor: OPERATOR,
        invite: false,
      });
      return {
        user_id: r.user.id,
        merchant_id: r.user.merchant_id,
        email: r.user.email,
        role: r.user.role,
        setup_url: r.setup_url,
        expires_at: r.expires_at,
      };
    },
  },
  {
    name: 'user list',
    usage: 'user list [--merchant ID] [--json]',
    flags: { merchant: { type: 'string' }, json: { type: 'boolean' } },
    run: async (kasse, f) => ({
      data: await kasse.users.team.listAll(typeof f.merchant === 'string' ? f.merchant : undefined),
    }),
  },
  {
    name: 'user setup-link',
    usage: 'user setup-link --email EMAIL [--json]   (a new one-time link; earlier links stop working)',
    flags: { email: { type: 'string' }, json: { type: 'boolean' } },
    run: async (kasse, f) => {
      const r = await kasse.users.links.setupLink(requireString(f, 'email'), OPERATOR);
      return { user_id: r.user.id, email: r.user.email, setup_url: r.setup_url, expires_at: r.expires_at };
    },
  },
  {
    name: 'user reset-2fa',
    usage:
      'user reset-2fa --email EMAIL [--json]   (lost phone and recovery codes: signs the user out; they enrol again)',
    flags: { email: { type: 'string' }, json: { type: 'boolean' } },
    run: (kasse, f) => kasse.users.factors.resetSecondFactor(requireString(f, 'email'), OPERATOR),
  },
  {
    name: 'mail list',
    usage: `mail list [--status ${STATUSES.join('|')}] [--limit N] [--json]   (every merchant's mail, newest first; bodies with mail show)`,
    flags: listFlags(),
    run: async (kasse, f) => {
      const { data, has_more } = await kasse.email.forOperator(
        listFilters(f, STATUSES, { byDefault: 100, max: MAIL_LIST_MAX }),
      );
      return { data: data.map(({ text: _t, html: _h, ...m }) => m), has_more };
    },
  },
  {
    name: 'mail show',
    usage: 'mail show ID [--json]',
    flags: { json: { type: 'boolean' } },
    run: (kasse, _f, pos) => kasse.email.get(requireArg(pos, 'the mail id (eml_…)')),
  },
  {
    name: 'mail resend',
    usage: 'mail resend ID [--json]   (an uncertain or failed mail; the copy has the same Message-ID)',
    flags: { json: { type: 'boolean' } },
    run: async (kasse, _f, pos) => {
      const m = await kasse.email.resend(requireArg(pos, 'the mail id (eml_…)'));
      await kasse.email.runOnce();
      return kasse.email.get(m.id);
    },
  },
];
