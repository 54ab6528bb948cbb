import { test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { HOUR, MINUTE } from './src/core/clock.ts';
import { startTestKasse } from './test/harness/app.ts';
import { startWebhookReceiver } from './test/harness/webhook-receiver.ts';

const out: string[] = [];
const log = (label: string, r: any) => out.push(`### ${label}\n${r.status} ${JSON.stringify(r.body)?.slice(0, 800)}`);
let tx = 0;

test('probe2', async () => {
  const t = await startTestKasse({ env: { KASSE_NETWORKS_FILE: '/tmp/review/networks.json' } });
  const r = await startWebhookReceiver({ now: () => t.clock.now() });
  const m = await t.merchant({ webhookUrl: r.url, rateLimit: 100000 });
  r.setSecret(m.webhookSecret);
  const sink = t.kasse.payments.deposits;
  const obs = (a: any, amount: bigint, block: bigint, token?: string) => ({
    chain: a.chain, address: a.address, token: token ?? a.token, txHash: `0x${(++tx).toString(16).padStart(64, '0')}`, index: 0, amount,
    from: '0x1111111111111111111111111111111111111111', blockNumber: block, blockHash: `0x${block.toString(16).padStart(64, 'b')}`,
  });
  const events = async (id: string) => (await t.kasse.db.selectFrom('events').select('type').where('ordering_key', '=', id).orderBy('seq').execute()).map((e) => e.type);
  const get = async (id: string) => (await m.test.get('/payments/' + id)).body;
  const mk = async (extra: any = {}) => (await m.test.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: 'x', token: 'base:usdc', ...extra })).body;
  let head = 100n;
  try {
    log('paused chain create', await m.test.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: 'x', token: 'polygon:usdc' }));
    log('paused estimate', await m.test.get('/estimate?price_amount=1000&token=polygon:usdc'));
    // A detected->confirming->paid
    {
      const p = await mk(); const a = p.attempts[0];
      await sink.recordDeposits('test', [obs(a, 10_000_000n, head)]);
      out.push('A after record: ' + (await get(p.id)).status);
      await sink.headAdvanced('test', 'base', head);
      out.push('A after 1 conf: ' + (await get(p.id)).status);
      await sink.headAdvanced('test', 'base', head + 4n);
      const g = await get(p.id);
      out.push('A after 5 conf: ' + g.status + ' deposits ' + JSON.stringify(g.attempts[0].deposits));
      out.push('A events ' + JSON.stringify(await events(p.id)));
      head += 10n;
      // reorg
      await sink.blocksRemoved('test', 'base', head - 10n);
      const g2 = await get(p.id);
      out.push('A after reorg: ' + g2.status + ' paid_at ' + g2.paid_at + ' events ' + JSON.stringify(await events(p.id)));
    }
    // B underpaid then rest within 10 min
    {
      const p = await mk(); const a = p.attempts[0];
      await sink.recordDeposits('test', [obs(a, 4_000_000n, head)]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      out.push('B after part: ' + (await get(p.id)).status);
      t.clock.advance(2 * MINUTE);
      await sink.recordDeposits('test', [obs(a, 6_000_000n, head)]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      out.push('B after rest: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
    }
    // C underpaid then rest after 10 min -> late -> auto-accept; underpaid never expires
    {
      const p = await mk(); const a = p.attempts[0];
      await sink.recordDeposits('test', [obs(a, 4_000_000n, head)]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      t.clock.advance(11 * MINUTE); await t.kasse.payments.runDue();
      out.push('C after 11 min: ' + (await get(p.id)).status);
      await sink.recordDeposits('test', [obs(a, 6_000_000n, head)]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      out.push('C after rest: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
      await t.kasse.payments.runDue();
      out.push('C after runDue: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
    }
    // J underpaid never expires
    {
      const p = await mk(); const a = p.attempts[0];
      await sink.recordDeposits('test', [obs(a, 4_000_000n, head)]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      t.clock.advance(25 * HOUR); await t.kasse.payments.runDue();
      out.push('J underpaid after 25h: ' + (await get(p.id)).status);
      log('J accept', { status: (await m.test.post(`/payments/${p.id}/accept`)).status, body: await events(p.id) });
    }
    // D overpaid
    {
      const p = await mk(); const a = p.attempts[0];
      await sink.recordDeposits('test', [obs(a, 12_000_000n, head)]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      const g = await get(p.id);
      out.push('D overpaid: ' + g.status + ' overpaid=' + g.attempts[0].overpaid + ' events ' + JSON.stringify(await events(p.id)));
    }
    // E full payment after coin hold (no underpaid)
    {
      const p = await mk(); const a = p.attempts[0];
      t.clock.advance(15 * MINUTE); await t.kasse.payments.runDue();
      out.push('E waiting after 15 min: ' + (await get(p.id)).status + ' attempt ' + (await get(p.id)).attempts[0].status);
      await sink.recordDeposits('test', [obs(a, 10_000_000n, head)]);
      out.push('E after detect: ' + (await get(p.id)).status);
      await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      out.push('E after confirm: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
      await t.kasse.payments.runDue();
      out.push('E after runDue: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
    }
    // F wrong-asset dust blocks expiry
    {
      const p = await mk(); const a = p.attempts[0];
      await sink.recordDeposits('test', [obs(a, 1n, head, 'base:eth')]); await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      out.push('F after dust: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
      log('F cancel', await m.test.post(`/payments/${p.id}/cancel`));
      t.clock.advance(25 * HOUR); await t.kasse.payments.runDue();
      t.clock.advance(25 * HOUR); await t.kasse.payments.runDue();
      out.push('F after 50h: ' + (await get(p.id)).status + ' events ' + JSON.stringify(await events(p.id)));
    }
    // G simulate wrong_asset then 25h
    {
      const p = (await m.test.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: 'x' })).body;
      await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'wrong_asset' });
      t.clock.advance(25 * HOUR); await t.kasse.payments.runDue();
      out.push('G after wrong_asset sim + 25h: ' + (await get(p.id)).status);
    }
    // H deposit on expired payment
    {
      const p = await mk(); const a = p.attempts[0];
      t.clock.advance(25 * HOUR); await t.kasse.payments.runDue();
      out.push('H: ' + (await get(p.id)).status);
      await sink.recordDeposits('test', [obs(a, 10_000_000n, head)]);
      out.push('H after detect: ' + (await get(p.id)).status + JSON.stringify(await events(p.id)));
      await sink.headAdvanced('test', 'base', head + 5n); head += 6n;
      out.push('H after confirm: ' + (await get(p.id)).status + JSON.stringify(await events(p.id)));
      log('H accept', { status: (await m.test.post(`/payments/${p.id}/accept`)).status, body: await events(p.id) });
    }
    // simulate failure leaving attempt: price below stable? Simulate on polygon-only? try payment with attempt on chain paused etc.
    // rate limit
    {
      const m2 = await t.merchant({ rateLimit: 2 });
      for (let i = 0; i < 3; i++) {
        const res = await m2.test.get('/payments');
        out.push(`RL ${i}: ${res.status} RL-Limit=${res.headers.get('ratelimit-limit')} Rem=${res.headers.get('ratelimit-remaining')} Reset=${res.headers.get('ratelimit-reset')} Retry-After=${res.headers.get('retry-after')} body=${JSON.stringify(res.body).slice(0, 200)}`);
      }
      const dflt = await t.merchant();
      const res = await dflt.test.get('/payments');
      out.push(`default RL: ${res.headers.get('ratelimit-limit')}`);
    }
    // link patch leap unchanged
    {
      const lk = (await m.test.post('/links', { kind: 'open', title: 'T', max_uses: 3 })).body;
      const pr = await m.test.patch('/links/' + lk.id, { expires_at: '2030-06-30T23:59:60Z', max_uses: 9 });
      out.push('patch leap status ' + pr.status + ' after: ' + JSON.stringify((await m.test.get('/links/' + lk.id)).body));
    }
    // webhook retry schedule
    {
      const rr = await startWebhookReceiver({ now: () => t.clock.now() });
      const m3 = await t.merchant({ webhookUrl: rr.url, rateLimit: 10000 });
      rr.setSecret(m3.webhookSecret);
      rr.failNext(10, 500);
      const p = (await m3.test.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: 'x' })).body;
      await m3.test.post(`/payments/${p.id}/cancel`);
      const start = t.clock.now().getTime();
      const times: number[] = [];
      for (let i = 0; i < 8; i++) {
        await t.kasse.webhooks.runOnce();
        const d = await t.kasse.db.selectFrom('webhook_deliveries').selectAll().where('merchant_id', '=', m3.id).executeTakeFirst();
        times.push(d!.next_attempt_at ? (d!.next_attempt_at.getTime() - t.clock.now().getTime()) / 60000 : -1);
        if (d!.next_attempt_at) t.clock.set(d!.next_attempt_at);
        out.push(`retry ${i}: status=${d!.status} attempts=${d!.attempts}`);
      }
      out.push('retry delays (min): ' + JSON.stringify(times));
      await rr.close();
    }
    // openapi validate
    {
      const doc = (await m.test.get('/openapi.json')).body;
      try { await SwaggerParser.validate(structuredClone(doc)); out.push('openapi valid'); } catch (e) { out.push('openapi invalid: ' + (e as Error).message.slice(0, 500)); }
      for (const [p, ops] of Object.entries<any>(doc.paths)) for (const [meth, op] of Object.entries<any>(ops)) out.push(`OAS ${meth.toUpperCase()} ${p}: ${Object.keys(op.responses).join(',')}`);
      out.push('OAS components: ' + Object.keys(doc.components?.schemas ?? {}).join(','));
      out.push('Payment required: ' + JSON.stringify(doc.components?.schemas?.Payment?.required));
      const live = (await m.live.get('/openapi.json')).body;
      out.push('live has simulate: ' + Object.keys(live.paths).filter((x) => x.includes('simulate')).join(','));
    }
  } finally {
    console.log(out.join('\n'));
    await r.close();
    await t.close();
  }
});
