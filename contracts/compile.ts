/**
 * Compiles the Solidity in `contracts/` with solc-js (pinned compiler from package.json, `evmVersion: cancun`,
 * optimizer on, no metadata hash so comments do not change bytecode) and writes one artifact per deployable contract
 * to `contracts/build/<Name>.json`. The artifacts are committed: the server and the CLI only read them and never
 * compile at run time (src/chains/evm/contracts.ts reads them); test/evm/compile.test.ts checks that recompiling gives
 * identical artifacts. A build step, kept out of the runtime tree:
 *
 *   npm run contracts:compile
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Abi } from 'viem';
import { BUILD_DIR, type ContractArtifact } from '../src/chains/evm/contracts.ts';
import { KASSE_HOME } from '../src/config.ts';

interface Solc {
  version(): string;
  compile(input: string, callbacks?: { import(path: string): { contents: string } | { error: string } }): string;
}

const CONTRACTS_DIR = join(KASSE_HOME, 'contracts');

/** Source files and the contracts in them that get an artifact. */
const SOURCES: Record<string, string[]> = {
  'ForwarderFactory.sol': ['ForwarderFactory', 'Forwarder'],
  'TestUSDC.sol': ['TestUSDC'],
  'Disperse.sol': ['Disperse'],
  'AuthCaptureEscrow.sol': ['AuthCaptureEscrow', 'TokenStore'],
  'PaymentCollectors.sol': ['ERC3009PaymentCollector', 'OperatorRefundCollector'],
  'SubscriptionCollector.sol': ['SubscriptionCollector'],
  // Test only: hostile contracts for the escrow's invariant suite (test/evm/escrow.test.ts).
  'test/EscrowAttackers.sol': ['ReentrantToken', 'ShortCollector'],
};

const SETTINGS: ContractArtifact['compiler']['settings'] = {
  evmVersion: 'cancun',
  optimizer: { enabled: true, runs: 200 },
  metadata: { bytecodeHash: 'none', appendCBOR: false },
};

/** Compiles every source and returns the artifacts by contract name; throws with solc's messages on errors. */
export function compileContracts(): Record<string, ContractArtifact> {
  const require = createRequire(import.meta.url);
  const solc = require('solc') as Solc;
  const sources: Record<string, { content: string }> = {};
  for (const file of Object.keys(SOURCES)) sources[file] = { content: readFileSync(join(CONTRACTS_DIR, file), 'utf8') };
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      ...SETTINGS,
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const findImport = (path: string) => {
    try {
      return { contents: readFileSync(require.resolve(path), 'utf8') };
    } catch {
      return { error: `not found: ${path}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<
      string,
      Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
    >;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const version = solc.version();
  const out: Record<string, ContractArtifact> = {};
  for (const [file, names] of Object.entries(SOURCES)) {
    for (const name of names) {
      const c = output.contracts[file]?.[name];
      if (!c) throw new Error(`solc produced no ${name} in ${file}`);
      out[name] = {
        contractName: name,
        sourceName: `contracts/${file}`,
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
        compiler: { version, settings: SETTINGS },
      };
    }
  }
  return out;
}

/** The artifact text exactly as written to disk (stable key order, trailing newline). */
export function artifactJson(artifact: ContractArtifact): string {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}

function main(): void {
  mkdirSync(BUILD_DIR, { recursive: true });
  for (const artifact of Object.values(compileContracts())) {
    const path = join(BUILD_DIR, `${artifact.contractName}.json`);
    writeFileSync(path, artifactJson(artifact));
    process.stdout.write(`wrote ${path} (${(artifact.deployedBytecode.length - 2) / 2} bytes deployed)\n`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
