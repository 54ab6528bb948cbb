/**
 * Assertions test files share: an API answer that succeeded, one refused with the spec's Error body, and a
 * condition some other process or timer makes true (polled with a bound, never a sleep standing in for it).
 */
import assert from 'node:assert/strict';

/** An API answer as the test clients return it (test/harness/app.ts's ApiResponse, or any `{ status, body }`). */
export interface Answer {
  status: number;
  body: any;
}

/** Asserts the answer has `status` (200 unless told) and returns its body. */
export async function ok(res: Answer | Promise<Answer>, status = 200): Promise<any> {
  const r = await res;
  assert.equal(r.status, status, JSON.stringify(r.body));
  return r.body;
}

/**
 * Asserts the answer is the spec's Error body and nothing else: `status`, `error.code`, `error.param` (`null`
 * unless told: an error about no one field names none) and a message a reader can act on.
 */
export function assertError(res: Answer, status: number, code: string, param: string | null = null): void {
  const body = JSON.stringify(res.body);
  assert.equal(res.status, status, body);
  assert.deepEqual(Object.keys(res.body), ['error'], body);
  assert.equal(res.body.error.code, code, body);
  assert.equal(res.body.error.param, param, body);
  assert.equal(typeof res.body.error.message, 'string', body);
  assert.ok(res.body.error.message.length > 0, body);
}

/** `assertError` on an answer still to come. */
export async function refused(
  res: Answer | Promise<Answer>,
  status: number,
  code: string,
  param: string | null = null,
): Promise<void> {
  assertError(await res, status, code, param);
}

export interface PollOptions {
  /** How long to wait before failing (5 s unless told). */
  timeoutMs?: number;
  /** How often to look (every 50 ms unless told). */
  intervalMs?: number;
}

/**
 * Looks at `fn` until it gives a truthy value and returns that value; fails with "timed out waiting for `what`"
 * once `timeoutMs` has passed. `fn` may be synchronous (a flag another callback sets) or ask a server.
 */
export async function eventually<T>(
  what: string,
  fn: () => T | Promise<T>,
  opts: PollOptions = {},
): Promise<Exclude<T, null | undefined | false | 0 | ''>> {
  const { timeoutMs = 5_000, intervalMs = 50 } = opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as Exclude<T, null | undefined | false | 0 | ''>;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
