/** Registers the evm family's test infrastructure (test/harness/infrastructure.ts finds this file by its name). */
import '../harness/hardhat.ts';
