/**
 * The subscriptions module's front door: scheduled invoices emailed to a customer (service.ts), the API's
 * Subscription object (schema.ts) and its plain data (model.ts, calendar.ts), the customer's signed link
 * (customer-link.ts) and how a mail says the interval (mail.ts); payers' grants of recurring charges and the charges
 * under them (grants.ts, charging.ts, docs/subscriptions.md "Charged automatically").
 */
export { INTERVALS } from './calendar.ts';
export { CustomerLinks, customerActor, type LinkCheck } from './customer-link.ts';
export type { ChargingDeps } from './charging.ts';
export type { GrantBody, GrantPreview } from './grants.ts';
export { every } from './mail.ts';
export { migrations } from './migrations/index.ts';
export {
  COLLECTIONS,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  SUBSCRIPTION_LIMITS,
  SUBSCRIPTION_STATUSES,
  type SubscriptionStatus,
} from './model.ts';
export { SUBSCRIPTION_SCHEMAS, type Subscription } from './schema.ts';
export { SubscriptionService, type CustomerView } from './service.ts';
