/**
 * A Solana JSON-RPC node for tests, over the LiteSVM ledger of solana-validator.ts, speaking the wire format of a
 * Solana RPC node for the methods Kasse and test wallets use: base58/base64 encodings, `commitment`, the
 * `{ context, value }` envelope, Solana's error codes (-32002 preflight failure, -32004 block not available, -32007
 * skipped slot, -32015 unsupported transaction version, …).
 *
 * One ledger can be served on several URLs (`listeners`), each with its own faults, to test failover: a listener
 * can be down (HTTP 503) or lag N blocks behind (its heads are lower and newer blocks are "not available").
 * Controls are JSON-RPC methods too (`harness_*`), so a test drives a shared node (started once per `npm test`
 * run when a selected file path contains `/solana/`, URLs in KASSE_TEST_SOLANA_RPC) the same way as a private one
 * (`startSolanaNode()`, in process, about 100 ms): produce slots, skip slots, drop a transaction before finality,
 * finalize, set block time, set the cluster's rent (lamports per byte-year at a 1-year exemption threshold; null:
 * the default), produce slots on a timer, set listener faults, read call counts, and refuse methods as a node that
 * does not serve them answers (`harness_refuseMethods([…])`: JSON-RPC -32601 "Method not found", what an Agave node
 * answers for a method group it was started without, and what hosted providers answer for methods they disable).
 *
 * Each listener also serves Solana's PubSub WebSocket on its port (`ws://…`, in `wsUrls`): `slotSubscribe` answers a
 * subscription id and then sends `slotNotification` ({ result: { parent, root, slot }, subscription }) on every
 * change of the slots (a block produced, slots skipped, finality moved, a fork); `slotUnsubscribe` ends it. A
 * listener's PubSub can be cut (`harness_setListener(i, { pubsub: false })`: open sockets are killed, new ones
 * closed at once) and restored; a listener that is `down` refuses it too.
 *
 * Sharing: files running at the same time share the shared node's ledger, so a file that asserts exact slots,
 * finality or drops starts a private node.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { Rent } from 'litesvm';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  address,
  getBase58Decoder,
  getBase58Encoder,
  getBase64Decoder,
  getBase64Encoder,
  getTransactionDecoder,
} from '@solana/kit';
import { registerInfrastructure } from './infrastructure.ts';
import {
  BLOCKHASH_VALIDITY,
  RpcFailure,
  SolanaValidator,
  TOKEN_PROGRAM,
  uiAmount,
  type Block,
  type Commitment,
  type LedgerTx,
} from './solana-validator.ts';
import { KASSE_HOME } from '../../src/config.ts';

export const SOLANA_RPC_ENV = 'KASSE_TEST_SOLANA_RPC';

const b58 = getBase58Decoder();
const b58enc = getBase58Encoder();
const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();

interface ListenerState {
  down: boolean;
  /** Whether its PubSub WebSocket takes connections. */
  pubsub: boolean;
  /** Blocks this listener pretends not to have yet. */
  lag: number;
  counts: Map<string, number>;
}

export interface SolanaNode {
  urls: string[];
  /** The PubSub WebSocket URLs, one per listener. */
  wsUrls: string[];
  validator: SolanaValidator;
  stop(): Promise<void>;
}

type Params = unknown[];
type Config = {
  commitment?: Commitment;
  encoding?: string;
  transactionDetails?: string;
  rewards?: boolean;
  maxSupportedTransactionVersion?: number;
  skipPreflight?: boolean;
  sigVerify?: boolean;
  searchTransactionHistory?: boolean;
  replaceRecentBlockhash?: boolean;
  accounts?: { addresses: string[]; encoding?: string };
};

const num = (n: bigint | number): number => Number(n);
/** u64::MAX, the rent epoch of a rent-exempt account, as the JSON number Solana's RPC sends (a double: 2^64). */
const RENT_EPOCH_EXEMPT = 2 ** 64;

/** Serves `validator` over JSON-RPC on `listeners` loopback ports. */
export async function serveSolana(validator: SolanaValidator, listeners = 1): Promise<SolanaNode> {
  const states: ListenerState[] = [];
  const servers: Server[] = [];
  const pubsubs: WebSocketServer[] = [];
  const sockets = new Set<Socket>();
  let timer: NodeJS.Timeout | null = null;
  /** Methods every listener refuses as a node that does not serve them does (`harness_refuseMethods`). */
  const refused = new Set<string>();

  const handler = (state: ListenerState) => {
    /** The newest block at `commitment` as this listener sees it. */
    const head = (commitment: Commitment = 'finalized'): Block => {
      const b = validator.head(commitment);
      if (state.lag === 0) return b;
      const visible = Math.max(0, validator.blocks.length - 1 - state.lag);
      return validator.blocks[Math.min(validator.blocks.indexOf(b), visible)]!;
    };
    const context = (commitment?: Commitment) => ({
      apiVersion: '2.2.0',
      slot: num(head(commitment ?? 'finalized').slot),
    });
    const cfg = (p: Params, i: number): Config => (p[i] && typeof p[i] === 'object' ? (p[i] as Config) : {});
    const commitmentOf = (c: Config): Commitment => {
      const v = c.commitment ?? 'finalized';
      if (!['processed', 'confirmed', 'finalized'].includes(v))
        throw new RpcFailure(
          -32602,
          `Invalid params: unknown variant \`${v}\`, expected one of \`processed\`, \`confirmed\`, \`finalized\``,
        );
      return v;
    };
    const account = (key: string, encoding = 'base64') => {
      const a = validator.svm.getAccount(address(key));
      if (!a.exists) return null;
      const data = encoding === 'base58' ? [b58.decode(a.data), 'base58'] : [b64.decode(a.data), 'base64'];
      return {
        data,
        executable: a.executable,
        lamports: num(a.lamports),
        owner: a.programAddress,
        rentEpoch: RENT_EPOCH_EXEMPT,
        space: a.data.length,
      };
    };
    const slotArg = (v: unknown): bigint => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
        throw new RpcFailure(-32602, 'Invalid params: invalid type: expected u64.');
      return BigInt(v);
    };
    const blockAt = (slot: bigint, commitment: Commitment): Block => {
      const top = head(commitment);
      if (slot > top.slot) throw new RpcFailure(-32004, `Block not available for slot ${slot}`);
      const b = validator.blocks.find((x) => x.slot === slot);
      if (!b)
        throw new RpcFailure(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`);
      return b;
    };
    const status = (tx: LedgerTx, block: Block | null) => {
      const finalized = block !== null && validator.isFinalized(block);
      return {
        slot: num(block?.slot ?? validator.currentSlot),
        confirmations: finalized ? null : block ? num(validator.tip.blockHeight - block.blockHeight) : 0,
        err: tx.err,
        status: tx.err === null ? { Ok: null } : { Err: tx.err },
        confirmationStatus: finalized ? 'finalized' : block ? 'confirmed' : 'processed',
      };
    };
    const decodeWire = (text: unknown, encoding = 'base58'): Uint8Array => {
      if (typeof text !== 'string') throw new RpcFailure(-32602, 'Invalid params: invalid type: expected a string.');
      try {
        return encoding === 'base64' ? (b64enc.encode(text) as Uint8Array) : (b58enc.encode(text) as Uint8Array);
      } catch {
        throw new RpcFailure(-32602, `invalid ${encoding} encoding`);
      }
    };

    const methods: Record<string, (p: Params) => unknown> = {
      getHealth: () => 'ok',
      getVersion: () => ({ 'solana-core': '2.2.0', 'feature-set': 0 }),
      getGenesisHash: () => validator.blocks[0]!.blockhash,
      getSlot: (p) => {
        const c = commitmentOf(cfg(p, 0));
        return c === 'processed' && state.lag === 0 ? num(validator.currentSlot) : num(head(c).slot);
      },
      getBlockHeight: (p) => num(head(commitmentOf(cfg(p, 0))).blockHeight),
      getLatestBlockhash: (p) => {
        const c = commitmentOf(cfg(p, 0));
        const b = head(c);
        return {
          context: context(c),
          value: { blockhash: b.blockhash, lastValidBlockHeight: num(b.blockHeight + BLOCKHASH_VALIDITY) },
        };
      },
      isBlockhashValid: (p) => ({
        context: context(commitmentOf(cfg(p, 1))),
        value: typeof p[0] === 'string' && validator.blockhashValid(p[0]),
      }),
      getMinimumBalanceForRentExemption: (p) =>
        num(validator.svm.minimumBalanceForRentExemption(BigInt(Number(p[0] ?? 0)))),
      getBalance: (p) => ({
        context: context(commitmentOf(cfg(p, 1))),
        value: num(validator.svm.getBalance(address(String(p[0]))) ?? 0n),
      }),
      getAccountInfo: (p) => ({
        context: context(commitmentOf(cfg(p, 1))),
        value: account(String(p[0]), cfg(p, 1).encoding),
      }),
      getMultipleAccounts: (p) => {
        const keys = p[0];
        if (!Array.isArray(keys) || keys.length > 100)
          throw new RpcFailure(-32602, 'Invalid params: at most 100 pubkeys');
        return {
          context: context(commitmentOf(cfg(p, 1))),
          value: keys.map((k) => account(String(k), cfg(p, 1).encoding)),
        };
      },
      getTokenAccountsByOwner: (p) => {
        const owner = String(p[0]);
        const filter = (p[1] ?? {}) as { mint?: string; programId?: string };
        const c = cfg(p, 2);
        if (typeof filter.mint !== 'string' && typeof filter.programId !== 'string')
          throw new RpcFailure(-32602, 'Invalid params: expected a mint or programId filter');
        if (filter.programId !== undefined && filter.programId !== TOKEN_PROGRAM)
          throw new RpcFailure(-32602, `Invalid param: unrecognized Token program id`);
        if (filter.mint !== undefined && !validator.tokenMint(filter.mint))
          throw new RpcFailure(-32602, 'Invalid param: could not find mint');
        const encoding = c.encoding ?? 'binary';
        if (encoding !== 'base64' && encoding !== 'base58')
          throw new RpcFailure(-32602, `Invalid params: encoding ${encoding} is not supported by this node`);
        const value = validator
          .tokenAccountsOf(owner)
          .filter((t) => filter.mint === undefined || t.mint === filter.mint)
          .map((t) => ({ pubkey: t.pubkey, account: account(t.pubkey, encoding) }));
        return { context: context(commitmentOf(c)), value };
      },
      getTokenAccountBalance: (p) => {
        const t = validator.tokenAccount(String(p[0]));
        if (!t) throw new RpcFailure(-32602, 'Invalid param: not a Token account');
        return { context: context(commitmentOf(cfg(p, 1))), value: uiAmount(t.amount, t.decimals) };
      },
      getBlocks: (p) => {
        const start = slotArg(p[0]);
        const hasEnd = typeof p[1] === 'number';
        const c = commitmentOf(cfg(p, hasEnd ? 2 : 1));
        if (c === 'processed') throw new RpcFailure(-32602, 'Method does not support commitment below `confirmed`');
        const top = head(c).slot;
        const end = hasEnd ? slotArg(p[1]) : top;
        if (end - start > 500_000n) throw new RpcFailure(-32602, `Slot range too large; max 500000`);
        return validator.blocks
          .filter((b) => b.slot >= start && b.slot <= end && b.slot <= top)
          .map((b) => num(b.slot));
      },
      getBlocksWithLimit: (p) => {
        const start = slotArg(p[0]);
        const limit = Number(slotArg(p[1]));
        const c = commitmentOf(cfg(p, 2));
        if (c === 'processed') throw new RpcFailure(-32602, 'Method does not support commitment below `confirmed`');
        if (limit > 500_000) throw new RpcFailure(-32602, 'Limit too large; max 500000');
        const top = head(c).slot;
        return validator.blocks
          .filter((b) => b.slot >= start && b.slot <= top)
          .slice(0, limit)
          .map((b) => num(b.slot));
      },
      getBlock: (p) => {
        const c = cfg(p, 1);
        const commitment = commitmentOf(c);
        if (commitment === 'processed')
          throw new RpcFailure(-32602, 'Method does not support commitment below `confirmed`');
        const b = blockAt(slotArg(p[0]), commitment);
        const details = c.transactionDetails ?? 'full';
        const encoding = c.encoding ?? 'json';
        if (!['json', 'base64', 'base58'].includes(encoding))
          throw new RpcFailure(-32602, `Invalid params: encoding ${encoding} is not supported by this node`);
        if (
          c.maxSupportedTransactionVersion === undefined &&
          b.txs.some((t) => t.version !== 'legacy') &&
          details !== 'none' &&
          details !== 'signatures'
        ) {
          throw new RpcFailure(
            -32015,
            'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
          );
        }
        const out: Record<string, unknown> = {
          blockHeight: num(b.blockHeight),
          blockTime: b.blockTime,
          blockhash: b.blockhash,
          parentSlot: num(b.parentSlot),
          previousBlockhash: b.previousBlockhash,
        };
        if (details === 'signatures') out.signatures = b.txs.map((t) => t.signature);
        else if (details === 'accounts')
          out.transactions = b.txs.map((t) => txAccounts(t, c.maxSupportedTransactionVersion !== undefined));
        else if (details === 'full')
          out.transactions = b.txs.map((t) => txFull(t, encoding, c.maxSupportedTransactionVersion !== undefined));
        else if (details !== 'none') throw new RpcFailure(-32602, `Invalid params: unknown variant \`${details}\``);
        if (c.rewards !== false && details !== 'none') out.rewards = [];
        return out;
      },
      getTransaction: (p) => {
        const c = cfg(p, 1);
        const found = validator.findTransaction(String(p[0]));
        if (!found?.block || found.block.slot > head(commitmentOf(c)).slot) return null;
        if (commitmentOf(c) === 'finalized' && !validator.isFinalized(found.block)) return null;
        const full = txFull(found.tx, c.encoding ?? 'json', c.maxSupportedTransactionVersion !== undefined);
        return { slot: num(found.block.slot), blockTime: found.block.blockTime, ...full };
      },
      getSignatureStatuses: (p) => {
        const sigs = p[0];
        if (!Array.isArray(sigs) || sigs.length > 256)
          throw new RpcFailure(-32602, 'Invalid params: at most 256 signatures');
        return {
          context: context('processed'),
          value: sigs.map((s) => {
            const f = validator.findTransaction(String(s));
            return f ? status(f.tx, f.block) : null;
          }),
        };
      },
      sendTransaction: (p) => {
        const c = cfg(p, 1);
        return validator.submit(decodeWire(p[0], c.encoding ?? 'base58'), { skipPreflight: c.skipPreflight === true });
      },
      simulateTransaction: (p) => {
        const c = cfg(p, 1);
        const tx = getTransactionDecoder().decode(decodeWire(p[0], c.encoding ?? 'base58'));
        if (c.sigVerify && c.replaceRecentBlockhash)
          throw new RpcFailure(-32602, 'sigVerify may not be used with replaceRecentBlockhash');
        const sim = validator.simulate(tx, c.sigVerify === true);
        const post = new Map(sim.postAccounts.map((a) => [a.address as string, a]));
        const accounts = c.accounts?.addresses.map((k) => {
          const a = post.get(k);
          return a
            ? {
                data: [b64.decode(a.data), 'base64'],
                executable: a.executable,
                lamports: num(a.lamports),
                owner: a.programAddress,
                rentEpoch: RENT_EPOCH_EXEMPT,
                space: a.data.length,
              }
            : account(k);
        });
        return {
          context: context('processed'),
          value: {
            err: sim.err,
            logs: sim.logs,
            accounts: accounts ?? null,
            unitsConsumed: num(sim.unitsConsumed),
            returnData: null,
            innerInstructions: null,
          },
        };
      },
      requestAirdrop: async (p) => validator.airdrop(String(p[0]), BigInt(Number(p[1]))),

      // ---- controls ----
      harness_produceSlots: (p) => num(validator.produceSlots(Number(p[0] ?? 1)).slot),
      harness_skipSlots: (p) => {
        validator.skipSlots(Number(p[0] ?? 1));
        return num(validator.currentSlot);
      },
      harness_dropTransaction: (p) =>
        validator.dropTransaction(String(p[0]), { replay: (p[1] as { replay?: boolean } | undefined)?.replay }),
      harness_finalize: () => {
        validator.finalize();
        return num(validator.finalized.slot);
      },
      harness_setFinalityDepth: (p) => {
        validator.finalityDepth = Number(p[0]);
        return validator.finalityDepth;
      },
      harness_setRent: (p) => {
        validator.svm.setRent(
          p[0] === null || p[0] === undefined ? Rent.default() : new Rent(BigInt(Number(p[0])), 1, 50),
        );
        return num(validator.svm.minimumBalanceForRentExemption(0n));
      },
      harness_setTime: (p) => {
        validator.time = p[0] === null ? null : Number(p[0]);
        return validator.time;
      },
      harness_autoProduce: (p) => {
        if (timer) clearInterval(timer);
        timer = null;
        const ms = Number(p[0] ?? 0);
        if (ms > 0) {
          timer = setInterval(() => validator.produceSlots(1), ms);
          timer.unref();
        }
        return ms;
      },
      harness_setListener: (p) => {
        const s = states[Number(p[0])];
        if (!s) throw new RpcFailure(-32602, `no listener ${p[0]}`);
        const o = (p[1] ?? {}) as { down?: boolean; lag?: number; pubsub?: boolean };
        if (o.down !== undefined) s.down = o.down;
        if (o.lag !== undefined) s.lag = o.lag;
        if (o.pubsub !== undefined) s.pubsub = o.pubsub;
        if (s.down || !s.pubsub) for (const ws of pubsubs[Number(p[0])]!.clients) ws.terminate();
        return { down: s.down, lag: s.lag, pubsub: s.pubsub };
      },
      harness_refuseMethods: (p) => {
        refused.clear();
        for (const m of Array.isArray(p[0]) ? p[0] : []) refused.add(String(m));
        return [...refused];
      },
      harness_counts: (p) => Object.fromEntries(states[Number(p[0] ?? 0)]!.counts),
      harness_resetCounts: () => {
        for (const s of states) s.counts.clear();
        return true;
      },
      harness_state: () => ({
        tip: num(validator.tip.slot),
        finalized: num(validator.finalized.slot),
        next_slot: num(validator.currentSlot),
        block_height: num(validator.tip.blockHeight),
      }),
    };

    const one = async (req: { id?: unknown; method?: string; params?: Params }) => {
      const id = req.id ?? null;
      const method = typeof req.method === 'string' ? req.method : '';
      state.counts.set(method, (state.counts.get(method) ?? 0) + 1);
      const fn = refused.has(method) ? undefined : methods[method];
      if (!fn) return { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } };
      try {
        return { jsonrpc: '2.0', id, result: await fn(Array.isArray(req.params) ? req.params : []) };
      } catch (err) {
        if (err instanceof RpcFailure)
          return {
            jsonrpc: '2.0',
            id,
            error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) },
          };
        return { jsonrpc: '2.0', id, error: { code: -32603, message: `Internal error: ${(err as Error).message}` } };
      }
    };
    return { state, one };
  };

  for (let i = 0; i < listeners; i++) {
    const state: ListenerState = { down: false, pubsub: true, lag: 0, counts: new Map() };
    states.push(state);
    const { one } = handler(state);
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const send = (status: number, body: unknown) => {
          const text = JSON.stringify(body);
          res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
          res.end(text);
        };
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return send(200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
        }
        const isControl = (r: unknown) =>
          typeof (r as { method?: unknown })?.method === 'string' &&
          (r as { method: string }).method.startsWith('harness_');
        if (state.down && !(Array.isArray(parsed) ? parsed.every(isControl) : isControl(parsed)))
          return send(503, { error: 'node is down (harness)' });
        if (Array.isArray(parsed)) return send(200, await Promise.all(parsed.map((r) => one(r))));
        send(200, await one(parsed as { id?: unknown; method?: string; params?: Params }));
      });
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    pubsubs.push(servePubsub(server, state, validator));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    servers.push(server);
  }
  return {
    urls: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`),
    wsUrls: servers.map((s) => `ws://127.0.0.1:${(s.address() as AddressInfo).port}`),
    validator,
    stop: async () => {
      if (timer) clearInterval(timer);
      for (const p of pubsubs) for (const ws of p.clients) ws.terminate();
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/** Solana's PubSub on `server`'s port: `slotSubscribe`/`slotUnsubscribe`, `slotNotification` on each change. */
function servePubsub(server: Server, state: ListenerState, validator: SolanaValidator): WebSocketServer {
  const wss = new WebSocketServer({ server });
  let nextId = 0;
  wss.on('connection', (ws: WebSocket) => {
    if (state.down || !state.pubsub) return ws.terminate();
    const subscriptions = new Set<number>();
    const notify = () => {
      const tip = validator.tip;
      const result = { parent: num(tip.parentSlot), root: num(validator.finalized.slot), slot: num(tip.slot) };
      for (const subscription of subscriptions)
        ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'slotNotification', params: { result, subscription } }));
    };
    validator.slotListeners.add(notify);
    ws.on('close', () => validator.slotListeners.delete(notify));
    ws.on('message', (data: Buffer) => {
      let req: { id?: unknown; method?: string; params?: unknown[] };
      try {
        req = JSON.parse(data.toString('utf8'));
      } catch {
        return ws.send(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
      }
      const id = req.id ?? null;
      if (req.method === 'slotSubscribe') {
        subscriptions.add(++nextId);
        return ws.send(JSON.stringify({ jsonrpc: '2.0', id, result: nextId }));
      }
      if (req.method === 'slotUnsubscribe')
        return ws.send(JSON.stringify({ jsonrpc: '2.0', id, result: subscriptions.delete(Number(req.params?.[0])) }));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } }));
    });
  });
  return wss;
}

/** A transaction as `getBlock` with `transactionDetails: "accounts"` shows it: signatures, annotated keys, balances. */
function txAccounts(t: LedgerTx, versioned: boolean) {
  return {
    meta: {
      err: t.err,
      fee: num(t.fee),
      postBalances: t.postBalances.map(num),
      postTokenBalances: t.postTokenBalances,
      preBalances: t.preBalances.map(num),
      preTokenBalances: t.preTokenBalances,
      status: t.err === null ? { Ok: null } : { Err: t.err },
    },
    transaction: {
      accountKeys: t.accountKeys.map((k) => ({
        pubkey: k.pubkey,
        signer: k.signer,
        source: 'transaction',
        writable: k.writable,
      })),
      signatures: signaturesOf(t),
    },
    ...(versioned ? { version: t.version } : {}),
  };
}

function txFull(t: LedgerTx, encoding: string, versioned: boolean) {
  const meta = {
    computeUnitsConsumed: num(t.computeUnitsConsumed),
    err: t.err,
    fee: num(t.fee),
    innerInstructions: t.innerInstructions.map((g) => ({
      index: g.index,
      instructions: g.instructions.map((ix) => ({
        programIdIndex: ix.programIdIndex,
        accounts: ix.accounts,
        data: b58.decode(ix.data),
        stackHeight: ix.stackHeight,
      })),
    })),
    loadedAddresses: { readonly: [], writable: [] },
    logMessages: t.logMessages,
    postBalances: t.postBalances.map(num),
    postTokenBalances: t.postTokenBalances,
    preBalances: t.preBalances.map(num),
    preTokenBalances: t.preTokenBalances,
    rewards: [],
    status: t.err === null ? { Ok: null } : { Err: t.err },
  };
  const transaction =
    encoding === 'base64'
      ? [b64.decode(t.wire), 'base64']
      : encoding === 'base58'
        ? [b58.decode(t.wire), 'base58']
        : {
            message: {
              accountKeys: t.accountKeys.map((k) => k.pubkey),
              header: t.header,
              instructions: t.instructions.map((ix) => ({
                programIdIndex: ix.programIdIndex,
                accounts: ix.accounts,
                data: b58.decode(ix.data),
                stackHeight: null,
              })),
              recentBlockhash: t.recentBlockhash,
              ...(t.version === 0 ? { addressTableLookups: [] } : {}),
            },
            signatures: signaturesOf(t),
          };
  return { meta, transaction, ...(versioned ? { version: t.version } : {}) };
}

function signaturesOf(t: LedgerTx): string[] {
  const tx = getTransactionDecoder().decode(t.wire);
  return Object.values(tx.signatures).map((s) =>
    s ? b58.decode(s) : '1111111111111111111111111111111111111111111111111111111111111111',
  );
}

/** A private node in this process: a fresh ledger served on `listeners` URLs. */
export async function startSolanaNode(opts: { listeners?: number; finalityDepth?: number } = {}): Promise<SolanaNode> {
  return serveSolana(new SolanaValidator({ finalityDepth: opts.finalityDepth }), opts.listeners ?? 2);
}

/** A node in a child process (its ledger work is not counted in this process's CPU): the shared node of a run, benchmarks. */
export async function spawnSolanaNode(): Promise<{ urls: string[]; stop(): Promise<void> }> {
  const script = join(KASSE_HOME, 'test', 'harness', 'solana-node.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const urls = await new Promise<string[]>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { urls: string[] }).urls);
    });
    child.once('exit', (code) => reject(new Error(`solana test node exited (${code})`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    urls,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

registerInfrastructure(async (files) => {
  if (!files.some((f) => f.replaceAll('\\', '/').includes('/solana/'))) return null;
  const node = await spawnSolanaNode();
  return { env: { [SOLANA_RPC_ENV]: node.urls.join(',') }, stop: node.stop };
});

/** The shared node's URLs (set by `npm test`). */
export function sharedSolanaRpc(): string[] {
  const urls = process.env[SOLANA_RPC_ENV];
  if (!urls) throw new Error(`${SOLANA_RPC_ENV} is not set: run Solana tests with \`npm test -- test/solana/…\``);
  return urls.split(',');
}
