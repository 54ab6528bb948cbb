import pg from 'pg';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 32 });
const mer = (await pool.query('select id from merchants limit 1')).rows[0].id;
const text = `WITH w0 AS (INSERT INTO payments (id, merchant_id, mode, status, price_amount, price_currency, order_id, description, success_url, cancel_url, webhook_url, metadata, expires_at, created_at, updated_at, paid_at, paid_attempt_id, paid_amount, credit_seq, credited, deposits_dirty) VALUES ($1,$2,'test','waiting',$3,'USD',$4,$5,$6,$7,$8,$9,$10,$11,$12,null,null,null,0,false,false)),
w1 AS (INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash, response_status, response_body) VALUES ($2,'test',$13,$14,201,$15)),
w2 AS (INSERT INTO audit_log (merchant_id, mode, at, actor_type, actor_id, actor_label, action, target_type, target_id, ip, details) VALUES ($2,'test',$11,'key','key_x','test …x','payment.create','payment',$1,'127.0.0.1',$16))
SELECT 1`;
const body = JSON.stringify({ id: 'x'.repeat(40), status: 'waiting', price_amount: 2500, metadata: { customer: 'c_123', cart: [1, 2, 3] }, checkout_url: 'http://127.0.0.1:41005/p/pay_01M87GK32BYSDVSK81TN5VCMPVJXABJ7CKK4', more: 'y'.repeat(400) });
let n = 0;
const vals = () => { n++; const now = new Date(); return [`pay_${process.pid}_${n}_${Date.now()}`.padEnd(40, '0'), mer, 2500, `order-${n}`, 'Two mugs', 'https://shop.example/thanks', 'https://shop.example/cart', null, '{"customer":"c_123","cart":[1,2,3]}', new Date(now.getTime() + 86400000), now, now, `k-${process.pid}-${n}-${Date.now()}`, 'a'.repeat(64), body, '{"order_id":"x","price_amount":2500}']; };
const bare = (i: number) => ({ text: `INSERT INTO bench_rows VALUES ($1, $2, 'test', 'waiting', $3, $4, $5, $6, now() + interval '1 day', now()) RETURNING *`, values: [`pay_b_${process.pid}_${i}_${Date.now()}`, mer, 2500, `order-${i}`, 'Two mugs', '{"customer":"c_123","cart":[1,2,3]}'] });
async function timeit(label: string, f: (i: number) => Promise<unknown>, count = 3000) {
  const t0 = process.hrtime.bigint(); const c0 = process.cpuUsage();
  let i = 0; await Promise.all(Array.from({ length: 32 }, async () => { while (i < count) await f(i++); }));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6; const c = process.cpuUsage(c0);
  console.log(label, (count / ms * 1000).toFixed(0), '/s', 'node cpu us/op', ((c.user + c.system) / count).toFixed(0));
}
await pool.query(`CREATE TABLE IF NOT EXISTS bench_rows (id text PRIMARY KEY, merchant_id text, mode text, status text, price_amount bigint, order_id text, description text, metadata jsonb, expires_at timestamptz, created_at timestamptz)`);
for (let r = 0; r < 2; r++) {
  await timeit('bare', (i) => pool.query(bare(i)));
  await timeit('cte unnamed', () => pool.query({ text, values: vals() }));
  await timeit('cte named', () => pool.query({ name: 'cte', text, values: vals() }));
}
await pool.end();
