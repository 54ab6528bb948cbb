/** Imports each chain harness so it registers its starter (see infrastructure.ts). */
import './hardhat.ts';
import './solana.ts';
import './litecoind.ts';

export {};
