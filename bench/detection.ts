/**
 * How soon a payment is seen, with push (the network lists `ws_urls`: Hardhat's WebSocket on its HTTP port, the
 * Solana test node's PubSub) and without (polling only), at the default poll interval (10 s), with the workers on
 * their timers as in production.
 *
 * EVM (Hardhat, automine; a tier of 2 confirmations): from the block holding the payment being mined to
 * `payment.detected` being published (its row committed), and from the next block (the confirming one) being mined
 * to `payment.paid`. Solana (test node in a child process; SOL above 100 USD, paid at finalized): from the slot
 * holding the payment being produced to `payment.detected`, and from that slot being finalized to `payment.paid`.
 * Under polling each step starts at a random phase of the poll cycle. Publication is seen by reading the events
 * table every 5 ms. The watcher's RPC calls per block (slot) with push are counted at 1,000 and 100,000 open deposit
 * addresses while blocks come at the chain's pace (EVM: one every 0.5 s for 20 blocks; Solana: a slot every 400 ms
 * for 10 s), and over the samples. With push, the checkout page (Chromium, its event stream) shows each status: how long
 * after publication the page's status changed is recorded too.
 */
import { sql } from 'kysely';
import { chromium, type Page } from 'playwright-core';
import { startWorkers } from '../src/workers/index.ts';
import type { Db } from '../src/db/index.ts';
import { CHROMIUM_ARGS } from '../test/harness/browser.ts';
import { startEvmKasse } from '../test/harness/evm-kasse.ts';
import { startHardhatNode, type HardhatNode } from '../test/harness/hardhat.ts';
import { spawnSolanaNode } from '../test/harness/solana.ts';
import { startSolanaKasse } from '../test/harness/solana-kasse.ts';
import { benchDatabase } from './_pg.ts';
import { growOpenAddresses, stats, type OpenAddresses } from './_watchers.ts';

const POLL_MS = 10_000;
const SIZES = (process.env.BENCH_DETECTION_SIZES ?? '1000,100000').split(',').map(Number);
const PUSH_SAMPLES = Number(process.env.BENCH_DETECTION_PUSH_SAMPLES ?? 20);
const POLL_SAMPLES = Number(process.env.BENCH_DETECTION_POLL_SAMPLES ?? 6);
const WATCHER_CALLS = {
  evm: ['eth_blockNumber', 'eth_getLogs', 'eth_getBlockByNumber'],
  solana: ['getBlocksWithLimit', 'getBlock', 'batch:getBlock', 'getSlot'],
};

type Path = 'push' | 'poll';
interface Sample {
  detected: number;
  paid: number;
  /** Publication → the checkout page showing it (push only). */
  page?: { detected: number; paid: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** When `type` of payment `id` is published (its events row visible), as Date.now(). */
async function published(db: Db, id: string, type: string): Promise<number> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const row = await db
      .selectFrom('events')
      .select('id')
      .where('type', '=', type)
      .where(sql<string>`data->>'id'`, '=', id)
      .executeTakeFirst();
    if (row) return Date.now();
    if (Date.now() > deadline) throw new Error(`${type} of ${id} not published within 60 s`);
    await sleep(5);
  }
}

/** Opens the checkout page of a payment and records (Date.now()) each status it shows. */
async function watchPage(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.evaluate(() => {
    const seen: Record<string, number> = {};
    (window as unknown as { seen: typeof seen }).seen = seen;
    const main = document.querySelector<HTMLElement>('[data-events]');
    if (!main) throw new Error('no event stream on the checkout page');
    new MutationObserver(() => {
      const s = main.dataset.status!;
      seen[s] ??= Date.now();
    }).observe(main, { attributes: true, attributeFilter: ['data-status'] });
  });
}

/** When the page first showed one of `statuses`. */
async function pageSeen(page: Page, ...statuses: string[]): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const t = await page.evaluate(
      (list) =>
        Math.min(...list.map((s) => (window as unknown as { seen: Record<string, number> }).seen[s] ?? Infinity)),
      statuses,
    );
    if (Number.isFinite(t)) return t;
    if (Date.now() > deadline) throw new Error(`the checkout page never showed ${statuses.join(' or ')}`);
    await sleep(10);
  }
}

/** A random phase of the poll cycle (polling), or of a few hundred ms (push). */
const phase = (path: Path) => sleep(Math.random() * (path === 'poll' ? POLL_MS : 200));

interface Family {
  db: Db;
  merchantId: string;
  open: OpenAddresses;
  /** Creates a payment; returns its id and checkout URL. */
  create(order: string): Promise<{ id: string; url: string; send(): Promise<void> }>;
  /** Lands what was sent in a block (slot); returns when it is on the chain. */
  land(): Promise<void>;
  /** Makes the payment's block confirming (EVM: one more block; Solana: finalized). */
  confirm(): Promise<void>;
  calls(): number;
  height(): Promise<number>;
  /** Produces blocks (slots) at the chain's pace for a while, nothing paid in them. */
  steady(): Promise<void>;
  close(): Promise<void>;
}

async function samples(f: Family, path: Path, n: number, page: Page | null, tag: string) {
  const out: Sample[] = [];
  const calls0 = f.calls();
  const height0 = await f.height();
  for (let i = 0; i < n; i++) {
    const p = await f.create(`${tag}-${i}`);
    if (page) await watchPage(page, p.url);
    await p.send();
    await phase(path);
    await f.land();
    const landed = Date.now();
    const detected = await published(f.db, p.id, 'payment.detected');
    await phase(path);
    await f.confirm();
    const confirmed = Date.now();
    const paid = await published(f.db, p.id, 'payment.paid');
    const s: Sample = { detected: detected - landed, paid: paid - confirmed };
    if (page)
      s.page = {
        detected: (await pageSeen(page, 'detected', 'confirming', 'paid')) - detected,
        paid: (await pageSeen(page, 'paid')) - paid,
      };
    out.push(s);
  }
  const blocks = (await f.height()) - height0;
  return { out, callsPerBlock: Math.round(((f.calls() - calls0) / blocks) * 100) / 100, blocks };
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!);
};

function summary(out: Sample[]) {
  const d = out.map((s) => s.detected);
  const p = out.map((s) => s.paid);
  return {
    detected_p50_ms: pct(d, 0.5),
    detected_p99_ms: pct(d, 0.99),
    paid_p50_ms: pct(p, 0.5),
    paid_p99_ms: pct(p, 0.99),
    detected_ms: stats(d),
    paid_ms: stats(p),
  };
}

async function measure(start: (path: Path) => Promise<Family>, browserPage: Page) {
  const bySize: Record<string, object> = {};
  let push: Sample[] = [];
  const f = await start('push');
  try {
    for (const size of SIZES) {
      await growOpenAddresses(f.db, f.merchantId, size, f.open);
      const r = await samples(f, 'push', PUSH_SAMPLES, size === SIZES[0] ? browserPage : null, `push-${size}`);
      if (size === SIZES[0]) push = r.out;
      const calls0 = f.calls();
      const height0 = await f.height();
      await f.steady();
      const blocks = (await f.height()) - height0;
      bySize[String(size)] = {
        ...summary(r.out),
        rpc_calls_per_block: Math.round(((f.calls() - calls0) / blocks) * 100) / 100,
        steady_blocks: blocks,
        rpc_calls_per_block_while_sampling: r.callsPerBlock,
      };
      process.stderr.write(`detection: push at ${size}: ${JSON.stringify(bySize[String(size)])}\n`);
    }
  } finally {
    await f.close();
  }
  const g = await start('poll');
  let poll: Awaited<ReturnType<typeof samples>>;
  try {
    await growOpenAddresses(g.db, g.merchantId, SIZES[0]!, g.open);
    poll = await samples(g, 'poll', POLL_SAMPLES, null, 'poll');
  } finally {
    await g.close();
  }
  const pages = push.flatMap((s) => (s.page ? [s.page] : []));
  return {
    push: { ...summary(push), by_open_addresses: bySize },
    poll: { ...summary(poll.out), rpc_calls_per_block: poll.callsPerBlock, open_addresses: SIZES[0] },
    checkout_page_ms_after_publication: {
      detected: stats(pages.map((p) => p.detected)),
      paid: stats(pages.map((p) => p.paid)),
      p99_ms: pct(
        pages.flatMap((p) => [p.detected, p.paid]),
        0.99,
      ),
    },
  };
}

async function evm(node: HardhatNode, page: Page) {
  return measure(async (path) => {
    const k = await startEvmKasse({
      rpcUrl: node.url,
      wsUrls: path === 'push' ? [node.url.replace(/^http/, 'ws')] : undefined,
      pollIntervalMs: POLL_MS,
      tiers: [{ max_usd_cents: null, confirmations: 2 }],
      finality: 64,
    });
    const workers = startWorkers(k.t.kasse);
    const rpc = k.adapter.rpc();
    return {
      db: k.t.kasse.db,
      merchantId: k.m.id,
      open: {
        chain: 'base',
        token: 'base:usdc',
        address: sql`'0x' || substr(md5('a' || g), 1, 20) || substr(md5('b' || g), 1, 20)`,
        firstIndex: 1_000_000_000_000,
        rate: '1',
        rateSource: 'peg',
        confirmations: 2,
      },
      async create(order) {
        const res = await k.m.test.post('/payments', {
          price_amount: 500,
          price_currency: 'USD',
          order_id: order,
          chain: 'base',
          token: 'base:usdc',
        });
        const a = res.body.attempts[0];
        return {
          id: res.body.id,
          url: res.body.checkout_url,
          send: async () => {
            await k.chain.setAutomine(false);
            await k.chain.sendToken(k.payer, k.usdc, a.address, BigInt(a.pay_amount));
          },
        };
      },
      land: async () => {
        await k.chain.mine(1);
        await k.chain.setAutomine(true);
      },
      confirm: () => k.chain.mine(1),
      steady: async () => {
        for (let i = 0; i < 20; i++) {
          await k.chain.mine(1);
          await sleep(500);
        }
      },
      calls: () => WATCHER_CALLS.evm.reduce((n, m) => n + (rpc.counts.get(m) ?? 0), 0),
      height: async () => Number(await k.chain.client.getBlockNumber()),
      close: async () => {
        await workers.stop();
        await k.close();
      },
    };
  }, page);
}

async function solana(page: Page) {
  const node = await spawnSolanaNode();
  try {
    return await measure(async (path) => {
      const k = await startSolanaKasse({
        node: { ...node, stop: async () => {} },
        wsUrls: path === 'push' ? node.urls.map((u) => u.replace(/^http/, 'ws')) : undefined,
        pollIntervalMs: POLL_MS,
      });
      const workers = startWorkers(k.t.kasse);
      const rpc = k.adapter.rpc();
      const payer = await k.payer(10n ** 13n);
      return {
        db: k.t.kasse.db,
        merchantId: k.m.id,
        open: {
          chain: 'solana',
          token: 'solana:usdc',
          address: sql`'Bench' || substr(md5('a' || g), 1, 19) || substr(md5('b' || g), 1, 19)`,
          firstIndex: 1_000_000_000,
          rate: '1',
          rateSource: 'peg',
          confirmations: 1,
        },
        async create(order) {
          const res = await k.m.test.post('/payments', {
            price_amount: 20_000,
            price_currency: 'USD',
            order_id: order,
            chain: 'solana',
            token: 'solana:sol',
          });
          const a = res.body.attempts[0];
          return {
            id: res.body.id,
            url: res.body.checkout_url,
            send: async () => {
              await k.chain.sendSol(payer, a.address, BigInt(a.pay_amount));
            },
          };
        },
        land: async () => {
          await k.chain.produce();
        },
        confirm: async () => {
          await k.chain.finalize();
        },
        calls: () => WATCHER_CALLS.solana.reduce((n, m) => n + (rpc.counts.get(m) ?? 0), 0),
        steady: async () => {
          await k.chain.rpc('harness_autoProduce', [400]);
          await sleep(10_000);
          await k.chain.rpc('harness_autoProduce', [0]);
        },
        height: async () => (await k.chain.state()).next_slot,
        close: async () => {
          await workers.stop();
          await k.close();
        },
      };
    }, page);
  } finally {
    await node.stop();
  }
}

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  const node = await startHardhatNode();
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
  const page = await browser.newPage();
  try {
    const e = await evm(node, page);
    const s = await solana(page);
    return {
      goal: 'push: p50 ≤ 250 ms and p99 ≤ 1,000 ms for detected and paid; RPC calls per block unchanged (EVM ≤ 3, Solana ≈ 1); the checkout shows each status within 250 ms',
      poll_interval_ms: POLL_MS,
      evm: e,
      solana: s,
      note: 'Each step is timed from the block (slot) being mined (produced; for paid on Solana, finalized) to the event row being visible (read every 5 ms). Polling steps start at a random phase of the 10 s poll. rpc_calls_per_block counts the watcher methods (EVM: eth_blockNumber, eth_getLogs, eth_getBlockByNumber; Solana: getBlocksWithLimit, getBlock, getSlot) per block (slot) produced at a steady pace (EVM a block every 0.5 s, Solana a slot every 400 ms) with push; rpc_calls_per_block_while_sampling over the samples (one or two blocks each, and the ticks of the 10 s poll), and under poll. The checkout page times are from publication to the page (Chromium, server-sent events) showing the status.',
    };
  } finally {
    await browser.close();
    await node.stop();
    await pg.stop();
  }
}
