/** The transfers module's front door: outgoing transfers, recorded in the caller's transaction and settled once. */
export { migrations } from './migrations/index.ts';
export { TransferService, type SettledTransfer, type TransferOwner } from './service.ts';
