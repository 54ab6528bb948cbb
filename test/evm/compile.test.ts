/** The committed artifacts under contracts/build/ are exactly what contracts/compile.ts produces from contracts/. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Abi } from 'viem';
import { artifactJson, compileContracts } from '../../contracts/compile.ts';
import {
  artifact,
  authCaptureEscrowAbi,
  BUILD_DIR,
  type ContractName,
  disperseAbi,
  erc20Abi,
  forwarderFactoryAbi,
  subscriptionCollectorAbi,
  tokenCollectorAbi,
} from '../../src/chains/evm/contracts.ts';

test('recompiling the contracts gives the committed artifacts byte for byte', () => {
  const fresh = compileContracts();
  assert.deepEqual(Object.keys(fresh).sort(), [
    'AuthCaptureEscrow',
    'Disperse',
    'ERC3009PaymentCollector',
    'Forwarder',
    'ForwarderFactory',
    'OperatorRefundCollector',
    'ReentrantToken',
    'ShortCollector',
    'SubscriptionCollector',
    'TestUSDC',
    'TokenStore',
  ]);
  for (const a of Object.values(fresh)) {
    const committed = readFileSync(join(BUILD_DIR, `${a.contractName}.json`), 'utf8');
    const parsed = JSON.parse(committed);
    assert.equal(parsed.bytecode, a.bytecode, `${a.contractName} bytecode differs: run npm run contracts:compile`);
    assert.equal(parsed.deployedBytecode, a.deployedBytecode, `${a.contractName} deployed bytecode differs`);
    assert.equal(committed, artifactJson(a), `${a.contractName}.json differs`);
    assert.equal(a.compiler.settings.evmVersion, 'cancun');
  }
});

/** Whether every entry of the hand-written `abi` is in the compiled one (by kind, name and input types). */
function abiMatchesArtifact(abi: Abi, name: ContractName): boolean {
  const sig = (x: Abi[number]) =>
    JSON.stringify({
      type: x.type,
      name: 'name' in x ? x.name : '',
      inputs: 'inputs' in x ? x.inputs.map((i) => i.type) : [],
    });
  const compiled = new Set(artifact(name).abi.map(sig));
  return abi.every((x) => compiled.has(sig(x)));
}

test('the hand-written ABIs agree with the compiled ones', () => {
  assert.ok(abiMatchesArtifact(forwarderFactoryAbi, 'ForwarderFactory'));
  assert.ok(abiMatchesArtifact(erc20Abi, 'TestUSDC'));
  assert.ok(abiMatchesArtifact(disperseAbi, 'Disperse'));
  assert.ok(abiMatchesArtifact(authCaptureEscrowAbi, 'AuthCaptureEscrow'));
  assert.ok(abiMatchesArtifact(tokenCollectorAbi, 'ERC3009PaymentCollector'));
  assert.ok(abiMatchesArtifact(tokenCollectorAbi, 'OperatorRefundCollector'));
  assert.ok(abiMatchesArtifact(subscriptionCollectorAbi, 'SubscriptionCollector'));
});
