/**
 * The chain family contract, end to end, with a family that is not EVM ("toy"): loaded beside the installed ones,
 * it reads its own settings block from the networks file and declares its own token kind, migrates its own table
 * (in its own migration namespace), registers an adapter whose
 * addresses and payment URIs the payments use, reports deposits through the DepositSink (a mempool sighting, then
 * its commitment), pays in a token kind of its own, receives a refund through its sender and reports it to the TransferSink, adds wallet buttons,
 * a script and a rate-limited relay endpoint to the checkout, runs its worker in the workers role and adds an
 * operator command. Nothing outside this file knows the family.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { Type } from 'typebox';
import { installedFamilies } from '../../src/chains/families.ts';
import type { ChainAdapter, ChainFamily, FamilyContext } from '../../src/chains/plugin.ts';
import type { TransferRequest } from '../../src/chains/ports.ts';
import { parseNetworks } from '../../src/chains/networks.ts';
import { ConfigError } from '../../src/config.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { kasseMigrations } from '../../src/migrations.ts';
import { invalidState } from '../../src/core/errors.ts';
import { familyCommands } from '../../src/cli/commands/index.ts';
import { startWorkers } from '../../src/workers/index.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';

const dir = mkdtempSync(join(tmpdir(), 'kasse-toy-'));
const script = join(dir, 'toy.js');
writeFileSync(script, '/* toy wallet */ window.toyLoaded = true;\n');

let ctx: FamilyContext;
const enqueued: TransferRequest[] = [];
const worker = { started: 0, stopped: 0 };

const toyAddress = (index: bigint) => `toy1${index.toString(16).padStart(40, '0')}`;

const toy: ChainFamily = {
  name: 'toy',
  format: {
    isValidAddress: (a) => /^toy1[0-9a-f]{40}$/.test(a),
    addressFromBytes: (b) => `toy1${Buffer.from(b.subarray(0, 20)).toString('hex')}`,
    paymentUri: (_n, _t, address, amount) => `toy:${address}?amount=${amount}`,
  },
  networks: {
    settings: (raw, at) => {
      if (raw !== undefined && (typeof raw !== 'object' || raw === null))
        throw new ConfigError(`${at} must be an object`);
      return { greeting: (raw as { greeting?: string } | undefined)?.greeting ?? 'hi' };
    },
  },
  tokenKinds: ['toytoken'],
  migrations: {
    'toy/0001_sent': { up: async (db) => void (await sql`CREATE TABLE toy_sent (id text PRIMARY KEY)`.execute(db)) },
  },
  commands: [
    {
      name: 'toy networks',
      usage: 'toy networks',
      flags: {},
      run: async (c) =>
        c.chains
          .networks('test')
          .filter((n) => n.family === 'toy')
          .map((n) => n.id),
    },
  ],
  load(c) {
    ctx = c;
    const adapters: ChainAdapter[] = c.chains
      .networks('test')
      .filter((n) => n.family === 'toy')
      .map((network) => ({
        network,
        mode: 'test',
        deriveAddress: async (i: bigint) => toyAddress(i),
        paymentUri: (token, address, amount) => toy.format.paymentUri(network, token, address, amount),
        isValidAddress: toy.format.isValidAddress,
        explorerUrl: () => null,
        sender: {
          async enqueue(tx, request) {
            await sql`INSERT INTO toy_sent (id) VALUES (${request.transferId})`.execute(tx);
            enqueued.push(request);
          },
        },
      }));
    return {
      adapters,
      workers: () => [{ start: () => void worker.started++, stop: async () => void worker.stopped++ }],
      checkout: {
        script: pathToFileURL(script),
        walletButtons: (choice) => [
          {
            label: 'Pay with <Toy> wallet',
            data: { 'toy-pay': choice.address, amount: choice.amount.toString(), note: '"><script>' },
          },
        ],
        endpoints: [
          {
            path: 'toy-relay',
            body: Type.Object({ attempt_id: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
            limit: { perMinute: 2, message: (s) => `Slow down; retry in ${s} s.` },
            status: 202,
            handle: async (paymentId: string, body: { attempt_id: string }) => {
              const choice = await c.payments.coinChoice(paymentId, body.attempt_id);
              if (typeof choice === 'string') throw invalidState(choice);
              return { address: choice.address, open: choice.open, pay_amount: choice.payAmount.toString() };
            },
          },
        ],
      },
    };
  },
};

let t: TestKasse;
let m: TestMerchant;

before(async () => {
  const networks = join(dir, 'networks.test.json');
  const network = {
    id: 'toynet',
    name: 'Toy Net',
    family: 'toy',
    chain_id: null,
    rpc_urls: [],
    explorer_tx_url: null,
    confirmation_tiers: [{ max_usd_cents: null, confirmations: 2 }],
    finality_confirmations: 4,
    tokens: [
      { symbol: 'usd', name: 'Toy dollar', decimals: 6, kind: 'native', contract: null, min_amount: '1', stable: true },
      {
        symbol: 'tok',
        name: 'Toy token',
        decimals: 2,
        kind: 'toytoken',
        contract: 'toy-mint-1',
        min_amount: '1',
        stable: true,
      },
    ],
    toy: { greeting: 'hello' },
  };
  writeFileSync(networks, JSON.stringify({ networks: [network] }));
  t = await startTestKasse({ env: { KASSE_NETWORKS_FILE: networks }, families: [...(await installedFamilies()), toy] });
  m = await t.merchant({ rateLimit: 100_000 });
});
after(() => t?.close());

async function payment(order: string) {
  const res = await m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: order,
    token: 'toynet:usd',
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

test("its settings, its table, its adapter: the payment gets the family's address and URI", async () => {
  assert.deepEqual(t.kasse.chains.network('test', 'toynet')!.settings, { greeting: 'hello' });
  assert.deepEqual((await sql`SELECT count(*)::int AS n FROM toy_sent`.execute(t.kasse.db)).rows, [{ n: 0 }]);
  assert.deepEqual(
    t.kasse.families.map((f) => f.family.name),
    ['evm', 'solana', 'utxo', 'toy'],
  );
  const p = await payment('toy-1');
  const a = p.attempts[0];
  assert.match(a.address, /^toy1[0-9a-f]{40}$/);
  assert.equal(
    a.address,
    toyAddress(BigInt(parseInt(a.address.slice(4), 16))),
    'derived by the registered adapter, not the fallback',
  );
  assert.equal(a.uri, `toy:${a.address}?amount=10000000`);
});

test("its own token kind: accepted on its networks, refused on others; a payment in it gets the family's URI", async () => {
  const tok = t.kasse.chains.token('test', 'toynet:tok')!;
  assert.deepEqual([tok.kind, tok.contract], ['toytoken', 'toy-mint-1']);
  const others = await installedFamilies();
  const doc = (family: string, kind: string) => ({
    networks: [
      {
        id: 'n',
        name: 'N',
        family,
        chain_id: family === 'evm' ? 1 : null,
        confirmation_tiers: [{ max_usd_cents: null, confirmations: 1 }],
        finality_confirmations: 1,
        tokens: [{ symbol: 'tok', name: 'T', decimals: 2, kind, contract: null, min_amount: '1', stable: true }],
      },
    ],
  });
  assert.equal(parseNetworks(doc('toy', 'toytoken'), 'f', [...others, toy])[0]!.tokens[0]!.kind, 'toytoken');
  assert.throws(
    () => parseNetworks(doc('utxo', 'toytoken'), 'f', [...others, toy]),
    /\(n:tok\)\.kind must be one of native$/,
  );
  assert.throws(
    () => parseNetworks(doc('toy', 'toytoken'), 'f', [...others, { ...toy, tokenKinds: [] }]),
    /kind must be one of native$/,
  );
  const res = await m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: 'toy-tok',
    token: 'toynet:tok',
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.attempts[0].uri, `toy:${res.body.attempts[0].address}?amount=1000`);
});

test('its migrations are in its namespace: a module migration released after them still runs on this database', async () => {
  const recorded = await sql<{ name: string }>`SELECT name FROM kasse_migrations WHERE name LIKE 'toy/%'`.execute(
    t.kasse.db,
  );
  assert.deepEqual(recorded.rows, [{ name: 'toy/0001_sent' }]);
  const all = kasseMigrations(t.kasse.families.map((f) => f.family));
  const later = {
    up: async (db: Kysely<unknown>) => void (await sql`CREATE TABLE toy_later_core (id int)`.execute(db)),
  };
  assert.deepEqual(await migrateToLatest(t.kasse.db, { ...all, '0098_released_later': later }), [
    '0098_released_later',
  ]);
  assert.deepEqual(
    await migrateToLatest(t.kasse.db, { ...all, '0098_released_later': later }),
    [],
    'nothing runs twice',
  );
  await sql`DROP TABLE toy_later_core`.execute(t.kasse.db);
});

test('deposits through the sink: a mempool sighting, then the commitment; a refund through its sender', async () => {
  const p = await payment('toy-2');
  const a = p.attempts[0];
  await ctx.deposits.recordDeposits('test', [
    {
      chain: 'toynet',
      address: a.address,
      token: a.token,
      txHash: 'toytx1',
      index: 0,
      amount: 10_000_000n,
      from: null,
      blockNumber: null,
      blockHash: null,
    },
  ]);
  assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'detected');
  await ctx.deposits.depositsProgressed('test', 'toynet', [
    { txHash: 'toytx1', index: 0, confirmations: 2, final: true },
  ]);
  const paid = (await m.test.get(`/payments/${p.id}`)).body;
  assert.equal(paid.status, 'paid');
  assert.equal(paid.attempts[0].deposits[0].status, 'final');

  const refund = await m.test.post(`/payments/${p.id}/refund`, { destination: toyAddress(7n) });
  assert.equal(refund.status, 202, JSON.stringify(refund.body));
  assert.deepEqual(
    enqueued.map((r) => [r.transferId, r.purpose, r.token.id, r.destination, r.amount]),
    [[refund.body.id, 'refund', 'toynet:usd', toyAddress(7n), 10_000_000n]],
  );
  assert.deepEqual(
    (await sql`SELECT id FROM toy_sent`.execute(t.kasse.db)).rows,
    [{ id: refund.body.id }],
    "recorded in the refund's transaction",
  );
  assert.equal(await t.kasse.refunds.settleSimulated(), 0, 'the family sends it, not the simulator');
  await ctx.transfers.transfersSettled('test', [
    { transferId: refund.body.id, status: 'sent', txHash: 'toytx2', error: null },
  ]);
  assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'refunded');
  const q = await payment('toy-2b');
  await ctx.deposits.recordDeposits('test', [
    {
      chain: 'toynet',
      address: q.attempts[0].address,
      token: q.attempts[0].token,
      txHash: 'toytx3',
      index: 0,
      amount: 10_000_000n,
      from: null,
      blockNumber: 5n,
      blockHash: 'b5',
    },
  ]);
  await ctx.deposits.depositsProgressed('test', 'toynet', [
    { txHash: 'toytx3', index: 0, confirmations: 2, final: false },
  ]);
  const wrong = await m.test.post(`/payments/${q.id}/refund`, {
    destination: '0x000000000000000000000000000000000000bEEF',
  });
  assert.equal(wrong.status, 400, "destinations are checked in the family's address format");
  assert.equal(wrong.body.error.param, 'destination');
});

test('checkout: its script, its wallet buttons (escaped, hidden) and its rate-limited relay endpoint', async () => {
  const p = await payment('toy-3');
  const a = p.attempts[0];
  const page = await (await fetch(`${t.urls.checkout}/p/${p.id}`)).text();
  const src = /<script src="(\/assets\/toy\.js\?v=[0-9a-f]+)" defer><\/script>/.exec(page);
  assert.ok(src, 'the family script is on the page');
  assert.equal(
    await (await fetch(`${t.urls.checkout}${src[1]}`)).text(),
    '/* toy wallet */ window.toyLoaded = true;\n',
  );
  assert.ok(
    page.includes(
      `<button type="button" class="k-btn k-alt" data-toy-pay="${a.address}" data-amount="10000000" data-note="&quot;&gt;&lt;script&gt;" hidden>Pay with &lt;Toy&gt; wallet</button>`,
    ),
    'the button, escaped and hidden',
  );

  const post = (body: unknown, id = p.id) =>
    fetch(`${t.urls.checkout}/p/${id}/toy-relay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const ok = await post({ attempt_id: a.id });
  assert.equal(ok.status, 202);
  assert.deepEqual(await ok.json(), { address: a.address, open: true, pay_amount: '10000000' });
  const bad = await post({ attempt_id: a.id, extra: 1 });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'extra');
  const refused = await post({ attempt_id: 'att_NONE' });
  assert.equal(refused.status, 422, 'the handler refuses what the port does not find');
  const limited = await post({ attempt_id: a.id });
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  assert.match(
    ((await limited.json()) as { error: { message: string } }).error.message,
    /^Slow down; retry in \d+ s\.$/,
  );
});

test('its worker runs with the workers role; its command joins the CLI', async () => {
  const workers = startWorkers(t.kasse);
  assert.equal(worker.started, 1);
  await workers.stop();
  assert.equal(worker.stopped, 1);
  const command = familyCommands([toy]).find((c) => c.name === 'toy networks')!;
  assert.deepEqual(await command.run(t.kasse, {}, []), ['toynet']);
});
