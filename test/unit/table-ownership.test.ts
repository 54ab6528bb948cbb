/**
 * Modules own their tables: every table has one owner — the folder whose `tables.ts` (a module's, the chains
 * layer's) or `schema.ts` (a family's) adds it to `Database`, or the one home inside that folder where a module keeps
 * its rows (HOMES) — and no other code names it in a query. Others ask the owner through its API (merchants/lookup.ts,
 * users/owners.ts, the payments store's functions, …). The few reads across modules that are the design are listed
 * in ALLOWED with their reason and their exact number of uses, so a new one fails here until it is argued for.
 * Migrations are not scanned for queries; they live with their owner, and one that makes or changes another owner's
 * table names it in its header (src/db/migrate.ts).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { test } from 'node:test';
import { KASSE_HOME } from '../../src/config.ts';
import { ownMigrations } from '../../src/migrations.ts';

const SRC = join(KASSE_HOME, 'src');

/** Owners that keep their rows in one home inside their folder: only that folder or file queries them. */
const HOMES: Record<string, string> = {
  'modules/payments/': 'modules/payments/store/',
  'modules/refunds/': 'modules/refunds/store.ts',
  'modules/subscriptions/': 'modules/subscriptions/store/',
  'chains/': 'chains/health.ts',
};

/** Reads across modules that are the design. Only plain reads: no code writes or locks another module's rows. */
const ALLOWED: Array<{ file: string; table: string; uses: number; why: string }> = [
  // Late payments are auto-accepted unless a refund was asked for: the due work's selecting statement skips those
  // (the refunds module's rows are read there, in the statement that locks the payment, not locked).
  { file: 'modules/payments/store/due.ts', table: 'refunds', uses: 1, why: 'late auto-acceptance skips refunded' },
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

function files(dir: string, migrations = false): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'migrations' && !migrations ? [] : files(p, migrations);
    return /\.ts$/.test(name) ? [p] : [];
  });
}

const rel = (file: string) => relative(SRC, file).split(sep).join('/');

/** The text without comments (block, line, and JSDoc), roughly: enough to tell code from prose. Lines keep their numbers. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, '')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** Every table added to `Database` (`declare module '…/db/schema.ts'`), with the folder of the file that adds it. */
function declarations(): Map<string, string> {
  const where = new Map<string, string>();
  for (const file of files(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/declare module '[./]*db\/schema\.ts' \{\s*interface Database \{([^}]*)\}/g)) {
      for (const t of m[1]!.matchAll(/^\s*([a-z_][a-z0-9_]*):/gm)) {
        assert.ok(!where.has(t[1]!), `${t[1]} is declared twice`);
        where.set(t[1]!, rel(file));
      }
    }
  }
  return where;
}

/** Every table with its owner: the folder that declares it, or that folder's home for its rows. */
function tables(): Map<string, string> {
  const owners = new Map<string, string>();
  for (const [t, file] of declarations()) {
    const folder = `${dirname(file)}/`;
    owners.set(t, HOMES[folder] ?? folder);
  }
  return owners;
}

type Use = { table: string; kind: 'read' | 'lock' | 'write'; line: number };

const BUILDER =
  /\b(selectFrom|updateTable|insertInto|deleteFrom|mergeInto|rowInsert|innerJoin|leftJoin|rightJoin|fullJoin|crossJoin)\(\s*['"]([a-z_][a-z0-9_]*)/g;
const RAW = /\b(FROM|JOIN|UPDATE|INSERT INTO)\s+([a-z_][a-z0-9_]*)\b/g;
/** The table-generic helpers of src/db/ (owned.ts, rows.ts): each names its table as its second argument. */
const GENERIC =
  /\b(ownedRow|ownedBy|rowInMode|rowsWhere|rowWhere|someRow|updateWhere|lockById|settleOutbound)\(\s*[A-Za-z_.]+\s*,\s*['"]([a-z_][a-z0-9_]*)['"]/g;
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
      // A read that locks rows (to the end of its builder chain, or of its SQL text) holds them like a write; a lock
      // naming its tables (`FOR UPDATE OF p`) holds only theirs, by name or alias.
      const rest = body.slice(m.index!);
      const statement = rest.slice(0, (re === BUILDER ? rest.search(/\.execute|;/) : rest.indexOf('`')) >>> 0);
      let lock = /\.for(Update|Share|NoKeyUpdate|KeyShare)\(|\bFOR (UPDATE|SHARE|NO KEY UPDATE|KEY SHARE)\b/.test(
        statement,
      );
      const of =
        /\bFOR (?:UPDATE|SHARE|NO KEY UPDATE|KEY SHARE) OF ([a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)*)/.exec(
          statement,
        );
      if (lock && of && re === RAW) {
        const alias = /^\s+(?:AS\s+)?([a-z_][a-z0-9_]*)/.exec(rest.slice(m[0].length))?.[1];
        const held = of[1]!.split(/\s*,\s*/);
        lock = held.includes(m[2]!) || (alias !== undefined && held.includes(alias));
      }
      found.push({ table: m[2]!, kind: write ? 'write' : lock ? 'lock' : 'read', line: lineOf(m.index!) });
    }
  }
  // The helpers read the table they are given: `ownedRow(db, 'table', owner, id, noun, lock?)` may lock the row with
  // a `lock` other than `false`, as does `rowWhere(db, 'table', where, lock?)`; `ownedBy(db, 'table', owner)` starts a
  // builder that may lock, `lockById` locks, `updateWhere` and `settleOutbound` write.
  for (const m of body.matchAll(GENERIC)) {
    const [, helper, table] = m as unknown as [string, string, string];
    if (!known.has(table)) continue;
    let kind: Use['kind'] = 'read';
    if (helper === 'lockById') kind = 'lock';
    else if (helper === 'settleOutbound' || helper === 'updateWhere') kind = 'write';
    else if (helper === 'ownedRow' || helper === 'rowWhere') {
      const args = callArguments(body, m.index! + `${helper}(`.length);
      const lockAt = helper === 'ownedRow' ? 5 : 3;
      if (args.length > lockAt && args[lockAt] !== 'false') kind = 'lock';
    } else if (helper === 'ownedBy') {
      const rest = body.slice(m.index!);
      if (/\.for(Update|Share|NoKeyUpdate|KeyShare)\(/.test(rest.slice(0, rest.search(/\.execute|;/) >>> 0)))
        kind = 'lock';
    }
    found.push({ table, kind, line: lineOf(m.index!) });
  }
  return found;
}

/** The arguments of the call whose `(` ends just before `at`, trimmed, split at its own commas. */
function callArguments(text: string, at: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let from = at;
  for (let i = at; i < text.length; i++) {
    const c = text[i]!;
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c) && depth-- === 0) {
      args.push(text.slice(from, i).trim());
      break;
    } else if (c === ',' && depth === 0) {
      args.push(text.slice(from, i).trim());
      from = i + 1;
    }
  }
  return args.filter((a, i) => a !== '' || i < args.length - 1);
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
    sql\`SELECT p.id FROM payments p WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p.id) FOR UPDATE OF p\`;
    // db.selectFrom('users') in a comment
    /* UPDATE payments in a block comment */
    const text = 'money from payments and users';
    ownedRow(this.deps.db, 'payments', { merchantId, mode }, id, 'payment'); ownedRow(tx, 'events', o, id, 'event', lock,);
    ownedRow(db, 'users', o, id, 'user', false);
    ownedBy(db, 'payments', tenant).selectAll().execute(); ownedBy(tx, 'events', tenant).selectAll().forUpdate().execute();
    rowInMode(db, 'merchants', mode, id); lockById(tx, 'users', id); settleOutbound(tx, 'events', id, set);
    rowsWhere(db, 'payments', [['id', 'in', ids]], ['created_at']); rowWhere(tx, 'merchants', [['id', '=', id]], true);
    rowWhere(db, 'users', [['id', '=', id]]); someRow(db, 'events', where); updateWhere(tx, 'merchants', set, where);`;
  const got = uses(sample, known).map((u) => `${u.table}:${u.kind}`);
  assert.deepEqual(got.sort(), [
    'events:lock',
    'events:lock',
    'events:lock',
    'events:read',
    'events:write',
    'events:write',
    'events:write',
    'merchants:lock',
    'merchants:lock',
    'merchants:read',
    'merchants:read',
    'merchants:read',
    'merchants:write',
    'merchants:write',
    'payments:lock',
    'payments:read',
    'payments:read',
    'payments:read',
    'payments:read',
    'payments:read',
    'payments:write',
    'users:lock',
    'users:read',
    'users:read',
    'users:read',
    'users:write',
    'users:write',
    'users:write',
  ]);
});

test('every table is declared by its owner: a module or the chains layer in tables.ts, a family in schema.ts', () => {
  const declared = declarations();
  assert.ok(declared.size > 40, `the owners declare the tables (${declared.size} found)`);
  for (const [t, file] of declared)
    assert.match(
      file,
      /^(modules\/[a-z0-9]+\/tables\.ts|chains\/tables\.ts|chains\/[a-z0-9]+\/schema\.ts)$/,
      `${t} is declared in ${file}`,
    );
  // A tables.ts names its rows with the shared column types and its own module's types, nothing else.
  for (const file of new Set([...declared.values()].filter((f) => f.endsWith('/tables.ts'))))
    for (const m of readFileSync(join(SRC, file), 'utf8').matchAll(/^import .* from '([^']+)';$/gm))
      assert.ok(
        m[1] === 'kysely' || /^[./]*db\/schema\.ts$/.test(m[1]!) || /^\.\/[^/]+$/.test(m[1]!),
        `${file} imports ${m[1]}`,
      );
  for (const [folder, home] of Object.entries(HOMES)) {
    assert.ok(home.startsWith(folder) && statSync(join(SRC, home), { throwIfNoEntry: false }), `${home} exists`);
    assert.ok(
      [...declared.values()].some((f) => `${dirname(f)}/` === folder),
      `${folder} declares tables`,
    );
  }
  // db/ composes and runs the owners' migrations and declares no table; from outside it, it imports only core/ and
  // the configuration.
  const schema = readFileSync(join(SRC, 'db', 'schema.ts'), 'utf8');
  assert.match(schema, /export interface Database \{\}/);
  for (const file of files(join(SRC, 'db'), true))
    assert.doesNotMatch(
      readFileSync(file, 'utf8'),
      /from '\.\.\/(?!core\/|config\.ts')/,
      `${rel(file)} imports a layer above db/`,
    );
});

test('migrations live with their owner, and a migration names in its header the tables of others it touches', () => {
  const owner = new Map([...declarations()].map(([t, file]) => [t, `${dirname(file)}/`]));
  const migrations = files(SRC, true).filter((f) => /\/migrations\/[^/]+\.ts$/.test(f) && basename(f) !== 'index.ts');
  assert.ok(migrations.length > 25, `${migrations.length} migration files`);
  const touched =
    /\b(?:CREATE TABLE|ALTER TABLE|CREATE (?:UNIQUE )?INDEX \w+ ON|createTable\(|alterTable\()\s*['"]?([a-z_][a-z0-9_]*)/g;
  const strays: string[] = [];
  for (const file of migrations) {
    const path = rel(file);
    const folder = path.slice(0, path.indexOf('migrations/'));
    const text = readFileSync(file, 'utf8');
    const header = /^\/\*\*[\s\S]*?\*\//.exec(text)?.[0] ?? '';
    for (const m of code(text).matchAll(touched)) {
      const t = m[1]!;
      if (!owner.has(t) || owner.get(t) === folder || new RegExp(`\\b${t}\\b`).test(header)) continue;
      strays.push(`${path} touches ${t} (owned by ${owner.get(t)}) without naming it in its header`);
    }
  }
  assert.deepEqual([...new Set(strays)], []);
  // Modules (and the chains layer) share one numbering: each file is listed under its own name, no number twice.
  const own = migrations
    .map(rel)
    .filter((p) => /^(modules\/[a-z0-9]+|chains)\/migrations\//.test(p))
    .map((p) => basename(p, '.ts'))
    .sort();
  assert.deepEqual(Object.keys(ownMigrations).sort(), own, 'every module migration file is applied, under its name');
  for (const name of own) assert.match(name, /^\d{4}_[a-z0-9_]+$/);
  const numbers = own.map((n) => n.slice(0, 4));
  assert.deepEqual(
    numbers.filter((n, i) => numbers.indexOf(n) !== i),
    [],
    'no two module migrations share a number',
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
