/**
 * A local Litecoin Core node in regtest for the UTXO family's tests (Litecoin Core has Bitcoin Core's RPC; Debian
 * ships `litecoind`, not `bitcoind`), with a wallet to pay from and helpers to mine, send, replace (RBF) and reorg.
 *
 * Sharing: `npm test` starts ONE node per run when any selected file path contains `/utxo/` and hands its RPC URL
 * (user and password in it) to test files in KASSE_TEST_LTC_RPC; each file makes its own wallet and must tolerate
 * blocks mined by the other file running beside it. A file that needs the chain to itself (exact confirmation
 * counts, `invalidateblock` reorgs) starts a private node with `startLitecoind()` (about a second) and stops it.
 * Every node runs on free ports in a temporary data directory, removed when it stops.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerInfrastructure } from './infrastructure.ts';
import { freePort, nodeAnswering } from './net.ts';

export const LTC_RPC_ENV = 'KASSE_TEST_LTC_RPC';

/**
 * A second RPC user of every node, as an operator's `rpcwhitelist` (or a provider's plan) makes one: it may call what
 * Kasse's watcher, sender and status call, but not `estimatesmartfee` (Core answers HTTP 403). `limitedRpcUrl` is a
 * node's URL as that user (same password).
 */
const LIMITED_USER = 'kasse-limited';
const LIMITED_METHODS = [
  'getbestblockhash',
  'getblockheader',
  'getblock',
  'getblockhash',
  'getblockcount',
  'getrawmempool',
  'getrawtransaction',
  'getmempoolinfo',
  'getmempoolentry',
  'getnetworkinfo',
  'sendrawtransaction',
];

/** `url` (a node's RPC URL) as the limited user. */
export function limitedRpcUrl(url: string): string {
  const u = new URL(url);
  u.username = LIMITED_USER;
  return u.toString();
}
const LITECOIND = process.env.KASSE_LITECOIND ?? 'litecoind';

export interface LitecoinNode {
  /** RPC URL with user and password. */
  url: string;
  stop(): Promise<void>;
}

/** A JSON-RPC call to `url` (optionally a wallet path); throws with the node's message. */
export async function ltcRpc<T = any>(
  url: string,
  method: string,
  params: unknown[] = [],
  wallet?: string,
): Promise<T> {
  const u = new URL(url);
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  u.username = '';
  u.password = '';
  if (wallet) u.pathname = `/wallet/${encodeURIComponent(wallet)}`;
  const res = await fetch(u, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: auth },
    body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
  });
  const text = await res.text();
  let body: { result?: T; error?: { message: string; code: number } | null };
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${method}: HTTP ${res.status} ${text.slice(0, 200)}`);
  }
  if (body.error) throw Object.assign(new Error(`${method}: ${body.error.message}`), { code: body.error.code });
  return body.result as T;
}

/** Starts `litecoind -regtest` on free ports in a fresh data directory; resolves when it answers RPC. */
export async function startLitecoind(): Promise<LitecoinNode> {
  const [rpcPort, p2pPort] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'kasse-ltc-'));
  const password = randomBytes(12).toString('hex');
  const url = `http://kasse:${password}@127.0.0.1:${rpcPort}/`;
  const child: ChildProcess = spawn(
    LITECOIND,
    [
      '-regtest',
      `-datadir=${dir}`,
      `-rpcport=${rpcPort}`,
      `-port=${p2pPort}`,
      '-rpcuser=kasse',
      `-rpcpassword=${password}`,
      `-rpcauth=${rpcAuth(LIMITED_USER, password)}`,
      `-rpcwhitelist=${LIMITED_USER}:${LIMITED_METHODS.join(',')}`,
      // Whitelists bind only the users that have one: `kasse` may call everything.
      '-rpcwhitelistdefault=0',
      '-rpcbind=127.0.0.1',
      '-rpcallowip=127.0.0.1',
      '-listen=0',
      '-server',
      '-fallbackfee=0.0002',
      // Litecoin Core refuses replacements unless told (Bitcoin Core takes BIP-125 replacements by default).
      '-mempoolreplacement=1',
      '-printtoconsole=0',
      '-rpcthreads=8',
      '-rpcworkqueue=64',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await nodeAnswering(
    child,
    'litecoind',
    () => ltcRpc(url, 'getblockchaininfo'),
    () => stderr,
  );
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

registerInfrastructure(async (files) => {
  if (!files.some((f) => f.replaceAll('\\', '/').includes('/utxo/'))) return null;
  const node = await startLitecoind();
  return { env: { [LTC_RPC_ENV]: node.url }, stop: node.stop };
});

/** The shared node's URL (set by `npm test`). */
export function sharedLitecoinRpc(): string {
  const url = process.env[LTC_RPC_ENV];
  if (!url) throw new Error(`${LTC_RPC_ENV} is not set: run UTXO tests with \`npm test -- test/utxo/…\``);
  return url;
}

/** A funded wallet of its own on a node, and what tests do with it. */
export class LitecoinWallet {
  private constructor(
    readonly url: string,
    readonly name: string,
    /** The wallet's own address, where it mines to. */
    readonly address: string,
  ) {}

  /** Creates wallet `name` and mines 101 blocks to it (its first coinbase becomes spendable). */
  static async create(url: string, name = `w${randomBytes(4).toString('hex')}`, fund = true): Promise<LitecoinWallet> {
    await ltcRpc(url, 'createwallet', [name]);
    const address = await ltcRpc<string>(url, 'getnewaddress', ['', 'bech32'], name);
    const w = new LitecoinWallet(url, name, address);
    if (fund) await w.mine(101);
    return w;
  }

  rpc<T = any>(method: string, params: unknown[] = []): Promise<T> {
    return ltcRpc<T>(this.url, method, params, this.name);
  }

  /** Mines `n` blocks to the wallet (or to `to`); returns their hashes. */
  mine(n = 1, to = this.address): Promise<string[]> {
    return this.rpc<string[]>('generatetoaddress', [n, to]);
  }

  /** Sends `sats` to `address` with RBF signalled; returns the txid (in the mempool). */
  send(address: string, sats: bigint): Promise<string> {
    return this.rpc<string>('sendtoaddress', [address, coins(sats), '', '', false, true]);
  }

  /** One transaction paying several outputs (`sendmany`); returns the txid. */
  sendMany(outputs: Array<[string, bigint]>): Promise<string> {
    const amounts: Record<string, string> = {};
    for (const [a, s] of outputs) amounts[a] = coins(s);
    return this.rpc<string>('sendmany', ['', amounts, 1, '', [], true]);
  }

  /** RBF: replaces `txid` with a higher fee (same outputs); returns the replacement's txid. */
  async bumpFee(txid: string): Promise<string> {
    return (await this.rpc<{ txid: string }>('bumpfee', [txid])).txid;
  }

  /**
   * RBF that pays someone else: a replacement spending the same inputs to `to` (the original's payment never
   * happens); returns its txid.
   */
  async replaceTo(txid: string, to: string): Promise<string> {
    const tx = await this.rpc<any>('gettransaction', [txid, true, true]);
    const decoded = tx.decoded;
    const inputs = decoded.vin.map((v: any) => ({ txid: v.txid, vout: v.vout, sequence: 0xfffffffd }));
    let total = 0n;
    for (const v of decoded.vin) {
      const prev = await this.rpc<any>('gettransaction', [v.txid, true, true]);
      total += toSats(prev.decoded.vout[v.vout].value);
    }
    const fee = 100_000n;
    const raw = await this.rpc<string>('createrawtransaction', [inputs, [{ [to]: coins(total - fee) }]]);
    const signed = await this.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [raw]);
    if (!signed.complete) throw new Error('replacement not fully signed');
    return this.rpc<string>('sendrawtransaction', [signed.hex]);
  }

  getRawMempool(): Promise<string[]> {
    return this.rpc<string[]>('getrawmempool');
  }
}

/** Satoshis as a decimal coin string for RPC amounts. */
export function coins(sats: bigint): string {
  const s = sats.toString().padStart(9, '0');
  return `${s.slice(0, -8)}.${s.slice(-8)}`;
}

function toSats(value: number | string): bigint {
  const [w, f = ''] = String(value).split('.');
  return BigInt(w!) * 100_000_000n + BigInt(`${f}00000000`.slice(0, 8));
}

/** Core's `-rpcauth` value for `user` and `password` (share/rpcauth/rpcauth.py: HMAC-SHA256 keyed by a random salt). */
function rpcAuth(user: string, password: string): string {
  const salt = randomBytes(16).toString('hex');
  return `${user}:${salt}$${createHmac('sha256', salt).update(password).digest('hex')}`;
}
