/**
 * The operator commands' output, run in process against a test Kasse: with --json every merchant and key command
 * prints the API's field style (snake_case), at any depth, so scripts read the CLI and the API alike.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { merchantCommands } from '../../src/cli/commands/merchants.ts';
import type { Flags } from '../../src/cli/context.ts';
import { startTestKasse, type TestKasse } from '../harness/app.ts';

let t: TestKasse;
before(async () => {
  t = await startTestKasse();
});
after(() => t.close());

const run = (name: string, flags: Flags, positionals: string[] = []) => merchantCommands.find((c) => c.name === name)!.run(t.kasse, { json: true, ...flags }, positionals);

/** Every key of a JSON value (as the CLI prints it), at any depth. */
const keysOf = (v: unknown): string[] =>
  Array.isArray(v) ? v.flatMap(keysOf) : v !== null && typeof v === 'object' ? Object.entries(v).flatMap(([k, x]) => [k, ...keysOf(x)]) : [];

test('every merchant and key command answers in snake_case', async () => {
  const created = (await run('merchant create', { name: 'Snake Shop', 'webhook-url': 'https://shop.example/hook' })) as { merchant_id: string; test_key: string };
  const outputs: Record<string, unknown> = {
    'merchant create': created,
    'merchant list': await run('merchant list', {}),
    'merchant update': await run('merchant update', { merchant: created.merchant_id, 'rate-limit': '120', 'fee-bps': '50' }),
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
  assert.equal(updated.fee_bps, 50);
  assert.equal(updated.webhook_url_live, 'https://shop.example/hook');
  assert.deepEqual(
    (outputs['merchant list'] as Array<{ id: string }>).map((m) => m.id),
    [created.merchant_id],
  );
});
