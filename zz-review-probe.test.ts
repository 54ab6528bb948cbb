import { test } from 'node:test';
import { startTestKasse } from './test/harness/app.ts';
import { startWebhookReceiver } from './test/harness/webhook-receiver.ts';

const out: string[] = [];
const log = (label: string, r: any) => out.push(`### ${label}\n${r.status} ${JSON.stringify(r.body)?.slice(0, 1500)}`);

test('probe', async () => {
  const t = await startTestKasse();
  const r = await startWebhookReceiver({ now: () => t.clock.now() });
  const m = await t.merchant({ webhookUrl: r.url, rateLimit: 100000 });
  r.setSecret(m.webhookSecret);
  const base = { price_amount: 2500, price_currency: 'USD', order_id: 'o1' };
  try {
    let res = await m.test.post('/payments', base);
    log('create', res);
    const pid = res.body.id;
    log('openapi', { status: (await m.test.get('/openapi.json')).status, body: (({ openapi, info, servers }) => ({ openapi, info, servers }))((await m.test.get('/openapi.json')).body) });
    // unknown property
    log('unknown prop', await m.test.post('/payments', { ...base, foo: 1 }));
    log('price 0', await m.test.post('/payments', { ...base, price_amount: 0 }));
    log('price float', await m.test.post('/payments', { ...base, price_amount: 1.5 }));
    log('price big', await m.test.post('/payments', { ...base, price_amount: 100000001 }));
    log('order_id empty', await m.test.post('/payments', { ...base, order_id: '' }));
    log('order_id 129', await m.test.post('/payments', { ...base, order_id: 'x'.repeat(129) }));
    log('missing order_id', await m.test.post('/payments', { price_amount: 100, price_currency: 'USD' }));
    log('currency EUR', await m.test.post('/payments', { ...base, price_currency: 'EUR' }));
    log('desc 501', await m.test.post('/payments', { ...base, description: 'x'.repeat(501) }));
    log('desc null', await m.test.post('/payments', { ...base, description: null }));
    log('url relative', await m.test.post('/payments', { ...base, success_url: '/foo' }));
    log('url ftp', await m.test.post('/payments', { ...base, success_url: 'ftp://x.y/z' }));
    log('url 2049', await m.test.post('/payments', { ...base, success_url: 'https://a.b/' + 'x'.repeat(2049 - 12) }));
    log('live http url', await m.live.post('/payments', { ...base, success_url: 'http://a.b/' }));
    log('live http webhook', await m.live.post('/payments', { ...base, webhook_url: 'http://a.b/' }));
    log('metadata 4097', await m.test.post('/payments', { ...base, metadata: { a: 'x'.repeat(4090) } }));
    log('metadata array', await m.test.post('/payments', { ...base, metadata: [1] }));
    log('metadata null', await m.test.post('/payments', { ...base, metadata: null }));
    log('chain only', await m.test.post('/payments', { ...base, chain: 'base' }));
    log('token mixed case', await m.test.post('/payments', { ...base, token: 'base:USDC' }));
    log('idem 256', await m.test.post('/payments', base, { 'idempotency-key': 'k'.repeat(256) }));
    let a = await m.test.post('/payments', base, { 'idempotency-key': 'k'.repeat(255) });
    log('idem 255', { status: a.status, body: a.body.id });
    a = await m.test.post('/payments', base, { 'idempotency-key': 'k'.repeat(255) });
    log('idem 255 replay', { status: a.status, body: a.body.id });
    a = await m.test.post('/payments', { ...base, order_id: 'o2' }, { 'idempotency-key': 'k'.repeat(255) });
    log('idem conflict', a);
    log('idem empty', await m.test.post('/payments', base, { 'idempotency-key': '' }));
    // with token
    res = await m.test.post('/payments', { ...base, token: 'base:usdc' });
    log('create with token', res);
    // attempts
    const p2 = (await m.test.post('/payments', base)).body.id;
    for (let i = 0; i < 4; i++) log('attempt ' + i, { status: (await m.test.post(`/payments/${p2}/attempts`, { chain: 'base', token: 'base:usdc' })).status, body: null });
    log('attempt 5', await m.test.post(`/payments/${p2}/attempts`, { chain: 'base', token: 'base:usdc' }));
    log('attempt bad token', await m.test.post(`/payments/${pid}/attempts`, { chain: 'base', token: 'base:xyz' }));
    log('attempt no chain', await m.test.post(`/payments/${pid}/attempts`, { token: 'base:usdc' }));
    log('attempt extra', await m.test.post(`/payments/${pid}/attempts`, { chain: 'base', token: 'base:usdc', x: 1 }));
    log('amount too small', await m.test.post('/payments', { ...base, price_amount: 50, token: 'base:usdc' }));
    log('estimate', await m.test.get('/estimate?price_amount=2500&price_currency=USD&token=base:usdc'));
    log('estimate small', await m.test.get('/estimate?price_amount=5&token=base:usdc'));
    log('estimate no token', await m.test.get('/estimate?price_amount=5'));
    log('estimate eth', await m.test.get('/estimate?price_amount=2500&token=ethereum:eth'));
    log('currencies', await m.test.get('/currencies'));
    // list
    log('list limit 101', await m.test.get('/payments?limit=101'));
    log('list limit 0', await m.test.get('/payments?limit=0'));
    const l = await m.test.get('/payments?limit=2');
    log('list', { status: l.status, body: { ids: l.body.data.map((x: any) => x.id + ' ' + x.created_at), next: l.body.next_cursor } });
    log('list bad status', await m.test.get('/payments?status=foo'));
    log('list unknown q', await m.test.get('/payments?foo=1'));
    log('list bad cursor', await m.test.get('/payments?cursor=abc'));
    // errors
    log('get 404', await m.test.get('/payments/pay_' + '0'.repeat(36)));
    log('get bad id', await m.test.get('/payments/pay_abc'));
    log('get lowercase id', await m.test.get('/payments/' + pid.toLowerCase()));
    log('live sees test payment', await m.live.get('/payments/' + pid));
    log('wrong mode', await new (m.test.constructor as any)(t.urls.test, m.liveKey).get('/payments'));
    log('no key', await new (m.test.constructor as any)(t.urls.test, null).get('/payments'));
    log('bad key', await new (m.test.constructor as any)(t.urls.test, 'kasse_test_xxx').get('/payments'));
    log('unknown route', await m.test.get('/nope'));
    log('simulate on live', await m.live.post(`/test/payments/${pid}/simulate`, { outcome: 'paid' }));
    log('malformed json', await m.test.post('/payments', '{bad'));
    log('text/plain', await m.test.post('/payments', JSON.stringify(base), { 'content-type': 'text/plain' }));
    log('no body', await m.test.request('POST', '/payments'));
    // cancel, accept, refund
    log('accept waiting', await m.test.post(`/payments/${pid}/accept`));
    log('refund waiting', await m.test.post(`/payments/${pid}/refund`, { destination: '0x' + '1'.repeat(40) }));
    log('cancel', await m.test.post(`/payments/${pid}/cancel`));
    log('cancel again', await m.test.post(`/payments/${pid}/cancel`));
    log('cancel with body', await m.test.post(`/payments/${p2}/cancel`, { a: 1 }));
    // simulate
    for (const outcome of ['paid', 'underpaid', 'expired', 'late', 'wrong_asset']) {
      const p = (await m.test.post('/payments', { ...base, order_id: 'sim-' + outcome })).body.id;
      const s = await m.test.post(`/test/payments/${p}/simulate`, { outcome });
      log('simulate ' + outcome, { status: s.status, body: { status: s.body.status, attempts: s.body.attempts?.map((x: any) => [x.token, x.status, x.symbol, x.received_amount, x.wrong_asset]) } });
      await t.kasse.webhooks.drain();
      const types = await t.kasse.db.selectFrom('events').select('type').where('ordering_key', '=', p).orderBy('seq').execute();
      out.push('events ' + outcome + ': ' + JSON.stringify(types.map((x) => x.type)));
    }
    // refund after paid
    const pp = (await m.test.post('/payments', { ...base, order_id: 'rf' })).body.id;
    await m.test.post(`/test/payments/${pp}/simulate`, { outcome: 'paid' });
    log('refund bad dest', await m.test.post(`/payments/${pp}/refund`, { destination: 'nope' }));
    log('refund', await m.test.post(`/payments/${pp}/refund`, { destination: '0x' + '1'.repeat(40), note: 'n' }));
    log('refund again', await m.test.post(`/payments/${pp}/refund`, { destination: '0x' + '1'.repeat(40) }));
    await t.kasse.payments.runDue();
    log('after refund', { status: 0, body: (await m.test.get('/payments/' + pp)).body.status });
    await t.kasse.webhooks.drain();
    const ev = r.events[r.events.length - 1];
    out.push('webhook headers: ' + JSON.stringify(ev?.headers) + '\nbody keys: ' + Object.keys(JSON.parse(ev.rawBody)).join(','));
    // links
    log('link create', await m.test.post('/links', { kind: 'fixed', title: 'T', amount_usd_cents: 100 }));
    log('link unknown', await m.test.post('/links', { kind: 'fixed', title: 'T', amount_usd_cents: 100, x: 1 }));
    log('link 99', await m.test.post('/links', { kind: 'fixed', title: 'T', amount_usd_cents: 99 }));
    log('link presets 7', await m.test.post('/links', { kind: 'tip', title: 'T', presets_usd_cents: [100, 200, 300, 400, 500, 600, 700] }));
    log('link title 121', await m.test.post('/links', { kind: 'open', title: 'x'.repeat(121) }));
    log('link leap', await m.test.post('/links', { kind: 'open', title: 'x', expires_at: '2030-06-30T23:59:60Z' }));
    log('link no tz', await m.test.post('/links', { kind: 'open', title: 'x', expires_at: '2030-06-30T23:59:00' }));
    log('link live http', await m.live.post('/links', { kind: 'open', title: 'x', success_url: 'http://a.b/' }));
    const lk = (await m.test.post('/links', { kind: 'open', title: 'T' })).body.id;
    log('patch unknown', await m.test.patch('/links/' + lk, { kind: 'fixed' }));
    log('patch title null', await m.test.patch('/links/' + lk, { title: null }));
    log('patch leap', await m.test.patch('/links/' + lk, { expires_at: '2030-06-30T23:59:60Z' }));
    log('patch ok', await m.test.patch('/links/' + lk, { max_uses: 5, description: null }));
    log('link list', { status: 200, body: (await m.test.get('/links')).body.data.map((x: any) => x.id) });
    log('link get 404', await m.test.get('/links/lnk_' + '0'.repeat(26)));
    log('account', await m.test.get('/account'));
  } finally {
    console.log(out.join('\n'));
    await r.close();
    await t.close();
  }
});
