import { load } from './_load.ts';
const [url, key, kind, secs] = process.argv.slice(2);
let n = 0;
const run = `${Date.now()}`;
const body = (i: number) => JSON.stringify({ price_amount: 2500 + (i % 1000), price_currency: 'USD', order_id: `order-${i}`, description: 'Two mugs and a teapot', success_url: 'https://shop.example/thanks', metadata: { customer: 'c_123', cart: [1, 2, 3] }, ...(kind === 'coin' ? { chain: 'base', token: 'base:usdc' } : {}) });
const r = await load({ url, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body, seconds: Number(secs ?? 10), idempotencyKeyPrefix: kind !== "nokey" ? run : undefined });
console.log(JSON.stringify(r));
