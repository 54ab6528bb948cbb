/**
 * Roles and what each may do. The dashboard checks a permission on the server for every page and every action, so a
 * hidden button is never the only guard. `owner`: everything (team, keys, webhook secret, settings, audit log,
 * approving disbursements). `member`: everything but team, keys, secrets, settings and approvals. `viewer`: reads.
 */
export const ROLES = ['owner', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const ALL: readonly Role[] = ROLES;
const STAFF: readonly Role[] = ['owner', 'member'];
const OWNERS: readonly Role[] = ['owner'];

export const PERMISSIONS = {
  /** Home, payments, links, events: reading. */
  read: ALL,
  /** Accept, cancel and refund payments. */
  'payments.write': STAFF,
  /** Create, edit and deactivate payment links. */
  'links.write': STAFF,
  /** Take payments on a POS terminal. */
  'pos.use': ALL,
  /** Webhook URLs and redelivering events. */
  'webhooks.write': STAFF,
  /** API keys (roll, revoke) and the webhook secret (reveal, roll). */
  'keys.manage': OWNERS,
  /** Invite users, change roles, remove users. */
  'team.manage': OWNERS,
  /** Merchant name, payout coin, disbursement quorum, tax profile. */
  'settings.write': OWNERS,
  /** The audit log and the test-mode Mail page. */
  'audit.read': OWNERS,
  /** Approve and release disbursements. */
  'disbursements.approve': OWNERS,
  /** Receive the monthly statement by email (an owner opts in for themselves). */
  'statements.email': OWNERS,
} as const satisfies Record<string, readonly Role[]>;

export type Permission = keyof typeof PERMISSIONS;

export function can(role: Role, permission: Permission): boolean {
  return (PERMISSIONS[permission] as readonly Role[]).includes(role);
}
