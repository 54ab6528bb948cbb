/**
 * The simulator module's front door: test payments finished with a chosen outcome through the payments module's own
 * paths (service.ts). It owns no table.
 */
export { Simulator } from './service.ts';
