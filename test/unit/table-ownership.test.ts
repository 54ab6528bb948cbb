/**
 * Modules own their tables: every table (src/db/schema.ts and each chain family's schema.ts) has one owner — a
 * module folder, or the one home where a module keeps its rows (the payments store's folder, the subscriptions
 * store's file) — and no other code names it in a query. Others ask the owner through its API (merchants/lookup.ts,
 * users/owners.ts, the payments store's functions, …). The few reads across modules that are the design are listed
 * in ALLOWED with their reason and their exact number of uses, so a new one fails here until it is argued for.
 * Migrations create every table and are not scanned.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { test } from 'node:test';
import { KASSE_HOME } from '../../src/config.ts';

const SRC = join(KASSE_HOME, 'src');

/** Owner of each core table: a folder (ending in /) or one file, relative to src/. */
const OWNERS: Record<string, string> = {
  merchants: 'modules/merchants/',
  api_keys: 'modules/merchants/',
  merchant_logos: 'modules/merchants/',
  rate_limit_windows: 'modules/ratelimit/',
  idempotency_keys: 'modules/idempotency/',
  payments: 'modules/payments/store/',
  attempts: 'modules/payments/store/',
  deposits: 'modules/payments/store/',
  refunds: 'modules/payments/store/',
  ledger_transactions: 'modules/ledger/',
  ledger_entries: 'modules/ledger/',
  ledger_checkpoints: 'modules/ledger/',
  events: 'modules/webhooks/',
  webhook_deliveries: 'modules/webhooks/',
  webhook_attempts: 'modules/webhooks/',
  links: 'modules/links/',
  transfers: 'modules/transfers/',
  tax_invoices: 'modules/invoices/',
  tax_invoice_counters: 'modules/invoices/',
  email_outbox: 'modules/email/',
  users: 'modules/users/',
  user_tokens: 'modules/users/',
  user_recovery_codes: 'modules/users/',
  sessions: 'modules/users/',
  session_notes: 'modules/users/',
  signin_throttle: 'modules/users/',
  audit_log: 'modules/audit/',
  statement_subscribers: 'modules/statements/',
  statement_email_schedule: 'modules/statements/',
  subscriptions: 'modules/subscriptions/store.ts',
  subscription_invoices: 'modules/subscriptions/store.ts',
  disbursements: 'modules/disbursements/',
  disbursement_items: 'modules/disbursements/',
  disbursement_approvals: 'modules/disbursements/',
  chain_health: 'chains/health.ts',
  x402_pay_to: 'modules/x402/',
  x402_settlements: 'modules/x402/',
  x402_totals: 'modules/x402/',
  x402_pay_to_retired: 'modules/x402/',
  x402_resources: 'modules/x402/',
};

/** Reads across modules that are the design. Only plain reads: no code writes or locks another module's rows. */
const ALLOWED: Array<{ file: string; table: string; uses: number; why: string }> = [
  // A statement's reconciliation recomputes the month from the operational records themselves — the payment event
  // log, sent refunds, each at its payment's price — to check the ledger against them: it must not ask the modules
  // whose postings it checks, and events and payments are joined in one query.
  { file: 'modules/statements/service.ts', table: 'events', uses: 1, why: 'reconciliation' },
  { file: 'modules/statements/service.ts', table: 'payments', uses: 2, why: 'reconciliation' },
  { file: 'modules/statements/service.ts', table: 'refunds', uses: 1, why: 'reconciliation' },
  // Publishing an event is one statement on the API's hot path: the delivery's URL (the object's own, else the
  // merchant's default for the mode) is read in that statement, in the publisher's transaction.
  {
    file: 'modules/webhooks/service.ts',
    table: 'merchants',
    uses: 2,
    why: 'default webhook URL in the publishing statement',
  },
  // The public x402 discovery catalogue pages through agent-payable links together with the catalogue state the x402
  // module keeps for each (turned off, last paid by an agent) and the declared resources: one query, one page.
  { file: 'modules/x402/discovery.ts', table: 'links', uses: 1, why: 'x402 discovery catalogue page' },
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'migrations' ? [] : files(p);
    return /\.ts$/.test(name) ? [p] : [];
  });
}

/** The text without comments (block, line, and JSDoc), roughly: enough to tell code from prose. Lines keep their numbers. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, '')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** Every table the schemas declare (the core's and each family's `interface Database`), with its owner. */
function tables(): Map<string, string> {
  const owners = new Map<string, string>();
  const declared = (file: string) =>
    [...readFileSync(file, 'utf8').matchAll(/interface Database \{([^}]*)\}/g)].flatMap((m) =>
      [...m[1]!.matchAll(/^\s*([a-z_][a-z0-9_]*):/gm)].map((t) => t[1]!),
    );
  for (const t of declared(join(SRC, 'db', 'schema.ts'))) owners.set(t, OWNERS[t] ?? '');
  for (const family of readdirSync(join(SRC, 'chains'))) {
    const schema = join(SRC, 'chains', family, 'schema.ts');
    if (!statSync(join(SRC, 'chains', family)).isDirectory() || !files(join(SRC, 'chains', family)).includes(schema))
      continue;
    for (const t of declared(schema)) owners.set(t, `chains/${family}/`);
  }
  return owners;
}

type Use = { table: string; kind: 'read' | 'lock' | 'write'; line: number };

const BUILDER =
  /\b(selectFrom|updateTable|insertInto|deleteFrom|mergeInto|rowInsert|innerJoin|leftJoin|rightJoin|fullJoin|crossJoin)\(\s*['"]([a-z_][a-z0-9_]*)/g;
const RAW = /\b(FROM|JOIN|UPDATE|INSERT INTO)\s+([a-z_][a-z0-9_]*)\b/g;
const READS = new Set(['selectFrom', 'innerJoin', 'leftJoin', 'rightJoin', 'fullJoin', 'crossJoin', 'FROM', 'JOIN']);

/** The tables `text` queries, through Kysely's builders, the statement helpers or raw SQL. */
function uses(text: string, known: ReadonlySet<string>): Use[] {
  const body = code(text);
  const lineOf = (at: number) => body.slice(0, at).split('\n').length;
  const found: Use[] = [];
  for (const re of [BUILDER, RAW]) {
    for (const m of body.matchAll(re)) {
      if (!known.has(m[2]!)) continue;
      // `DELETE FROM x` is a write though its FROM reads like one.
      const write = !READS.has(m[1]!) || /DELETE\s+$/.test(body.slice(Math.max(0, m.index! - 8), m.index!));
      // A read that locks rows (to the end of its builder chain, or of its SQL text) holds them like a write.
      const rest = body.slice(m.index!);
      const statement = rest.slice(0, (re === BUILDER ? rest.search(/\.execute|;/) : rest.indexOf('`')) >>> 0);
      const lock = /\.for(Update|Share|NoKeyUpdate|KeyShare)\(|\bFOR (UPDATE|SHARE|NO KEY UPDATE|KEY SHARE)\b/.test(
        statement,
      );
      found.push({ table: m[2]!, kind: write ? 'write' : lock ? 'lock' : 'read', line: lineOf(m.index!) });
    }
  }
  return found;
}

const owns = (owner: string, path: string) => (owner.endsWith('/') ? path.startsWith(owner) : path === owner);

test('the scan finds every way code names a table, and not prose', () => {
  const known = new Set(['payments', 'merchants', 'users', 'events']);
  const sample = `
    db.selectFrom('payments as p'); tx.updateTable("merchants"); tx.insertInto('users'); tx.deleteFrom('events');
    q.innerJoin('merchants', 'merchants.id', 'x'); rowInsert('payments', []);
    sql\`SELECT 1 FROM payments p JOIN merchants m ON true\`; sql\`UPDATE users SET x = 1\`; sql\`INSERT INTO events VALUES (1)\`;
    sql\`DELETE FROM users\`; sql\`SELECT 1 FROM input\`;
    tx.selectFrom('merchants').select('id').where('id', '=', x).forUpdate().executeTakeFirst(); sql\`SELECT 1 FROM events FOR UPDATE\`;
    // db.selectFrom('users') in a comment
    /* UPDATE payments in a block comment */
    const text = 'money from payments and users';`;
  const got = uses(sample, known).map((u) => `${u.table}:${u.kind}`);
  assert.deepEqual(got.sort(), [
    'events:lock',
    'events:write',
    'events:write',
    'merchants:lock',
    'merchants:read',
    'merchants:read',
    'merchants:write',
    'payments:read',
    'payments:read',
    'payments:write',
    'users:write',
    'users:write',
    'users:write',
  ]);
});

test('every table has an owner', () => {
  const all = tables();
  assert.ok(all.size > 40, `the schemas declare the tables (${all.size} found)`);
  const orphans = [...all].filter(([, owner]) => !owner).map(([t]) => t);
  assert.deepEqual(orphans, [], 'a new table needs its owner in OWNERS');
  for (const [t, owner] of all)
    assert.ok(statSync(join(SRC, owner), { throwIfNoEntry: false }), `the owner of ${t}, ${owner}, exists`);
  assert.deepEqual(
    Object.keys(OWNERS).filter((t) => !all.has(t)),
    [],
    'OWNERS names only tables that exist',
  );
});

test('no code queries a table another module owns, beyond the listed reads', () => {
  const all = tables();
  const known = new Set(all.keys());
  const offending: string[] = [];
  const counted = new Map<string, number>();
  for (const file of files(SRC)) {
    const path = relative(SRC, file).split(sep).join('/');
    for (const u of uses(readFileSync(file, 'utf8'), known)) {
      if (owns(all.get(u.table)!, path)) continue;
      const allowed = ALLOWED.find((a) => a.file === path && a.table === u.table);
      if (allowed && u.kind === 'read') {
        const key = `${path} ${u.table}`;
        counted.set(key, (counted.get(key) ?? 0) + 1);
        continue;
      }
      offending.push(`${path}:${u.line}: ${u.kind}s ${u.table} (owned by ${all.get(u.table)})`);
    }
  }
  assert.deepEqual(offending, []);
  // Each allowance is used exactly as often as it says: a new read across modules is argued for here, a gone one is struck.
  assert.deepEqual(
    ALLOWED.map((a) => `${a.file} ${a.table} ×${counted.get(`${a.file} ${a.table}`) ?? 0}`),
    ALLOWED.map((a) => `${a.file} ${a.table} ×${a.uses}`),
  );
});
