/** The text rules every field follows (src/core/text.ts): lengths in code points, well-formed Unicode only. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import { illFormedText, isWellFormed, mayHoldSurrogateEscape, textLength } from '../../src/core/text.ts';
import { parseDisbursementCsv } from '../../src/modules/disbursements/csv.ts';

const SAMPLES = [
  '',
  'abc',
  '😀',
  '😀'.repeat(200),
  'a😀b',
  '\ud800',
  '\udc00',
  'x\ud83d',
  '\ude00\ud83d',
  'é',
  'e\u0301',
  '\ufffd',
  '👩‍👩‍👧',
];

test('textLength counts code points, as JSON Schema maxLength does', () => {
  assert.equal(textLength('😀'.repeat(200)), 200);
  assert.equal(textLength('a😀b'), 3);
  assert.equal(textLength('\ud800x'), 2, 'a lone surrogate is one');
  const ajv = new Ajv();
  for (const s of SAMPLES) {
    const n = textLength(s);
    assert.equal(n, [...s].length, JSON.stringify(s));
    assert.equal(ajv.validate({ type: 'string', maxLength: n }, s), true, `${JSON.stringify(s)} fits maxLength ${n}`);
    if (n > 0)
      assert.equal(
        ajv.validate({ type: 'string', maxLength: n - 1 }, s),
        false,
        `${JSON.stringify(s)} exceeds maxLength ${n - 1}`,
      );
  }
});

test('isWellFormed agrees with String.prototype.isWellFormed', () => {
  for (const s of SAMPLES)
    assert.equal(isWellFormed(s), (s as unknown as { isWellFormed(): boolean }).isWellFormed(), JSON.stringify(s));
});

test('illFormedText finds the first bad value or key, with its path', () => {
  assert.equal(illFormedText({ a: ['😀', { b: 'é' }], c: 1, d: null, e: true }), null);
  assert.deepEqual(illFormedText({ a: 'ok', items: [{ x: 'ok' }, { x: 'b\ud800' }] }), {
    path: ['items', 1, 'x'],
    key: false,
  });
  assert.deepEqual(illFormedText({ metadata: { 'k\udfff': 1 } }), { path: ['metadata'], key: true });
  assert.deepEqual(illFormedText({ '\ud800': 1 }), { path: [], key: true });
  assert.deepEqual(illFormedText('\ud800'), { path: [], key: false });
});

test('only a surrogate escape in JSON can make one, so other bodies skip the walk', () => {
  assert.equal(mayHoldSurrogateEscape('{"a":"\\ud800"}'), true);
  assert.equal(mayHoldSurrogateEscape('{"a":"\\uDFFF"}'), true);
  assert.equal(mayHoldSurrogateEscape('{"a":"\\u00e9 😀"}'), false);
  for (const json of ['{"a":"\\ud800"}', '["\\udc00"]', '{"\\uDBFF":1}'])
    assert.notEqual(illFormedText(JSON.parse(json)), null, json);
});

test('a disbursement label of 120 emoji is 120 characters', () => {
  const dest = `0x${'1'.repeat(40)}`;
  assert.deepEqual(parseDisbursementCsv(`${dest},100,${'😀'.repeat(120)}`).rows[0]!.errors, []);
  assert.equal(parseDisbursementCsv(`${dest},100,${'😀'.repeat(121)}`).rows[0]!.errors.length, 1);
});
