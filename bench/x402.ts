/**
 * The x402 facilitator on the simulator (verification real, settlement simulated), Kasse in a child process with the
 * default configuration (bench/servers/api.ts), against baselines measured in the same run:
 *
 * - `POST /x402/verify` one at a time (p50, p99) against a bare EIP-712 signature recovery of the same
 *   authorizations in this process, in alternating rounds (goal: verify p50 ≤ 1.3 × the bare recovery's), and a bare
 *   Fastify route answering the same body (the HTTP round trip every verify pays on top of the recovery);
 * - `POST /x402/settle` one at a time (p50, p99);
 * - settles per second at 16 in flight (fresh authorizations, each settled once) against `POST /payments` creations
 *   per second at 16 connections, alternating rounds, each side's median round (goal: settles ≥ 0.5 × creations, with
 *   the settle p99 at that rate ≤ 100 ms), with the server's and PostgreSQL's CPU per request, and the machine's load
 *   average around every round (the machine is shared: a disturbed round shows);
 * - the same settles spread over 16 merchants (one in flight each), which shows what bounds one merchant's rate: its
 *   settlements are recorded one after another (the running x402 total that makes each payment's cents exact).
 */
import { loadavg } from 'node:os';
import pgModule from 'pg';
import { getAddress, recoverTypedDataAddress, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../test/harness/hardhat.ts';
import { authorizationBody } from '../test/harness/x402.ts';
import { startChild } from './_child.ts';
import { postgresCpu, postmasterOf } from './_cpu.ts';
import { load, type LoadResult, type Target } from './_load.ts';
import { benchDatabase } from './_pg.ts';
import { paymentBody } from './payments.ts';

const NETWORK = 'eip155:84532';
const USDC = getAddress('0x036CbD53842c5426634e7929541eC2318f3dCF7e');
const DOMAIN = { name: 'USDC', version: '2', chainId: 84532, verifyingContract: USDC } as const;
const IN_FLIGHT = 16;
const pgClient = pgModule.Client;
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const round = (x: number) => Math.round(x * 1000) / 1000;
const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return { p50_ms: round(quantile(s, 0.5)), p99_ms: round(quantile(s, 0.99)), n: s.length };
};
const load1 = () => Math.round(loadavg()[0]! * 100) / 100;
const median = <T>(xs: T[], by: (x: T) => number) => [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)]!;

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const srv = await startChild<{ test: string; bare: string; key: string; keys: string[] }>('bench/servers/api.ts', {
    DATABASE_URL: pg.url,
    BENCH_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    BENCH_MERCHANTS: String(IN_FLIGHT),
  });
  try {
    const headersOf = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
    const headers = headersOf(srv.info.key);
    const payToOf = async (key: string) =>
      (
        (await (
          await fetch(`${srv.info.test}/x402/pay_to?network=${NETWORK}`, { headers: headersOf(key) })
        ).json()) as {
          pay_to: Hex;
        }
      ).pay_to;
    const payTo = await payToOf(srv.info.key);
    const agent = privateKeyToAccount(generatePrivateKey());
    const now = Math.floor(Date.now() / 1000);
    const sign = async (to: Hex = payTo) => {
      const signed = await authorizationBody({
        signer: agent,
        domain: DOMAIN,
        network: NETWORK,
        asset: USDC,
        payTo: to,
        value: 1000n,
        validAfter: now - 600,
        validBefore: now + 3600,
        maxTimeoutSeconds: 300,
        resource: { url: 'https://api.example/weather', description: 'Weather' },
      });
      return { ...signed, body: JSON.stringify(signed.body) };
    };
    const N = Number(process.env.BENCH_X402_N ?? 300);
    const THROUGHPUT_N = Number(process.env.BENCH_X402_THROUGHPUT_N ?? 1500);
    const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
    const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
    const signed: Array<Awaited<ReturnType<typeof sign>>> = [];
    for (let i = 0; i < N * 2 + THROUGHPUT_N * ROUNDS + 20; i++) signed.push(await sign());
    // For the spread rounds: request i goes to merchant i mod 16, its authorization paying that merchant.
    const spreadPayTo = await Promise.all(srv.info.keys.map(payToOf));
    const spread: string[][] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const bodies: string[] = [];
      for (let i = 0; i < THROUGHPUT_N; i++) bodies.push((await sign(spreadPayTo[i % IN_FLIGHT]!)).body);
      spread.push(bodies);
    }
    const post = async (path: string, body: string) => {
      const res = await fetch(`${srv.info.test}${path}`, { method: 'POST', headers, body });
      const json = (await res.json()) as { isValid?: boolean; success?: boolean };
      if (res.status !== 200 || json.isValid === false || json.success === false)
        throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    };
    const timed = async <T>(items: T[], fn: (s: T) => Promise<unknown>) => {
      const ms: number[] = [];
      for (const s of items) {
        const start = performance.now();
        await fn(s);
        ms.push(performance.now() - start);
      }
      return ms;
    };
    const recover = (s: (typeof signed)[number]) =>
      recoverTypedDataAddress({
        domain: DOMAIN,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: s.message,
        signature: s.signature,
      });

    // Warm-up of every path (the route's compiled schemas, the address book, prepared statements).
    for (const s of signed.slice(0, 20)) await post('/x402/verify', s.body);
    for (const s of signed.slice(0, 20)) await recover(s);
    let next = 20;
    const take = (n: number) => signed.slice(next, (next += n));

    // Verify against the bare recovery of the same authorizations, in alternating rounds.
    const verifyItems = take(N);
    const recoverRounds: number[][] = [];
    const verifyRounds: number[][] = [];
    const echoRounds: number[][] = [];
    const echo = async (body: string) => {
      const res = await fetch(`${srv.info.bare}/bare-echo`, { method: 'POST', headers, body });
      await res.json();
    };
    const per = Math.ceil(N / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      const items = verifyItems.slice(r * per, (r + 1) * per);
      recoverRounds.push(await timed(items, recover));
      echoRounds.push(await timed(items, (s) => echo(s.body)));
      verifyRounds.push(await timed(items, (s) => post('/x402/verify', s.body)));
    }
    const bare = summary(recoverRounds.flat());
    const roundTrip = summary(echoRounds.flat());
    const verify = summary(verifyRounds.flat());
    const settle = summary(await timed(take(N), (s) => post('/x402/settle', s.body)));

    // Settles per second at 16 in flight against payment creations at 16 connections, alternating rounds.
    const cpuUrl = `${srv.info.bare}/cpu`;
    const postmaster = await postmasterOf(pg.url);
    const cpu = async () => {
      const u = (await (await fetch(cpuUrl)).json()) as { user: number; system: number; statements: number };
      return { us: u.user + u.system, statements: u.statements };
    };
    // Every settle of a round must have made its payment: an answer of 200 may be a refusal.
    const db = new pgClient({ connectionString: pg.url });
    await db.connect();
    const settledRows = async () =>
      Number((await db.query(`SELECT count(*) AS n FROM x402_settlements WHERE status = 'settled'`)).rows[0].n);
    const measure = async (target: Target) => {
      const before = { server: await cpu(), postgres: postgresCpu(postmaster) * 1e6, load: load1() };
      const settledBefore = await settledRows();
      const r: LoadResult = await load(target);
      const total = Math.max(1, r.total);
      const after = await cpu();
      const settledNow = (await settledRows()) - settledBefore;
      if (target.url.endsWith('/x402/settle') && settledNow !== r.total)
        throw new Error(`${settledNow} of ${r.total} settles made a payment`);
      return {
        ...r,
        statements_per_request: Math.round(((after.statements - before.server.statements) / total) * 10) / 10,
        server_cpu_us_per_request: Math.round((after.us - before.server.us) / total),
        postgres_cpu_us_per_request: Math.round((postgresCpu(postmaster) * 1e6 - before.postgres) / total),
        load_average: { start: before.load, end: load1() },
      };
    };
    const run = Date.now().toString(36);
    const creations: Target = {
      url: `${srv.info.test}/payments`,
      method: 'POST',
      headers,
      body: paymentBody(),
      idempotencyKeyPrefix: `${run}-x402`,
      connections: IN_FLIGHT,
      seconds: SECONDS,
    };
    await load({ ...creations, seconds: 2, idempotencyKeyPrefix: `${run}-warm` });
    const createRounds = [];
    const settleRounds = [];
    const spreadRounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      createRounds.push(await measure(creations));
      const batch = take(THROUGHPUT_N);
      settleRounds.push(
        await measure({
          url: `${srv.info.test}/x402/settle`,
          method: 'POST',
          headers,
          body: (i) => batch[i]!.body,
          connections: IN_FLIGHT,
          amount: batch.length,
        }),
      );
      const bodies = spread[r]!;
      spreadRounds.push(
        await measure({
          url: `${srv.info.test}/x402/settle`,
          method: 'POST',
          headers,
          headersOf: (i) => headersOf(srv.info.keys[i % IN_FLIGHT]!),
          body: (i) => bodies[i]!,
          connections: IN_FLIGHT,
          amount: bodies.length,
        }),
      );
    }
    await db.end();
    const created = median(createRounds, (x) => x.requests_per_sec);
    const settled = median(settleRounds, (x) => x.requests_per_sec);
    const spreadSettled = median(spreadRounds, (x) => x.requests_per_sec);
    return {
      mode: 'test API in a child process, networks on the simulator (verification real, settlement simulated)',
      rounds: ROUNDS,
      bare_eip712_recovery: { ...bare, per_second: round(1000 / bare.p50_ms) },
      verify,
      verify_p50_over_bare_recovery: round(verify.p50_ms / bare.p50_ms),
      bare_http_round_trip: roundTrip,
      verify_p50_beyond_recovery_and_round_trip_ms: round(verify.p50_ms - bare.p50_ms - roundTrip.p50_ms),
      settle_one_at_a_time: settle,
      in_flight: IN_FLIGHT,
      create_payment: created,
      settle: settled,
      settles_over_creations: round(settled.requests_per_sec / created.requests_per_sec),
      settle_over_16_merchants: spreadSettled,
      settles_over_16_merchants_over_creations: round(spreadSettled.requests_per_sec / created.requests_per_sec),
      goals: { verify_over_bare: 1.3, settles_over_creations: 0.5, settle_p99_ms: 100 },
      all_rounds: {
        create_payment: createRounds.map((x) => [x.requests_per_sec, x.p99_ms, x.load_average]),
        settle: settleRounds.map((x) => [x.requests_per_sec, x.p99_ms, x.load_average]),
        settle_over_16_merchants: spreadRounds.map((x) => [x.requests_per_sec, x.p99_ms, x.load_average]),
      },
    };
  } finally {
    await srv.stop();
    await pg.stop();
  }
}
