/**
 * The capture module's front door: hold and capture (docs/capture.md). A manual payment's holds and the captures and
 * voids on them (service.ts), each moved through the transfers module and applied to the payment through its
 * engine; it owns `holds` and `hold_operations` (tables.ts, store.ts, migrations/). It is the chain families'
 * `HoldsPort` (a checkout hands it a hold the payer signed).
 */
export { migrations } from './migrations/index.ts';
export { CaptureService, HOLD_PURPOSES, type CaptureInput, type OpenHold } from './service.ts';
