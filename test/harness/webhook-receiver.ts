/**
 * A merchant's webhook endpoint for tests: a real HTTP server on 127.0.0.1 (port 0) that checks every request the
 * way the spec's Receiver rules tell a merchant to — signature header present, `t` within 300 s of now (the test's
 * fake clock), `v1` 64 lowercase hex characters, HMAC-SHA256 of `<t>.<raw body>` keyed with the webhook secret,
 * compared in constant time — and records what arrived. A request that fails the check is answered 400 and
 * recorded as rejected, never as an event.
 *
 * It can be told to answer the next N requests with an error status or to leave them hanging (past the sender's
 * timeout). `next(n)` resolves as soon as n further events have been acknowledged — no polling, no sleeps.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** NOTE: the spec's signature time tolerance. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The receiver's `now()` when the request arrived. */
  at: Date;
  /** null when the signature checks out; otherwise why it was rejected. */
  rejected: string | null;
  /** What the receiver answered; null while hanging. */
  answered: number | null;
}

export interface ReceivedEvent {
  id: string;
  type: string;
  created_at: string;
  data: any;
  /** `t` of the signature. */
  t: number;
  headers: IncomingHttpHeaders;
  rawBody: string;
  at: Date;
}

export interface WebhookReceiver {
  /** Endpoint URL (`http://127.0.0.1:<port>/webhooks`). */
  readonly url: string;
  /** Events acknowledged with 200, in arrival order (duplicates included: delivery is at least once). */
  readonly events: readonly ReceivedEvent[];
  /** Every request, in arrival order, including failed, hanging and rejected ones. */
  readonly requests: readonly ReceivedRequest[];
  /** Requests whose signature did not verify. */
  readonly rejected: readonly ReceivedRequest[];
  /** Sets the webhook secret (`whsec_…`) signatures are checked with. */
  setSecret(secret: string): void;
  /** The next `n` requests are verified and recorded, then answered with `status` (not acknowledged). */
  failNext(n: number, status?: number): void;
  /** The next `n` requests are verified and recorded, then never answered. */
  hangNext(n: number): void;
  /**
   * The next `n` acknowledged events not yet taken by an earlier `next` call, resolving when they have arrived.
   * Rejects after `timeoutMs` (real time) with what did arrive, so a missing webhook fails the test clearly.
   */
  next(n?: number, timeoutMs?: number): Promise<ReceivedEvent[]>;
  /** Closes every open connection (idle keep-alive ones included) and keeps listening. */
  dropConnections(): void;
  close(): Promise<void>;
}

export interface WebhookReceiverOptions {
  secret?: string;
  /** Current time for the `t` tolerance: pass the test's FakeClock (`() => clock.now()`). */
  now?: () => Date;
}

type Plan = { kind: 'fail'; status: number } | { kind: 'hang' };

/** Checks a `Service-Signature` header against the raw body: `{ t }` when it verifies, else `{ error }` with the reason. */
export function verifySignature(
  header: string | undefined,
  rawBody: string,
  secret: string,
  now: Date,
): { error: string } | { t: number } {
  if (!header) return { error: 'missing Service-Signature header' };
  const parts = new Map<string, string>();
  // Several `v1` entries appear while a rolled secret's overlap lasts; any one that verifies is enough.
  const v1s: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) continue;
    const key = item.slice(0, eq).trim();
    if (key === 'v1') v1s.push(item.slice(eq + 1).trim());
    else parts.set(key, item.slice(eq + 1).trim());
  }
  const tText = parts.get('t');
  if (!tText || !/^\d{1,12}$/.test(tText)) return { error: 'signature has no valid t' };
  const t = Number(tText);
  if (Math.abs(now.getTime() / 1000 - t) > SIGNATURE_TOLERANCE_SECONDS)
    return { error: `t=${t} is more than ${SIGNATURE_TOLERANCE_SECONDS} s from now` };
  if (v1s.length === 0 || v1s.some((v) => !/^[0-9a-f]{64}$/.test(v)))
    return { error: 'v1 is not 64 lowercase hex characters' };
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  if (!v1s.some((v) => timingSafeEqual(expected, Buffer.from(v, 'hex')))) return { error: 'signature mismatch' };
  return { t };
}

export async function startWebhookReceiver(opts: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
  const now = opts.now ?? (() => new Date());
  let secret = opts.secret ?? null;
  const plans: Plan[] = [];
  const events: ReceivedEvent[] = [];
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  let taken = 0;
  let waiters: Array<() => void> = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const at = now();
      const record: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        at,
        rejected: null,
        answered: null,
      };
      requests.push(record);
      const answer = (status: number, body: string) => {
        record.answered = status;
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(body);
      };
      const header = req.headers['service-signature'];
      const check =
        secret === null
          ? { error: 'receiver has no secret' }
          : verifySignature(typeof header === 'string' ? header : undefined, rawBody, secret, at);
      if ('error' in check) {
        record.rejected = check.error;
        return answer(400, check.error);
      }
      const plan = plans.shift();
      if (plan?.kind === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (plan?.kind === 'fail') return answer(plan.status, 'failing on purpose');
      let event: { id: string; type: string; created_at: string; data: unknown };
      try {
        event = JSON.parse(rawBody);
      } catch {
        record.rejected = 'body is not JSON';
        return answer(400, 'body is not JSON');
      }
      events.push({
        id: event.id,
        type: event.type,
        created_at: event.created_at,
        data: event.data,
        t: check.t,
        headers: req.headers,
        rawBody,
        at,
      });
      answer(200, 'ok');
      const ready = waiters;
      waiters = [];
      for (const w of ready) w();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    events,
    requests,
    get rejected() {
      return requests.filter((r) => r.rejected !== null);
    },
    setSecret(s) {
      secret = s;
    },
    failNext(n, status = 500) {
      for (let i = 0; i < n; i++) plans.push({ kind: 'fail', status });
    },
    hangNext(n) {
      for (let i = 0; i < n; i++) plans.push({ kind: 'hang' });
    },
    next(n = 1, timeoutMs = 10_000) {
      const want = taken + n;
      taken = want;
      return new Promise((resolve, reject) => {
        const check = () => {
          if (events.length < want) return false;
          clearTimeout(timer);
          resolve(events.slice(want - n, want));
          return true;
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== wake);
          reject(
            new Error(
              `expected ${want} webhook events, received ${events.length}: ${events.map((e) => e.type).join(', ') || 'none'}`,
            ),
          );
        }, timeoutMs);
        const wake = () => {
          if (!check()) waiters.push(wake);
        };
        wake();
      });
    },
    dropConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
