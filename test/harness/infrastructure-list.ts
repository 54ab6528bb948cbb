/** Imports each chain harness so it registers its starter (see infrastructure.ts). */
export {};
