/**
 * The `kasse` commands run in process against a test Kasse: every command of the table answers `--help` and
 * `kasse help COMMAND` with its usage; with --json every merchant and key command prints the API's field style
 * (snake_case), at any depth, so scripts read the CLI and the API alike; `mail list` shows every stored mail.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { merchantCommands } from '../../src/cli/commands/merchants.ts';
import { userCommands } from '../../src/cli/commands/users.ts';
import { UsageError, type Flags } from '../../src/cli/context.ts';
import { commandTable, readCommandLine, runCli } from '../../src/cli/program.ts';
import { startTestKasse, type TestKasse } from '../harness/app.ts';

let t: TestKasse;
before(async () => {
  t = await startTestKasse();
});
after(() => t.close());

const run = (name: string, flags: Flags, positionals: string[] = []) =>
  merchantCommands.find((c) => c.name === name)!.run(t.kasse, { json: true, ...flags }, positionals);

/** Every key of a JSON value (as the CLI prints it), at any depth. */
const keysOf = (v: unknown): string[] =>
  Array.isArray(v)
    ? v.flatMap(keysOf)
    : v !== null && typeof v === 'object'
      ? Object.entries(v).flatMap(([k, x]) => [k, ...keysOf(x)])
      : [];

test('every merchant and key command answers in snake_case', async () => {
  const created = (await run('merchant create', {
    name: 'Snake Shop',
    'webhook-url': 'https://shop.example/hook',
  })) as { merchant_id: string; test_key: string };
  const outputs: Record<string, unknown> = {
    'merchant create': created,
    'merchant list': await run('merchant list', {}),
    'merchant update': await run('merchant update', {
      merchant: created.merchant_id,
      'rate-limit': '120',
      'x402-rate-limit': '900',
      'fee-bps': '50',
    }),
    'key list': await run('key list', { merchant: created.merchant_id }),
    'key roll': await run('key roll', { merchant: created.merchant_id, mode: 'live' }),
    'key revoke': await run('key revoke', {}, [created.test_key]),
    migrate: await run('migrate', {}),
  };
  assert.deepEqual(Object.keys(outputs).sort(), merchantCommands.map((c) => c.name).sort(), 'every command is covered');
  for (const [name, out] of Object.entries(outputs)) {
    const printed = JSON.parse(JSON.stringify(out));
    for (const key of keysOf(printed)) assert.match(key, /^[a-z0-9_]+$/, `${name}: ${key}`);
  }
  const updated = outputs['merchant update'] as Record<string, unknown>;
  assert.equal(updated.rate_limit_per_minute, 120);
  assert.equal(updated.x402_rate_limit_per_minute, 900);
  assert.equal(updated.fee_bps, 50);
  assert.equal(updated.webhook_url_live, 'https://shop.example/hook');
  assert.deepEqual(
    (outputs['merchant list'] as Array<{ id: string }>).map((m) => m.id),
    [created.merchant_id],
  );
});

/** `kasse ARGS` in process: exit code and what it wrote. */
async function kasse(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { out: (s) => void (stdout += s), err: (s) => void (stderr += s) });
  return { code, stdout, stderr };
}

test('every command answers --help, -h and kasse help COMMAND with its usage, and exits 0', async () => {
  const table = await commandTable();
  const names = [...table.developer, ...table.operator].map((c) => c.name);
  // The table is every command there is: developer, merchants and keys, users and mail, the chain families'.
  for (const name of [
    'listen',
    'trigger',
    'merchant create',
    'user create',
    'mail list',
    'evm status',
    'solana sweep',
    'utxo sweep',
  ])
    assert.ok(names.includes(name), name);
  for (const name of names) {
    const words = name.split(' ');
    const usage = new RegExp(`^usage: kasse ${name}( |$)`, 'm');
    for (const args of [
      [...words, '--help'],
      [...words, '-h'],
      ['help', ...words],
      [...words, '--json', '--help'],
    ]) {
      const res = await kasse(args);
      assert.equal(res.code, 0, `kasse ${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stdout, usage, `kasse ${args.join(' ')}`);
      assert.equal(res.stderr, '');
    }
  }
  // A group lists its commands; a group alone is a wrong call (exit 2) that still shows them.
  const group = await kasse(['help', 'user']);
  assert.equal(group.code, 0);
  for (const name of names.filter((n) => n.startsWith('user ')))
    assert.match(group.stdout, new RegExp(`kasse ${name} `));
  const bare = await kasse(['user']);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /kasse user create /);
  // After `--` a word is a positional, not a request for help.
  assert.equal(readCommandLine(['key', 'revoke', '--', '--help'], table).kind, 'operator');
  // Unknown commands and options: exit 2, a message naming them, nothing on stdout.
  for (const [args, message] of [
    [['help', 'nope'], /unknown command "nope"/],
    [['user', 'make', '--help'], /unknown command "user make --help"/],
    [['user', 'create', '--bogus'], /Unknown option '--bogus'[\s\S]*kasse help user create shows its usage/],
  ] as const) {
    const res = await kasse([...args]);
    assert.equal(res.code, 2, args.join(' '));
    assert.equal(res.stdout, '');
    assert.match(res.stderr, message);
  }
});

test('kasse mail list shows every mail unless --status picks one; --limit pages from the newest', async () => {
  const mail = (flags: Flags) =>
    userCommands.find((c) => c.name === 'mail list')!.run(t.kasse, { json: true, ...flags }, []) as Promise<{
      data: Array<{ id: string; to: string; status: string; text?: string }>;
      has_more: boolean;
    }>;
  const m = await t.merchant({ name: 'Mail Shop' });
  const operator = { type: 'operator', id: null, label: 'test', ip: null } as const;
  // Two invitations: the worker keeps them (no SMTP configured); a third still waits to be sent.
  for (const email of ['first@mail.example', 'second@mail.example'])
    await t.kasse.users.team.create({ merchantId: m.id, email, role: 'member', actor: operator, invite: true });
  await t.kasse.email.runOnce();
  await t.kasse.users.team.create({
    merchantId: m.id,
    email: 'third@mail.example',
    role: 'viewer',
    actor: operator,
    invite: true,
  });

  const all = await mail({});
  assert.deepEqual(
    all.data.map((x) => [x.to, x.status]),
    [
      ['third@mail.example', 'pending'],
      ['second@mail.example', 'kept'],
      ['first@mail.example', 'kept'],
    ],
  );
  assert.equal(all.has_more, false);
  assert.ok(
    all.data.every((x) => x.text === undefined),
    'bodies only with mail show',
  );
  assert.deepEqual(
    (await mail({ status: 'kept' })).data.map((x) => x.to),
    ['second@mail.example', 'first@mail.example'],
  );
  assert.deepEqual((await mail({ status: 'uncertain' })).data, []);
  const page = await mail({ limit: '2' });
  assert.deepEqual([page.data.map((x) => x.to), page.has_more], [['third@mail.example', 'second@mail.example'], true]);
  for (const flags of [{ status: 'lost' }, { limit: '0' }, { limit: 'ten' }])
    await assert.rejects(mail(flags), UsageError, JSON.stringify(flags));
});

test('a command that needs an id says which one when it is missing', async () => {
  const command = (name: string) => [...merchantCommands, ...userCommands].find((c) => c.name === name)!;
  for (const [name, message] of [
    ['key revoke', 'give the key id (key_…) or the key itself'],
    ['mail show', 'give the mail id (eml_…)'],
    ['mail resend', 'give the mail id (eml_…)'],
  ] as const) {
    await assert.rejects(
      async () => command(name).run(t.kasse, { json: true }, []),
      (err: unknown) => err instanceof UsageError && err.message === message,
      name,
    );
  }
});
