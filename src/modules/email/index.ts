/**
 * The email module's front door: the outbox modules enqueue mail into in the causing transaction, with its SMTP
 * worker (service.ts), the layout every mail shares (template.ts) and the merchant's brand in a mail (brand.ts).
 */
export type { MailBrand } from './brand.ts';
export { migrations } from './migrations/index.ts';
export {
  EMAIL_CHANNEL,
  EmailService,
  type ComposedMail,
  type MailComposer,
  type MailRef,
  type MailReference,
  type MailStatus,
} from './service.ts';
export { renderEmail, type EmailContent } from './template.ts';
