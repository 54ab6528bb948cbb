/** Id generation: ULID time and order, carries within one millisecond, and the published id patterns. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ID_PATTERNS, newId, requestIds, ulid } from '../../src/core/ids.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const decodeTime = (id: string) => [...id.slice(0, 10)].reduce((t, c) => t * 32 + CROCKFORD.indexOf(c), 0);

test('ids carry their millisecond and sort in creation order, also within one millisecond and when the clock steps back', () => {
  const t = Date.UTC(2026, 10, 21, 12, 0, 0, 123);
  const ids = [ulid(t), ulid(t), ulid(t), ulid(t + 1), ulid(t + 1), ulid(t - 5_000), ulid(t + 2)];
  for (const id of ids) assert.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(decodeTime(ids[0]!), t);
  assert.equal(decodeTime(ids[3]!), t + 1);
  // A clock that steps back keeps the last time rather than breaking the order.
  assert.equal(decodeTime(ids[5]!), t + 1);
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
});

test('many ids in one millisecond stay unique and ordered across carries in the random part', () => {
  const t = Date.UTC(2026, 10, 21, 12, 0, 1);
  const ids = Array.from({ length: 5_000 }, () => ulid(t));
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual([...ids].sort(), ids);
  assert.ok(ids.every((id) => decodeTime(id) === t));
});

test('prefixed ids match the published patterns', () => {
  assert.match(newId('pay'), new RegExp(ID_PATTERNS.pay));
  assert.match(newId('lnk'), new RegExp(ID_PATTERNS.lnk));
  assert.match(newId('evt'), new RegExp(ID_PATTERNS.evt));
});

test('request ids: one process prefix, then a counter; unique, ordered, and another generator has another prefix', () => {
  const next = requestIds();
  const ids = Array.from({ length: 10_000 }, () => next());
  for (const id of [ids[0]!, ids[9_999]!]) assert.match(id, /^req_[0-9A-Z]{26}$/);
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual([...ids].sort(), ids);
  assert.ok(
    ids.every((id) => id.slice(0, 19) === ids[0]!.slice(0, 19)),
    'the process prefix stays',
  );
  assert.notEqual(requestIds()().slice(0, 19), ids[0]!.slice(0, 19));
  // The per-request part wraps into the cached one and the order holds across wraps (one low digit: 32 per wrap).
  const small = requestIds(1);
  const wrapped = Array.from({ length: 200 }, () => small());
  assert.ok(wrapped.every((id) => id.length === wrapped[0]!.length));
  assert.equal(new Set(wrapped).size, wrapped.length);
  assert.deepEqual([...wrapped].sort(), wrapped);
});
