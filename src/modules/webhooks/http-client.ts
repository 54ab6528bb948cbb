/**
 * The one HTTP client for merchant-controlled URLs (webhook deliveries; later anything else Kasse sends to a
 * merchant's server). Keep-alive connection pools per mode and scheme, a hard deadline per request, redirects not
 * followed (a 3xx is a failure like any other non-2xx).
 *
 * Live mode refuses private networks (SSRF): the host is resolved with `dns.lookup` (every address), and if any
 * address lies in a refused range (`blockedRange` in core/addresses.ts: unspecified, loopback, private, CGNAT,
 * link-local, unique-local, multicast or otherwise reserved, IPv4 embedded in IPv6 included) the request is refused
 * before a connection is made. The check runs inside the connection's own lookup, so the socket connects to exactly the
 * addresses that were checked; a DNS answer that changes between check and connect (rebinding) cannot slip through.
 * Literal IP hosts are checked directly. Test mode applies no address rule, so a developer's localhost works.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { blockedRange } from '../../core/addresses.ts';
import type { Mode } from '../../core/mode.ts';

export type AttemptOutcome = 'delivered' | 'http_error' | 'timeout' | 'network_error' | 'refused';

export interface PostResult {
  /** `delivered` for any 2xx. */
  outcome: AttemptOutcome;
  status: number | null;
  error: string | null;
  /** The first bytes of the response body as text, for the attempt log. */
  body: string | null;
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
    address === host ? `refused: ${address} is a ${range} address` : `refused: ${host} resolves to ${address}, a ${range} address`,
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
  dnsLookup(hostname, { family: options.family ?? 0, hints: options.hints, all: true, order: 'verbatim' }, (err, addresses) => {
    if (err) return callback(err, '');
    for (const a of addresses) {
      const range = blockedRange(a.address);
      if (range) return callback(refusal(hostname, a.address, range), '');
    }
    if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

interface Target {
  protocol: 'http:' | 'https:';
  /** Without the brackets of an IPv6 literal. */
  hostname: string;
  port: string;
  path: string;
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
  const target: Target = { protocol: u.protocol, hostname: u.hostname.replace(/^\[|\]$/g, ''), port: u.port, path: `${u.pathname}${u.search}` };
  if (u.username || u.password) target.auth = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
  return target;
}

export interface MerchantHttpOptions {
  /** Deadline for the whole exchange: connect, send, response headers and body. */
  timeoutMs: number;
  userAgent: string;
}

export class MerchantHttpClient {
  private readonly agents: Record<Mode, { http: http.Agent; https: https.Agent }>;
  private readonly targets = new Map<string, Target | string>();

  constructor(private readonly opts: MerchantHttpOptions) {
    const make = (mode: Mode) => {
      const base = { keepAlive: true, timeout: 30_000, ...(mode === 'live' ? { lookup: checkedLookup } : {}) };
      return { http: new http.Agent(base), https: new https.Agent(base) };
    };
    this.agents = { test: make('test'), live: make('live') };
  }

  /** POSTs `body` to `url`; never throws, every failure is a result. */
  async post(mode: Mode, url: string, body: string, headers: Record<string, string>): Promise<PostResult> {
    const started = performance.now();
    const done = (r: Omit<PostResult, 'durationMs'>): PostResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
    const target = this.target(url);
    if (typeof target === 'string') return done({ outcome: 'network_error', status: null, error: target, body: null });
    if (mode === 'live' && isIP(target.hostname)) {
      const range = blockedRange(target.hostname);
      if (range) return done({ outcome: 'refused', status: null, error: refusal(target.hostname, target.hostname, range).message, body: null });
    }
    const deadline = started + this.opts.timeoutMs;
    let result = await this.once(mode, target, body, headers, deadline);
    if (result.retryOnFreshSocket) result = await this.once(mode, target, body, headers, deadline);
    return done(result);
  }

  /**
   * One request. A keep-alive socket the server closed while idle fails at once with ECONNRESET or EPIPE; that
   * (and only that) is worth one immediate retry on a new connection.
   */
  private once(
    mode: Mode,
    target: Target,
    body: string,
    headers: Record<string, string>,
    deadline: number,
  ): Promise<Omit<PostResult, 'durationMs'> & { retryOnFreshSocket?: boolean }> {
    const secure = target.protocol === 'https:';
    const agent = secure ? this.agents[mode].https : this.agents[mode].http;
    const headerLines = { ...headers, 'Content-Length': String(Buffer.byteLength(body)), 'User-Agent': this.opts.userAgent };
    return new Promise((resolve) => {
      let settled = false;
      let gotResponse = false;
      const settle = (r: Omit<PostResult, 'durationMs'> & { retryOnFreshSocket?: boolean }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const req = (secure ? https : http).request({ ...target, method: 'POST', agent, headers: headerLines });
      // Past the deadline with a status in hand, the status counts (the merchant answered); otherwise a timeout.
      let finishResponse: (() => void) | null = null;
      const timer = setTimeout(() => {
        finishResponse?.();
        req.destroy(new Timeout());
      }, Math.max(0, deadline - performance.now()));
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof Timeout) {
          return settle({ outcome: 'timeout', status: null, error: `no answer within ${this.opts.timeoutMs} ms`, body: null });
        }
        if (err instanceof RefusedDestination) return settle({ outcome: 'refused', status: null, error: err.message, body: null });
        const stale = req.reusedSocket && !gotResponse && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        settle({ outcome: 'network_error', status: null, error: err.code ? `${err.code}: ${err.message}` : err.message, body: null, retryOnFreshSocket: stale });
      });
      req.on('response', (res) => {
        gotResponse = true;
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        let read = 0;
        const finish = () => {
          const snippet = kept > 0 ? Buffer.concat(chunks).toString('utf8') : null;
          const ok = status >= 200 && status < 300;
          settle({ outcome: ok ? 'delivered' : 'http_error', status, error: ok ? null : `HTTP ${status}`, body: snippet });
        };
        finishResponse = finish;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (kept < SNIPPET_BYTES) {
            const part = chunk.subarray(0, SNIPPET_BYTES - kept);
            chunks.push(part);
            kept += part.length;
          }
          if (read > DRAIN_BYTES) {
            finish();
            res.destroy();
          }
        });
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', () => finish());
      });
      req.end(body);
    });
  }

  /** Request options for a URL, parsed once per URL (a few merchants' URLs carry most traffic); or why not. */
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
    for (const pair of Object.values(this.agents)) {
      pair.http.destroy();
      pair.https.destroy();
    }
  }
}
