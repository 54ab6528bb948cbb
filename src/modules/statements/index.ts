/**
 * The statements module's front door: monthly statements from the ledger (service.ts), as CSV and PDF (render.ts),
 * mailed to owners who opt in (emails.ts), and what they need from the payouts' records (payouts.ts).
 */
export { monthOf, nextMonth, StatementEmails } from './emails.ts';
export { migrations } from './migrations/index.ts';
export type { CaptureRecords, PayoutRecords, SentPayout } from './payouts.ts';
export { balanceLines, dollars, monthName, signedAmount, statementCsv, statementPdf } from './render.ts';
export { monthRange, StatementService, type Statement } from './service.ts';
