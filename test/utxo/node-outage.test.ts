/**
 * A Litecoin node that stops answering: its watcher's failed passes pause the network in GET /currencies (status and
 * reason, 503 chain_paused for a new coin choice), in this process and in another one on the same database (the
 * health is kept in PostgreSQL), `kasse utxo status` says in words which node does not answer, and all of it recovers
 * when the node answers again. Kasse talks to the node as an RPC user that may not call `estimatesmartfee`: the status
 * lists it as a missing optional method and the sender does without it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { utxoCommands } from '../../src/chains/utxo/commands.ts';
import { CommandError } from '../../src/core/flags.ts';
import { Kasse } from '../../src/kasse.ts';
import { LitecoinWallet, limitedRpcUrl, sharedLitecoinRpc } from '../harness/litecoind.ts';
import { eventually } from '../harness/expect.ts';
import { startTcpRelay, type TcpRelay } from '../harness/net.ts';
import { startUtxoKasse, type UtxoKasse } from '../harness/utxo-kasse.ts';

let relay: TcpRelay;
let k: UtxoKasse;
let other: Kasse;

before(async () => {
  relay = await startTcpRelay(sharedLitecoinRpc());
  // As an RPC user whose whitelist leaves out estimatesmartfee (test/harness/litecoind.ts).
  k = await startUtxoKasse({
    rpcUrl: limitedRpcUrl(relay.url),
    receiver: false,
    payer: await LitecoinWallet.create(sharedLitecoinRpc()),
  });
  // A second process's Kasse on the same database, as an API-only process beside the workers would be.
  other = await Kasse.open({ config: k.t.config, databaseUrl: k.t.databaseUrl, secrets: k.secrets, clock: k.t.clock });
});
after(async () => {
  await other?.close();
  await k?.close();
  await relay?.down(); // closes the relay's port and connections, so the file can end
});

const litecoin = async () =>
  ((await k.m.test.get('/currencies')).body.data as any[]).find((c) => c.token === 'litecoin:ltc');
const status = () =>
  utxoCommands
    .find((c) => c.name === 'utxo status')!
    .run(k.t.kasse.familyContext, { chain: 'litecoin', mode: 'test' }, []);
const choose = () =>
  k.m.test.post('/payments', {
    price_amount: 500,
    price_currency: 'USD',
    order_id: `o-${Math.random()}`,
    chain: 'litecoin',
    token: 'litecoin:ltc',
  });

test('the node stops answering: paused with a reason, a coin choice refused, the status command says which node; back when it answers', async () => {
  await k.tick();
  const running = await litecoin();
  assert.equal(running.network_status, 'running');
  assert.equal(running.network_status_reason, null);
  assert.equal(running.paused, false);

  await relay.down();
  // One failed pass may be a blip: still running.
  await assert.rejects(k.tick());
  assert.equal((await litecoin()).network_status, 'running');
  await assert.rejects(k.tick());
  const down = await litecoin();
  assert.equal(down.network_status, 'paused');
  assert.equal(down.paused, true);
  assert.equal(
    down.network_status_reason,
    `its node does not answer since ${k.t.clock.now().toISOString()}; new coin choices resume when it does (\`kasse utxo status\` says more)`,
  );
  const refused = await choose();
  assert.equal(refused.status, 503);
  assert.equal(refused.body.error.code, 'chain_paused');
  assert.equal(k.t.kasse.chains.available('test', 'litecoin'), false);
  // The other process learns it from the database.
  await eventually(
    'the other process to see the outage',
    () => other.chains.status('test', 'litecoin').state === 'paused',
  );
  assert.equal(other.chains.status('test', 'litecoin').reason, down.network_status_reason);

  const origin = new URL(relay.url).origin;
  const err = await status().then(
    () => assert.fail('status answered without a node'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CommandError, String(err));
  assert.match(
    err.message,
    new RegExp(
      `^Litecoin \\(local regtest\\) \\(test network litecoin\\): its node at ${origin.replace(/[.]/g, '\\.')} does not answer: \\w+: fetch failed \\(ECONNREFUSED\\)\\. The watcher last reached it at `,
    ),
  );
  assert.ok(!err.message.includes(new URL(relay.url).password), 'no password in the message');

  await relay.up();
  await k.tick();
  const back = await litecoin();
  assert.equal(back.network_status, 'running');
  assert.equal(back.network_status_reason, null);
  assert.equal(back.paused, false);
  assert.equal((await choose()).status, 201);
  await eventually(
    'the other process to see the recovery',
    () => other.chains.status('test', 'litecoin').state === 'running',
  );
  const answered = (await status()) as { tip: number };
  assert.ok(answered.tip > 0, JSON.stringify(answered));
});

test('kasse utxo status lists the optional method the node will not serve; the sender pays the relay fee without it', async () => {
  const s = (await status()) as { missing_methods: Array<{ method: string; answer: string; without: string }> };
  assert.deepEqual(
    s.missing_methods.map((m) => m.method),
    ['estimatesmartfee'],
  );
  assert.match(s.missing_methods[0]!.answer, /^estimatesmartfee: HTTP 403$/, "the node's own answer");
  assert.match(s.missing_methods[0]!.without, /relay fee/);
  const relayFee = await k.payer.rpc<{ relayfee: number }>('getnetworkinfo');
  assert.equal(
    await k.adapter.sender!.feeRate(),
    (BigInt(Math.round(relayFee.relayfee * 1e8)) + 999n) / 1000n,
    'the fee rate from the relay fee',
  );
});
