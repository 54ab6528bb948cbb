/**
 * Test and live are separate worlds: every merchant object, deposit address and transfer belongs to one mode, and
 * the mode of a request is the listener's that received it (docs/ARCHITECTURE.md).
 */
export type Mode = 'test' | 'live';

/** Both modes, live first (the order the price refresh and the chain families walk them in). */
export const MODES: readonly Mode[] = ['live', 'test'];
