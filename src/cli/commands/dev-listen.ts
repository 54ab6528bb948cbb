/**
 * `kasse listen --forward-to URL`: reads the test API's event stream (an outgoing connection, so nothing on the
 * developer's machine has to be reachable from Kasse) and POSTs each event to URL as Kasse's webhooks would — the
 * same body and headers — signed with a listen secret instead of the account's webhook secret, then prints one
 * line with the local answer.
 *
 * The listen secret is derived from the API key (HMAC-SHA256 of a fixed label keyed with the key), so it is the
 * same on every start and every machine for that key, changes when the key is rolled, and reveals nothing about the
 * key. A dropped connection is re-made with the last event id, so events published meanwhile are still forwarded.
 */
import { createHmac } from 'node:crypto';
import { sign, type StreamMessage } from '../../../sdk/src/index.ts';
import { UsageError } from '../../core/flags.ts';
import { remote } from './dev-remote.ts';

/** Deadline of the local endpoint's answer, as for real webhooks. */
const FORWARD_TIMEOUT_MS = 10_000;

/** The secret `kasse listen` signs with for an API key: `whsec_` + 43 characters, like an account's. */
export function listenSecret(apiKey: string): string {
  return `whsec_${createHmac('sha256', apiKey).update('kasse listen signing secret v1').digest('base64url')}`;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const clock = () => new Date().toTimeString().slice(0, 8);

async function forward(url: string, secret: string, m: StreamMessage): Promise<string> {
  const started = Date.now();
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Kasse-Listen/1',
        'service-signature': sign(m.data, secret),
        'service-event-id': m.id,
        'service-event-type': m.type,
      },
      body: m.data,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return `${res.status}${res.statusText ? ` ${res.statusText}` : ''} (${Date.now() - started} ms)`;
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return `failed: ${e.name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : (e.cause?.code ?? e.cause?.message ?? e.message)}`;
  }
}

export async function listen(f: Record<string, unknown>): Promise<number> {
  const { kasse, key, baseUrl } = remote(f);
  const secret = listenSecret(key);
  if (f['print-secret']) {
    out(secret);
    return 0;
  }
  const target = f['forward-to'] as string | undefined;
  if (!target) throw new UsageError('give --forward-to URL, e.g. --forward-to http://localhost:3000/webhooks');
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new UsageError(`--forward-to is not a URL: ${target}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError('--forward-to must be an http:// or https:// URL');
  const types = typeof f.events === 'string' && f.events !== '' ? f.events : undefined;

  const account = await kasse.account.retrieve();
  out(
    `Forwarding test events of ${account.name} (${account.id}) from ${baseUrl} to ${url}${types ? ` (only ${types})` : ''}`,
  );
  out(`Your webhook signing secret is ${secret} (the same every time for this key)`);

  const stop = new AbortController();
  const quit = () => stop.abort();
  process.once('SIGINT', quit).once('SIGTERM', quit);
  let connected = false;
  const stream = kasse.events.stream(types ? { types } : undefined, {
    signal: stop.signal,
    onConnect: () => {
      out(connected ? 'Reconnected.' : 'Ready. Waiting for events… (Ctrl-C to stop)');
      connected = true;
    },
    onDisconnect: (err) => out(`Connection lost${err ? ` (${(err as Error).message})` : ''}; reconnecting…`),
  });
  try {
    for await (const m of stream) {
      const paymentId = (m.event.data as { id?: string } | undefined)?.id ?? '';
      out(`${clock()}  ${m.type.padEnd(19)} ${m.id}  ${paymentId}  → ${await forward(url.href, secret, m)}`);
    }
  } finally {
    process.off('SIGINT', quit).off('SIGTERM', quit);
  }
  out('Stopped.');
  return 0;
}
