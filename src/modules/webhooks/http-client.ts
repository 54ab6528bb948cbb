/**
 * The one HTTP client for merchant-controlled URLs (webhook deliveries; the x402 catalogue reading the payment a
 * resource server asks for). undici keep-alive connection pools, one per mode and destination origin with a bounded number
 * of connections, a hard deadline per request, redirects not followed (a 3xx is a failure like any other non-2xx).
 *
 * Live mode refuses private networks (SSRF): the host is resolved with `dns.lookup` (every address), and if any
 * address lies in a refused range (`blockedRange` in core/addresses.ts: unspecified, loopback, private, CGNAT,
 * link-local, unique-local, multicast or otherwise reserved, IPv4 embedded in IPv6 included) the request is refused
 * before a connection is made. The check runs inside the connection's own lookup, so the socket connects to exactly the
 * addresses that were checked; a DNS answer that changes between check and connect (rebinding) cannot slip through.
 * Literal IP hosts are checked directly. Test mode applies no address rule, so a developer's localhost works.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Agent } from 'undici';
import { blockedRange } from '../../core/addresses.ts';
import { loadOnce } from '../../core/lazy.ts';
import type { Mode } from '../../core/mode.ts';

export type AttemptOutcome = 'delivered' | 'http_error' | 'timeout' | 'network_error' | 'refused';

export interface PostResult {
  /** `delivered` for any 2xx. */
  outcome: AttemptOutcome;
  status: number | null;
  error: string | null;
  /** The first bytes of the response body as text, for the attempt log. */
  body: string | null;
  /** The answer's headers (lower-case names), when it answered. */
  headers?: Record<string, string>;
  durationMs: number;
}

/** Raised (as the connection's lookup error) when a live-mode destination resolves to a refused address. */
export class RefusedDestination extends Error {
  readonly code = 'EKASSE_REFUSED';
}

class Timeout extends Error {}

const SNIPPET_BYTES = 1024;
/** Response bytes read to keep the connection reusable; a longer answer closes it instead. */
const DRAIN_BYTES = 64 * 1024;

function refusal(host: string, address: string, range: string): RefusedDestination {
  return new RefusedDestination(
    address === host
      ? `refused: ${address} is a ${range} address`
      : `refused: ${host} resolves to ${address}, a ${range} address`,
  );
}

/**
 * `lookup` for live-mode sockets: resolves every address, refuses the host if any of them is refused, and hands
 * the checked addresses to the socket (so it connects to nothing else).
 */
function checkedLookup(
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
): void {
  dnsLookup(
    hostname,
    { family: options.family ?? 0, hints: options.hints, all: true, order: 'verbatim' },
    (err, addresses) => {
      if (err) return callback(err, '');
      for (const a of addresses) {
        const range = blockedRange(a.address);
        if (range) return callback(refusal(hostname, a.address, range), '');
      }
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    },
  );
}

interface Target {
  protocol: 'http:' | 'https:';
  /** `scheme://host:port`, the key of the connection pool. */
  origin: string;
  /** Without the brackets of an IPv6 literal. */
  hostname: string;
  port: string;
  path: string;
  /** `Authorization` header value for credentials in the URL. */
  auth?: string;
}

function parseTarget(url: string): Target | string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'invalid URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `unsupported scheme ${u.protocol}`;
  const target: Target = {
    protocol: u.protocol,
    origin: u.origin,
    hostname: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port,
    path: `${u.pathname}${u.search}`,
  };
  if (u.username || u.password)
    target.auth = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  return target;
}

export interface MerchantHttpOptions {
  /** Deadline for the whole exchange: connect, send, response headers and body. */
  timeoutMs: number;
  userAgent: string;
  /** Keep-alive connections held per destination origin at most (requests beyond wait for one). Default 64. */
  connectionsPerOrigin?: number;
}

type Attempt = Omit<PostResult, 'durationMs'>;

/** Socket errors that mean a pooled keep-alive connection was closed under the request, before any answer. */
const STALE_SOCKET = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** undici, loaded at the first delivery. */
const undici = loadOnce(() => import('undici'));

export class MerchantHttpClient {
  /**
   * One undici Agent per mode: a keep-alive Pool per destination origin inside it. Made (and undici loaded) at the
   * first request, so a process that sends none does not load it.
   */
  private agents: Promise<Record<Mode, Agent>> | null = null;
  private readonly targets = new Map<string, Target | string>();

  constructor(private readonly opts: MerchantHttpOptions) {}

  private pools(): Promise<Record<Mode, Agent>> {
    this.agents ??= undici().then(({ Agent }) => {
      const { connectionsPerOrigin, timeoutMs } = this.opts;
      const make = (mode: Mode) =>
        new Agent({
          connections: connectionsPerOrigin ?? 64,
          pipelining: 1,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          connect: { timeout: timeoutMs, ...(mode === 'live' ? { lookup: checkedLookup } : {}) },
        });
      return { test: make('test'), live: make('live') };
    });
    return this.agents;
  }

  /** POSTs `body` to `url`; never throws, every failure is a result. */
  post(mode: Mode, url: string, body: string, headers: Record<string, string>): Promise<PostResult> {
    return this.send(mode, 'POST', url, body, headers);
  }

  /** Sends a `method` request without a body to `url` (reading what a merchant's server answers); never throws. */
  ask(mode: Mode, method: string, url: string, headers: Record<string, string>): Promise<PostResult> {
    return this.send(mode, method, url, null, headers);
  }

  private async send(
    mode: Mode,
    method: string,
    url: string,
    body: string | null,
    headers: Record<string, string>,
  ): Promise<PostResult> {
    const started = performance.now();
    const done = (r: Attempt): PostResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
    const target = this.target(url);
    if (typeof target === 'string') return done({ outcome: 'network_error', status: null, error: target, body: null });
    if (mode === 'live' && isIP(target.hostname)) {
      const range = blockedRange(target.hostname);
      if (range)
        return done({
          outcome: 'refused',
          status: null,
          error: refusal(target.hostname, target.hostname, range).message,
          body: null,
        });
    }
    const deadline = started + this.opts.timeoutMs;
    const request = {
      ...headers,
      'user-agent': this.opts.userAgent,
      ...(target.auth ? { authorization: target.auth } : {}),
    };
    let result = await this.once(mode, target, method, body, request, deadline);
    // A keep-alive connection the server closed while idle fails at once, before any answer: worth one immediate
    // retry on a new connection (at worst the receiver sees the event twice, which at-least-once allows).
    if (result.stale && performance.now() < deadline)
      result = await this.once(mode, target, method, body, request, deadline);
    return done(result.attempt);
  }

  /** One request; the deadline covers waiting for a connection, connecting, sending, the answer and its body. */
  private async once(
    mode: Mode,
    target: Target,
    method: string,
    body: string | null,
    headers: Record<string, string>,
    deadline: number,
  ): Promise<{ attempt: Attempt; stale?: boolean }> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Timeout()), Math.max(0, deadline - performance.now()));
    let status: number | null = null;
    let answeredHeaders: Record<string, string> = {};
    const chunks: Buffer[] = [];
    let kept = 0;
    const answered = (): Attempt => {
      const ok = status! >= 200 && status! < 300;
      const snippet = kept > 0 ? Buffer.concat(chunks).toString('utf8') : null;
      return {
        outcome: ok ? 'delivered' : 'http_error',
        status,
        error: ok ? null : `HTTP ${status}`,
        body: snippet,
        headers: answeredHeaders,
      };
    };
    try {
      const res = await (await this.pools())[mode].request({
        origin: target.origin,
        path: target.path,
        method: method as 'POST',
        headers,
        body,
        signal: abort.signal,
      });
      status = res.statusCode;
      answeredHeaders = Object.fromEntries(
        Object.entries(res.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : String(v)]),
      );
      // Read the answer to keep the connection reusable; a longer one than DRAIN_BYTES closes it instead. Past the
      // deadline the body errors (aborted) and what arrived counts.
      await new Promise<void>((resolve) => {
        let read = 0;
        res.body.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (kept < SNIPPET_BYTES) {
            const part = chunk.subarray(0, SNIPPET_BYTES - kept);
            chunks.push(part);
            kept += part.length;
          }
          if (read > DRAIN_BYTES) {
            res.body.destroy();
            resolve();
          }
        });
        res.body.on('end', resolve);
        res.body.on('close', resolve);
        res.body.on('error', () => resolve());
      });
      return { attempt: answered() };
    } catch (caught) {
      // Past the deadline with a status in hand, the status counts (the merchant answered); otherwise a timeout.
      if (status !== null) return { attempt: answered() };
      const err = (abort.signal.aborted ? abort.signal.reason : caught) as NodeJS.ErrnoException;
      if (
        err instanceof Timeout ||
        err?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
        err?.code === 'UND_ERR_CONNECT_TIMEOUT'
      ) {
        return {
          attempt: {
            outcome: 'timeout',
            status: null,
            error: `no answer within ${this.opts.timeoutMs} ms`,
            body: null,
          },
        };
      }
      const refused =
        err instanceof RefusedDestination ? err : err?.cause instanceof RefusedDestination ? err.cause : null;
      if (refused) return { attempt: { outcome: 'refused', status: null, error: refused.message, body: null } };
      const code = err?.code ?? (err?.cause as NodeJS.ErrnoException | undefined)?.code;
      const message = err instanceof Error ? err.message : String(err);
      return {
        attempt: { outcome: 'network_error', status: null, error: code ? `${code}: ${message}` : message, body: null },
        stale: code !== undefined && STALE_SOCKET.has(code),
      };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Request target for a URL, parsed once per URL (a few merchants' URLs carry most traffic); or why not. */
  private target(url: string): Target | string {
    let t = this.targets.get(url);
    if (t === undefined) {
      t = parseTarget(url);
      if (this.targets.size >= 10_000) this.targets.clear();
      this.targets.set(url, t);
    }
    return t;
  }

  /** Closes pooled connections. */
  close(): void {
    void this.agents?.then((agents) => {
      for (const agent of Object.values(agents)) void agent.destroy().catch(() => {});
    });
  }
}
