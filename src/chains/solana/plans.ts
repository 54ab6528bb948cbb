/** What a Solana transfer's plan is, and the instructions it becomes once what it needs is checked (sweeps too). */
import { address, type Address, type Instruction, type KeyPairSigner } from '@solana/kit';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { formatUnits } from '../../core/money.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { PermanentTransferError } from '../ports.ts';
import { errorText } from '../queue.ts';
import type { NetworkConfig } from '../types.ts';
import type { SolanaKeys } from './keys.ts';
import { methodUnavailable, type SolanaRpc } from './rpc.ts';
import {
  associatedTokenAccount,
  emptyTokenAccountInstructions,
  openTokenAccountInstruction,
  readTokenAccount,
  signerOf,
  solTransferInstruction,
  transferInstructions,
  type RpcAccount,
  TOKEN_PROGRAM_ADDRESS,
} from './transactions.ts';

export type Plan =
  | { kind: 'transfer'; token: string; destination: string; amount: string }
  | { kind: 'account'; owner: string; mint: string }
  | { kind: 'sweep'; treasury: string; items: Array<{ index: string; address: string }>; built?: SweepSummary }
  | { kind: 'relay' }
  /** A subscription charge: `amount` from the payer's token account `source` by the grant's delegate. */
  | { kind: 'charge'; token: string; terms: string; source: string; destination: string; amount: string };

/** A plan turned into instructions, or nothing to send (`skip`: settled as `ok` says), or not now (`wait`). */
export type Built =
  | { instructions: Instruction[]; summary?: SweepSummary }
  | { skip: string; ok: boolean; summary?: SweepSummary }
  | { wait: string };

/**
 * What a sweep version moves: lamports and token units to the treasury, token accounts closed, rent recovered; and
 * the token balances it leaves because no sweep can move them (`left`).
 */
export interface SweepSummary {
  lamports: string;
  tokens: Record<string, string>;
  closed: string[];
  rent: string;
  left: SweepLeft[];
  /**
   * Optional methods the node did not serve, which the sweep did without (`getTokenAccountsByOwner`: only each key's
   * associated token accounts, known by derivation, were looked at). Absent when it had all it asks for.
   */
  missing?: string[];
}

/** A token balance a sweep cannot move: a mint the network does not configure, or a frozen account. */
export interface SweepLeft {
  account: string;
  mint: string;
  amount: string;
  reason: string;
}

/** What building a plan reads: the sender's network, mode, keys, log and RPC. */
export interface PlanContext {
  network: NetworkConfig;
  mode: Mode;
  keys: SolanaKeys;
  log: Logger;
  rpc: () => SolanaRpc;
}

/** NOTE: Solana's base fee, per signature (no priority fee is added). */
export const LAMPORTS_PER_SIGNATURE = 5000n;

/** A transfer's destination as an address; one that is not fails the transfer for good. */
function destinationOf(destination: string): Address {
  try {
    return address(destination);
  } catch (err) {
    throw new PermanentTransferError(`${destination} is not a Solana address: ${errorText(err)}`);
  }
}

async function accounts(rpc: () => SolanaRpc, keys: string[]): Promise<Array<RpcAccount | null>> {
  const out: Array<RpcAccount | null> = [];
  for (let i = 0; i < keys.length; i += 100) {
    const r = await rpc().request<{ value: Array<RpcAccount | null> }>('getMultipleAccounts', [
      keys.slice(i, i + 100),
      { encoding: 'base64', commitment: 'confirmed' },
    ]);
    out.push(...r.value);
  }
  return out;
}

/** The instructions of a plan, after checking what they need; `skip` when nothing is to be sent. */
export async function planInstructions(
  ctx: PlanContext,
  plan: Exclude<Plan, { kind: 'relay' }>,
  hot: KeyPairSigner,
): Promise<Built> {
  if (plan.kind === 'account') {
    const ata = await associatedTokenAccount(plan.owner, plan.mint);
    const [existing] = await accounts(ctx.rpc, [ata]);
    if (existing) return { skip: 'the token account is already open', ok: true };
    return { instructions: [openTokenAccountInstruction(hot, plan.owner, plan.mint, ata)] };
  }
  if (plan.kind === 'transfer') {
    const token = ctx.network.tokens.find((t) => t.id === plan.token);
    if (!token) return { skip: `${plan.token} is no longer configured`, ok: false };
    const amount = BigInt(plan.amount);
    const [wallet, tokenAccount] = await accounts(ctx.rpc, [
      hot.address,
      ...(token.kind === 'spl' ? [await associatedTokenAccount(hot.address, token.contract!)] : []),
    ]);
    const lamports = BigInt(wallet?.lamports ?? 0);
    const needLamports = (token.kind === 'native' ? amount : 0n) + 2n * LAMPORTS_PER_SIGNATURE + 2_039_280n;
    if (lamports < needLamports)
      return {
        wait: `hot wallet ${hot.address} holds ${formatUnits(lamports, 9)} SOL; the transfer needs up to ${formatUnits(needLamports, 9)} SOL`,
      };
    if (token.kind === 'spl') {
      const held = readTokenAccount(tokenAccount ?? null)?.amount ?? 0n;
      if (held < amount)
        return { wait: `hot wallet ${hot.address} holds ${held} of ${token.id}, the transfer needs ${amount}` };
    }
    return { instructions: await transferInstructions(hot, hot, token, destinationOf(plan.destination), amount) };
  }
  if (plan.kind === 'charge') return chargeInstructions(ctx, plan, hot);
  return sweepInstructions(ctx, plan, hot);
}

/**
 * A charge: the merchant's receiving token account opened if needed (the hot wallet pays its rent and the fee), then
 * a TransferChecked from the payer's account signed by the grant's delegate. Nothing else can be moved by it.
 */
async function chargeInstructions(
  ctx: PlanContext,
  plan: Extract<Plan, { kind: 'charge' }>,
  hot: KeyPairSigner,
): Promise<Built> {
  const token = ctx.network.tokens.find((t) => t.id === plan.token);
  if (!token || token.kind !== 'spl' || !token.contract)
    return { skip: `${plan.token} is no longer configured`, ok: false };
  const [wallet] = await accounts(ctx.rpc, [hot.address]);
  const needLamports = 2n * LAMPORTS_PER_SIGNATURE + 2_039_280n;
  if (BigInt(wallet?.lamports ?? 0) < needLamports)
    return { wait: `hot wallet ${hot.address} holds ${formatUnits(BigInt(wallet?.lamports ?? 0), 9)} SOL` };
  const delegate = await signerOf(ctx.keys.grantDelegate(ctx.mode, plan.terms));
  const mint = address(token.contract);
  const to = await associatedTokenAccount(plan.destination, mint);
  return {
    instructions: [
      openTokenAccountInstruction(hot, plan.destination, token.contract, to),
      getTransferCheckedInstruction({
        source: address(plan.source),
        mint,
        destination: to,
        authority: delegate,
        amount: BigInt(plan.amount),
        decimals: token.decimals,
      }),
    ],
  };
}

/**
 * Everything the swept keys hold: every token account of a configured mint a key owns (its associated one, and any
 * other a payer opened for it; found with getTokenAccountsByOwner) emptied to the treasury and closed, then SOL.
 * What cannot be moved (another mint, a frozen account) is left and listed in the summary's `left`. A node that does
 * not serve getTokenAccountsByOwner (hosted providers often disable it) gets each key's associated token accounts,
 * which Kasse knows by derivation, read with getMultipleAccounts; the summary's `missing` says so.
 */
async function sweepInstructions(
  ctx: PlanContext,
  plan: Extract<Plan, { kind: 'sweep' }>,
  hot: KeyPairSigner,
): Promise<Built> {
  const mints = new Map(ctx.network.tokens.filter((t) => t.kind === 'spl' && t.contract).map((t) => [t.contract!, t]));
  const wallets = await accounts(
    ctx.rpc,
    plan.items.map((i) => i.address),
  );
  const instructions: Instruction[] = [];
  const summary: SweepSummary = { lamports: '0', tokens: {}, closed: [], rent: '0', left: [] };
  const treasuryAtas = new Map<string, Address>();
  let lamports = 0n;
  let rent = 0n;
  const owned = await ownedTokenAccounts(
    ctx,
    plan.items.map((i) => i.address),
    [...mints.keys()],
  );
  if (owned.missing) {
    summary.missing = [owned.missing];
    ctx.log.warn(
      { chain: ctx.network.id, mode: ctx.mode, missing: owned.missing, keys: plan.items.map((i) => i.address) },
      'the node does not serve getTokenAccountsByOwner: the sweep takes the associated token accounts only',
    );
  }
  for (const [i, item] of plan.items.entries()) {
    const owner = await signerOf(ctx.keys.deposit(ctx.mode, BigInt(item.index)));
    if (owner.address !== item.address)
      throw new Error(`deposit key ${item.index} does not derive to ${item.address} from this seed`);
    for (const { pubkey, account } of owned.byOwner.get(item.address) ?? []) {
      const t = readTokenAccount(account);
      if (!t) continue;
      const m = mints.get(t.mint);
      if (!m || t.frozen) {
        if (t.amount > 0n)
          summary.left.push({
            account: pubkey,
            mint: t.mint,
            amount: t.amount.toString(),
            reason: m ? 'the account is frozen' : 'the mint is not configured on this network',
          });
        continue;
      }
      let to = treasuryAtas.get(t.mint);
      if (!to && t.amount > 0n) {
        to = await associatedTokenAccount(plan.treasury, t.mint);
        treasuryAtas.set(t.mint, to);
        instructions.push(openTokenAccountInstruction(hot, plan.treasury, t.mint, to));
      }
      // An account whose close authority is someone else is emptied but stays open (its rent is not Kasse's).
      const closable = t.closeAuthority === null || t.closeAuthority === item.address;
      instructions.push(
        ...emptyTokenAccountInstructions(
          owner,
          pubkey,
          t.mint,
          m.decimals,
          t.amount,
          to ?? pubkey,
          closable ? hot.address : null,
        ),
      );
      if (t.amount > 0n) summary.tokens[m.id] = (BigInt(summary.tokens[m.id] ?? '0') + t.amount).toString();
      if (closable) {
        summary.closed.push(pubkey);
        rent += BigInt(account.lamports);
      }
    }
    const balance = BigInt(wallets[i]?.lamports ?? 0);
    if (balance > 0n) {
      instructions.push(solTransferInstruction(owner, plan.treasury, balance));
      lamports += balance;
    }
  }
  summary.lamports = lamports.toString();
  summary.rent = rent.toString();
  if (summary.left.length > 0)
    ctx.log.warn(
      { chain: ctx.network.id, mode: ctx.mode, left: summary.left },
      'solana sweep leaves token balances it cannot move',
    );
  if (instructions.length === 0) return { skip: 'nothing left to sweep', ok: true, summary };
  return { instructions, summary };
}

type OwnedAccount = { pubkey: Address; account: RpcAccount };

/**
 * The SPL Token accounts of each of `owners`: all of them (any mint) with getTokenAccountsByOwner, or, when the node
 * does not serve it (`missing` names it), their associated accounts of `mints` that exist, in one getMultipleAccounts
 * per 100.
 */
async function ownedTokenAccounts(
  ctx: PlanContext,
  owners: string[],
  mints: string[],
): Promise<{ byOwner: Map<string, OwnedAccount[]>; missing: string | null }> {
  const byOwner = new Map<string, OwnedAccount[]>();
  try {
    for (const owner of owners) byOwner.set(owner, await tokenAccountsOf(ctx.rpc, owner));
    return { byOwner, missing: null };
  } catch (err) {
    if (!methodUnavailable(err)) throw err;
  }
  const derived = await Promise.all(
    owners.flatMap((owner) =>
      mints.map(async (mint) => ({ owner, pubkey: await associatedTokenAccount(owner, mint) })),
    ),
  );
  const found = await accounts(
    ctx.rpc,
    derived.map((d) => d.pubkey),
  );
  byOwner.clear();
  derived.forEach((d, i) => {
    const account = found[i];
    if (account) byOwner.set(d.owner, [...(byOwner.get(d.owner) ?? []), { pubkey: d.pubkey, account }]);
  });
  return { byOwner, missing: 'getTokenAccountsByOwner' };
}

/** The SPL Token accounts whose owner is `owner` (any mint). */
async function tokenAccountsOf(rpc: () => SolanaRpc, owner: string): Promise<OwnedAccount[]> {
  const r = await rpc().request<{ value: OwnedAccount[] }>('getTokenAccountsByOwner', [
    owner,
    { programId: TOKEN_PROGRAM_ADDRESS },
    { encoding: 'base64', commitment: 'confirmed' },
  ]);
  return r.value;
}
