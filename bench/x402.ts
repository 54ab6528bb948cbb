import { getAddress, recoverTypedDataAddress, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestKasse } from '../test/harness/app.ts';
import { benchDatabase } from './_pg.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../test/harness/hardhat.ts';
import { authorizationBody } from '../test/harness/x402.ts';

const NETWORK = 'eip155:84532';
const USDC = getAddress('0x036CbD53842c5426634e7929541eC2318f3dCF7e');
const DOMAIN = { name: 'USDC', version: '2', chainId: 84532, verifyingContract: USDC } as const;
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return { p50_ms: round(quantile(s, 0.5)), p99_ms: round(quantile(s, 0.99)), n: s.length };
};
const round = (x: number) => Math.round(x * 1000) / 1000;

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  const t = await startTestKasse();
  try {
    t.clock.set(Date.now());
    const m = await t.merchant({ rateLimit: 1_000_000 });
    const payTo = (await m.test.get(`/x402/pay_to?network=${NETWORK}`)).body.pay_to as Hex;
    const agent = privateKeyToAccount(generatePrivateKey());
    const now = Math.floor(Date.now() / 1000);
    const sign = async () => {
      const signed = await authorizationBody({
        signer: agent,
        domain: DOMAIN,
        network: NETWORK,
        asset: USDC,
        payTo,
        value: 1000n,
        validAfter: now - 600,
        validBefore: now + 3600,
        maxTimeoutSeconds: 300,
        resource: { url: 'https://api.example/weather', description: 'Weather' },
      });
      return { ...signed, body: JSON.stringify(signed.body) };
    };
    const N = Number(process.env.BENCH_X402_N ?? 400);
    const THROUGHPUT_N = Number(process.env.BENCH_X402_THROUGHPUT_N ?? 1600);
    const signed = await Promise.all(Array.from({ length: N * 2 + THROUGHPUT_N }, sign));
    const headers = { authorization: `Bearer ${m.testKey}`, 'content-type': 'application/json' };
    const post = async (path: string, body: string) => {
      const res = await fetch(`${t.urls.test}${path}`, { method: 'POST', headers, body });
      const json = (await res.json()) as { isValid?: boolean; success?: boolean };
      if (res.status !== 200 || json.isValid === false || json.success === false)
        throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    };
    const timed = async (items: typeof signed, fn: (s: (typeof signed)[number]) => Promise<unknown>) => {
      const ms: number[] = [];
      for (const s of items) {
        const start = performance.now();
        await fn(s);
        ms.push(performance.now() - start);
      }
      return ms;
    };

    // Warm-up of every path.
    for (const s of signed.slice(0, 20)) await post('/x402/verify', s.body);
    const recover = await timed(signed.slice(0, N), (s) =>
      recoverTypedDataAddress({
        domain: DOMAIN,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: s.message,
        signature: s.signature,
      }),
    );
    const verify = await timed(signed.slice(0, N), (s) => post('/x402/verify', s.body));
    const settle = await timed(signed.slice(N, 2 * N), (s) => post('/x402/settle', s.body));
    const batch = signed.slice(2 * N);
    let next = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < batch.length) await post('/x402/settle', batch[next++]!.body);
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const recoverSummary = summary(recover);
    const verifySummary = summary(verify);
    return {
      mode: 'test API, networks on the simulator (verification real, settlement simulated)',
      bare_eip712_recovery: { ...recoverSummary, per_second: round(1000 / (recover.reduce((a, b) => a + b) / N)) },
      verify: verifySummary,
      settle: summary(settle),
      settles_per_second: { concurrency: 16, settles: batch.length, per_second: round(batch.length / seconds) },
      verify_p50_over_bare_recovery: round(verifySummary.p50_ms / recoverSummary.p50_ms),
    };
  } finally {
    await t.close();
    await pg.stop();
  }
}
