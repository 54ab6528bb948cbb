/**
 * A local EVM chain for tests: Hardhat 2 (`hardhat node`, chain id 31337, automine on, config in
 * hardhat.config.cjs) and helpers to deploy the ForwarderFactory and TestUSDC, make funded wallets, send coins, mine,
 * snapshot and revert.
 *
 * Sharing: `npm test` starts ONE node per run when any selected file path contains `/evm/` and hands its URL to the
 * test files in KASSE_TEST_EVM_RPC. Test files run two at a time, so on that shared node a file must tolerate blocks
 * mined by the other file: it makes its own wallets (`newWallet`, funded by hardhat_setBalance, so no two files
 * share a nonce) and deploys its own contracts, and asserts nothing that depends on the exact head. A file that
 * needs the chain to itself — snapshot/revert reorgs, automine off, exact confirmation counts — starts a private
 * node with `startHardhatNode()` (about a second) and stops it when done; nothing another file does can disturb it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import {
  createPublicClient,
  decodeErrorResult,
  createWalletClient,
  encodeFunctionData,
  http,
  parseEther,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { artifact, erc20Abi, forwarderFactoryAbi, type ContractName } from '../../src/chains/evm/contracts.ts';
import { registerInfrastructure } from './infrastructure.ts';
import { freePort, nodeAnswering } from './net.ts';
import { KASSE_HOME } from '../../src/config.ts';

/** Environment variable carrying the shared node's URL to test files. */
export const EVM_RPC_ENV = 'KASSE_TEST_EVM_RPC';

const HARDHAT_CLI = join(KASSE_HOME, 'node_modules', 'hardhat', 'internal', 'cli', 'bootstrap.js');
const CONFIG = join(KASSE_HOME, 'test', 'harness', 'hardhat.config.cjs');

export const hardhatChain: Chain = {
  id: 31337,
  name: 'Hardhat',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1:8545'] } },
};

export interface HardhatNode {
  url: string;
  stop(): Promise<void>;
}

async function rpcCall<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

/** Starts `hardhat node` on a free port and resolves when it answers JSON-RPC. */
export async function startHardhatNode(): Promise<HardhatNode> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    process.execPath,
    [HARDHAT_CLI, '--config', CONFIG, 'node', '--hostname', '127.0.0.1', '--port', String(port)],
    {
      cwd: KASSE_HOME,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', HARDHAT_TELEMETRY_DISABLED: 'true' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await nodeAnswering(
    child,
    `the hardhat node on ${url}`,
    () => rpcCall(url, 'eth_chainId'),
    () => stderr,
  );
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

registerInfrastructure(async (files) => {
  if (!files.some((f) => f.replaceAll('\\', '/').includes('/evm/'))) return null;
  const node = await startHardhatNode();
  return { env: { [EVM_RPC_ENV]: node.url }, stop: node.stop };
});

/** The shared node's URL (set by `npm test`). */
export function sharedEvmRpc(): string {
  const url = process.env[EVM_RPC_ENV];
  if (!url) throw new Error(`${EVM_RPC_ENV} is not set: run EVM tests with \`npm test -- test/evm/…\``);
  return url;
}

export type TestWallet = WalletClient & { account: Account; address: Address };

/** EIP-712 types of an EIP-3009 `TransferWithAuthorization`, as a payer's wallet signs them. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/** Helpers over one node (shared or private). */
export class TestChain {
  readonly client: PublicClient;

  constructor(readonly url: string) {
    this.client = createPublicClient({ chain: hardhatChain, transport: http(url), pollingInterval: 50 });
  }

  /** A raw JSON-RPC call (hardhat_*, evm_* methods included). */
  rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    return rpcCall<T>(this.url, method, params);
  }

  async blockNumber(): Promise<bigint> {
    return BigInt(await this.rpc<Hex>('eth_blockNumber'));
  }

  /** A fresh wallet with `eth` ETH set directly in state (no transaction, so files never share a nonce). */
  async newWallet(eth = '1000'): Promise<TestWallet> {
    const account = privateKeyToAccount(generatePrivateKey());
    await this.setBalance(account.address, parseEther(eth));
    const wallet = createWalletClient({ account, chain: hardhatChain, transport: http(this.url) });
    return Object.assign(wallet, { address: account.address }) as TestWallet;
  }

  async setBalance(address: Address, wei: bigint): Promise<void> {
    await this.rpc('hardhat_setBalance', [address, `0x${wei.toString(16)}`]);
  }

  async balance(address: Address): Promise<bigint> {
    return this.client.getBalance({ address });
  }

  async tokenBalance(token: Address, address: Address): Promise<bigint> {
    return this.client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
  }

  /** Deploys TestUSDC ("Test USDC", 6 decimals) from `from`. */
  async deployTestUsdc(from: TestWallet): Promise<Address> {
    const a = artifact('TestUSDC');
    const hash = await from.deployContract({
      abi: a.abi,
      bytecode: a.bytecode,
      args: ['Test USDC', 'USDC'],
      account: from.account,
      chain: hardhatChain,
    });
    return (await this.receipt(hash)).contractAddress!;
  }

  /** Deploys a ForwarderFactory owned by `from` (or `owner`) sweeping to `treasury`. */
  async deployFactory(from: TestWallet, treasury: Address, owner: Address = from.address): Promise<Address> {
    const a = artifact('ForwarderFactory');
    const hash = await from.deployContract({
      abi: forwarderFactoryAbi,
      bytecode: a.bytecode,
      args: [owner, treasury],
      account: from.account,
      chain: hardhatChain,
    });
    return (await this.receipt(hash)).contractAddress!;
  }

  /** Deploys the Disperse contract (batched ERC-20 payouts) from `from`. */
  async deployDisperse(from: TestWallet): Promise<Address> {
    const a = artifact('Disperse');
    const hash = await from.deployContract({
      abi: a.abi,
      bytecode: a.bytecode,
      account: from.account,
      chain: hardhatChain,
    });
    return (await this.receipt(hash)).contractAddress!;
  }

  /** Calls `functionName` on the contract at `address` from `from` and waits for it; throws if it reverted. */
  async write(from: TestWallet, address: Address, abi: Abi, functionName: string, args: readonly unknown[] = []) {
    const hash = await from.sendTransaction({
      to: address,
      data: encodeFunctionData({ abi, functionName, args }),
      account: from.account,
      chain: hardhatChain,
    });
    return this.receipt(hash);
  }

  /**
   * Asserts that `from` calling `functionName` now reverts with the custom error `error` (decoded with `abi`, which
   * should also carry the errors of contracts the call reaches). Simulated: nothing is mined.
   */
  async refusedWith(
    from: TestWallet,
    address: Address,
    abi: Abi,
    functionName: string,
    args: readonly unknown[],
    error: string,
  ): Promise<void> {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_call',
        params: [{ from: from.address, to: address, data: encodeFunctionData({ abi, functionName, args }) }, 'latest'],
      }),
    });
    const body = (await res.json()) as { error?: { message: string; data?: string | { data?: string } } };
    if (body.error) {
      // Hardhat answers a revert with the return data in `error.data.data` (and in the message).
      const d = body.error.data;
      const data =
        (typeof d === 'string' ? d : d?.data) ?? body.error.message.match(/return data: (0x[0-9a-f]*)/i)?.[1];
      let name: string;
      try {
        name = data ? decodeErrorResult({ abi, data: data as Hex }).errorName : body.error.message;
      } catch {
        name = `an error unknown to the ABI (${body.error.message})`;
      }
      if (name !== error) throw new Error(`${functionName} reverted with ${name}, expected ${error}`);
      return;
    }
    throw new Error(`${functionName} succeeded, expected ${error}`);
  }

  /** The latest block's timestamp (seconds). */
  async now(): Promise<number> {
    return Number((await this.client.getBlock()).timestamp);
  }

  /**
   * Mines empty blocks until the latest block's timestamp reaches `timestamp` (each block is at least a second after
   * the one before, so this is how time passes on a shared node without moving its clock for the other files).
   */
  async mineUntil(timestamp: number): Promise<void> {
    while ((await this.now()) < timestamp) await this.rpc('evm_mine');
  }

  /** Deploys the committed artifact `name` from `from` with constructor `args`. */
  async deployContract(from: TestWallet, name: ContractName, args: readonly unknown[] = []): Promise<Address> {
    const a = artifact(name);
    const hash = await from.deployContract({
      abi: a.abi,
      bytecode: a.bytecode,
      args,
      account: from.account,
      chain: hardhatChain,
    });
    return (await this.receipt(hash)).contractAddress!;
  }

  /** Sends ETH; returns the transaction hash (mined at once while automine is on). */
  async sendEth(from: TestWallet, to: Address, wei: bigint): Promise<Hash> {
    return from.sendTransaction({ to, value: wei, account: from.account, chain: hardhatChain });
  }

  /** TestUSDC.mint(to, amount) sent from `from`. */
  async mint(from: TestWallet, token: Address, to: Address, amount: bigint): Promise<Hash> {
    return from.sendTransaction({
      to: token,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'mint', args: [to, amount] }),
      account: from.account,
      chain: hardhatChain,
    });
  }

  /** ERC-20 transfer from `from`. */
  async sendToken(from: TestWallet, token: Address, to: Address, amount: bigint): Promise<Hash> {
    return from.sendTransaction({
      to: token,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }),
      account: from.account,
      chain: hardhatChain,
    });
  }

  /** Waits for a receipt; throws if the transaction reverted. */
  async receipt(hash: Hash) {
    const r = await this.client.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 });
    if (r.status !== 'success') throw new Error(`transaction ${hash} reverted`);
    return r;
  }

  /**
   * Mines `blocks` blocks, one evm_mine each (~2 ms). NOTE: not hardhat_mine: for more than a few blocks it creates
   * "reserved" blocks whose parentHash does not link to the block before, which a watcher following the chain by
   * hash rightly refuses as inconsistent.
   */
  async mine(blocks = 1): Promise<void> {
    for (let i = 0; i < blocks; i++) await this.rpc('evm_mine');
  }

  async setAutomine(on: boolean): Promise<void> {
    await this.rpc('evm_setAutomine', [on]);
  }

  /** evm_snapshot; the id is single-use. */
  async snapshot(): Promise<string> {
    return this.rpc<string>('evm_snapshot');
  }

  /** evm_revert to a snapshot: blocks after it leave the chain (a reorg once new blocks are mined). */
  async revert(id: string): Promise<void> {
    const ok = await this.rpc<boolean>('evm_revert', [id]);
    if (!ok) throw new Error(`evm_revert ${id} failed`);
  }
}
