/**
 * Time comes from the injected clock: in src/modules and src/chains no code reads the time itself (`Date.now()`,
 * `new Date()` without an argument, `Date()`), so every rule that depends on time follows the clock tests move.
 * Parsing or building an instant from a given value (`new Date(x)`, `Date.parse`) is not reading the time. Waits on
 * the network that must pass in real time use a timer (`AbortSignal.timeout`), which reads no clock. The scan reads
 * the syntax tree, so comments and strings that mention the calls do not count.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { KASSE_HOME } from '../../src/config.ts';
import { retryAfter } from '../../src/chains/jsonrpc.ts';
import { FakeClock, HOUR, MINUTE, pollPause, SECOND, systemClock } from '../../src/core/clock.ts';

const SCANNED = ['src/modules', 'src/chains'];

/** Where `text` reads the time itself, as `line: code`. */
function timeReads(text: string): string[] {
  const file = ts.createSourceFile('scanned.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const isDate = (e: ts.Expression) => ts.isIdentifier(e) && e.text === 'Date';
    const reads =
      (ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        isDate(node.expression.expression) &&
        node.expression.name.text === 'now') ||
      (ts.isNewExpression(node) && isDate(node.expression) && (node.arguments?.length ?? 0) === 0) ||
      (ts.isCallExpression(node) && isDate(node.expression));
    if (reads) found.push(`${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('time comes from the injected clock', () => {
  test('the scan finds the ways code reads the time, and nothing else', () => {
    assert.deepEqual(
      timeReads(
        [
          'const a = Date.now();',
          'const b = new Date();',
          'const c = new Date;',
          'const d = new Date(Date.now() + 5);',
          'const e = new Date(x); const f = Date.parse(s); const g = clock.now(); const h = performance.now();',
          '// Date.now() and new Date() in a comment',
          "const i = 'new Date()';",
          'const j = Date(); const k = String(Date());',
        ].join('\n'),
      ),
      ['1: Date.now()', '2: new Date()', '3: new Date', '4: Date.now()', '8: Date()', '8: Date()'],
    );
  });

  test(`no code in ${SCANNED.join(' or ')} reads the time itself`, () => {
    const files = SCANNED.flatMap((dir) =>
      readdirSync(join(KASSE_HOME, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join(KASSE_HOME, dir, f)),
    );
    assert.ok(files.length > 100, `found ${files.length} files`);
    const reads = files.flatMap((f) => {
      const text = readFileSync(f, 'utf8');
      // Only a file that names Date can read the time through it; the rest need no syntax tree.
      return /\bDate\b/.test(text) ? timeReads(text).map((r) => `${relative(KASSE_HOME, f)}:${r}`) : [];
    });
    assert.deepEqual(reads, []);
  });
});

describe('waiting on the clock', () => {
  test('a fake clock ends a wait when it is moved to or past its instant, at once when it is there already', async () => {
    const clock = new FakeClock('2026-01-01T00:00:00Z');
    const ended: string[] = [];
    const wait = (name: string, at: string) => clock.until(new Date(at)).then(() => void ended.push(name));
    const all = [
      wait('b', '2026-01-01T00:01:00Z'),
      wait('a', '2026-01-01T00:00:30Z'),
      wait('c', '2026-01-01T01:00:00Z'),
    ];
    await wait('now', '2026-01-01T00:00:00Z');
    assert.deepEqual(ended, ['now']);
    clock.advance(30 * SECOND);
    await all[1];
    clock.set('2026-01-01T00:05:00Z');
    await all[0];
    assert.deepEqual(ended, ['now', 'a', 'b']);
    clock.set('2026-01-01T01:00:00Z');
    await all[2];
    assert.deepEqual(ended, ['now', 'a', 'b', 'c']);
  });

  test('an aborted wait ends at once, on the fake clock and the system clock', async () => {
    const fake = new FakeClock();
    for (const clock of [fake, systemClock]) {
      const stop = new AbortController();
      const wait = clock.until(new Date(clock.millis() + HOUR), stop.signal);
      stop.abort();
      await wait;
    }
    assert.equal(fake.now().toISOString(), '2026-01-01T00:00:00.000Z', 'the fake clock did not move');
  });

  test('the system clock ends a wait when its instant has come', async () => {
    const at = new Date(systemClock.millis() + 20);
    await systemClock.until(at);
    assert.ok(systemClock.millis() >= at.getTime());
  });

  test('a poll pause ends at the clock’s deadline before its interval of real time', { timeout: 10_000 }, async () => {
    const clock = new FakeClock();
    const deadline = new Date(clock.millis() + MINUTE);
    const paused = pollPause(clock, HOUR, deadline);
    clock.advance(MINUTE);
    await paused;
  });
});

describe('time that comes with a message', () => {
  const headers = (h: Record<string, string>) => new Headers(h);
  test("an RPC node's Retry-After date is measured from its response's own Date", () => {
    const date = 'Wed, 21 Oct 2026 07:28:00 GMT';
    assert.equal(retryAfter(headers({ 'retry-after': 'Wed, 21 Oct 2026 07:28:05 GMT', date })), 5000);
    assert.equal(retryAfter(headers({ 'retry-after': 'Wed, 21 Oct 2026 07:27:00 GMT', date })), 0);
    assert.equal(
      retryAfter(headers({ 'retry-after': 'Wed, 21 Oct 2026 07:28:05 GMT' })),
      null,
      'no Date to measure from',
    );
    assert.equal(retryAfter(headers({ 'retry-after': '7', date })), 7000);
    assert.equal(retryAfter(headers({ 'retry-after': 'soon', date })), null);
    assert.equal(retryAfter(headers({})), null);
  });
});
