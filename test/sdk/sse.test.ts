/** The SDK's server-sent events parser, against the format's rules (line ends, chunking, fields, comments). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSseParser, type SseMessage } from '../../sdk/src/index.ts';

function parse(chunks: string[]): { messages: SseMessage[]; retries: number[] } {
  const messages: SseMessage[] = [];
  const retries: number[] = [];
  const p = createSseParser(
    (m) => messages.push(m),
    (ms) => retries.push(ms),
  );
  for (const c of chunks) p.push(c);
  return { messages, retries };
}

test('messages end at a blank line; data lines join with a newline; id persists; event defaults to message', () => {
  const { messages, retries } = parse([
    'retry: 2000\n\n: a comment\nid: 1\nevent: payment.paid\ndata: {"a":\ndata:  1}\n\ndata: x\n\n',
  ]);
  assert.deepEqual(messages, [
    { id: '1', event: 'payment.paid', data: '{"a":\n 1}' },
    { id: '1', event: 'message', data: 'x' },
  ]);
  assert.deepEqual(retries, [2000]);
});

test('CRLF, CR and LF line ends, split anywhere across chunks', () => {
  const text = 'id: a\r\nevent: e\rdata: one\n\r\nid: b\rdata: two\r\r';
  const whole = parse([text]).messages;
  assert.deepEqual(whole, [
    { id: 'a', event: 'e', data: 'one' },
    { id: 'b', event: 'message', data: 'two' },
  ]);
  for (let i = 1; i < text.length; i++)
    assert.deepEqual(parse([text.slice(0, i), text.slice(i)]).messages, whole, `split at ${i}`);
  assert.deepEqual(parse([...text]).messages, whole, 'one character at a time');
});

test('a message without data is not dispatched; unknown fields, bad retry values and ids with NUL are ignored', () => {
  const { messages, retries } = parse(['event: ping\n\nfoo: bar\nretry: soon\nid: x\0y\ndata\n\n']);
  assert.deepEqual(messages, [{ id: undefined, event: 'message', data: '' }]);
  assert.deepEqual(retries, []);
  assert.deepEqual(parse(['data: unfinished']).messages, [], 'nothing before the blank line');
});
