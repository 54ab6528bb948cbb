/**
 * Node's arguments for the processes tests start: Kasse's server and CLI, and harness scripts. A test that runs
 * compiled (`npm test`: test/run.ts compiles into .test-build/) starts them compiled too, which spares each process
 * tsx's loader (about 1.8 s of CPU); a test run from its sources (KASSE_SKIP_TYPECHECK=1) starts them as an operator
 * does, `node --import tsx src/main.ts` (`npm start`) and `bin/kasse.js`. Either way it is the same code; the
 * operator contract's own cases (test/api/operator.test.ts) run the operator's exact commands in both: `npm start`
 * itself, the server command line the README gives service managers, and `OPERATOR_CLI`.
 */
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KASSE_HOME } from '../../src/config.ts';

const COMPILED = extname(fileURLToPath(import.meta.url)) === '.js';

/** Arguments running `module` (its path in the repository, without extension), from this tree. */
export function nodeArgs(module: string): string[] {
  if (!COMPILED) return ['--import', 'tsx', join(KASSE_HOME, `${module}.ts`)];
  return ['--enable-source-maps', fileURLToPath(new URL(`../../${module}.js`, import.meta.url))];
}

/** The package's `kasse` command. */
export const OPERATOR_CLI = [join(KASSE_HOME, 'bin', 'kasse.js')];

/** The server (`src/main`) as this test runs. */
export const SERVER = nodeArgs('src/main');
/** The CLI (`src/cli/index`, what bin/kasse.js runs) as this test runs. */
export const CLI = COMPILED ? nodeArgs('src/cli/index') : OPERATOR_CLI;
