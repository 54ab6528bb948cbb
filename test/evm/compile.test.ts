/** The committed artifacts under contracts/build/ are exactly what the compile script produces from contracts/. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { artifactJson, BUILD_DIR, compileContracts } from '../../src/chains/evm/compile.ts';
import {
  abiMatchesArtifact,
  authCaptureEscrowAbi,
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
    assert.equal(
      parsed.bytecode,
      a.bytecode,
      `${a.contractName} bytecode differs: run node --import tsx src/chains/evm/compile.ts`,
    );
    assert.equal(parsed.deployedBytecode, a.deployedBytecode, `${a.contractName} deployed bytecode differs`);
    assert.equal(committed, artifactJson(a), `${a.contractName}.json differs`);
    assert.equal(a.compiler.settings.evmVersion, 'cancun');
  }
});

test('the hand-written ABIs agree with the compiled ones', () => {
  assert.ok(abiMatchesArtifact(forwarderFactoryAbi, 'ForwarderFactory'));
  assert.ok(abiMatchesArtifact(erc20Abi, 'TestUSDC'));
  assert.ok(abiMatchesArtifact(disperseAbi, 'Disperse'));
  assert.ok(abiMatchesArtifact(authCaptureEscrowAbi, 'AuthCaptureEscrow'));
  assert.ok(abiMatchesArtifact(tokenCollectorAbi, 'ERC3009PaymentCollector'));
  assert.ok(abiMatchesArtifact(tokenCollectorAbi, 'OperatorRefundCollector'));
  assert.ok(abiMatchesArtifact(subscriptionCollectorAbi, 'SubscriptionCollector'));
});
