/**
 * Local stand-ins for the price providers: node:http servers on 127.0.0.1 (port 0) speaking CoinGecko's and
 * Binance's real wire formats, so tests run the real clients. Prices can be changed at any time; the next N requests
 * can be made to fail (HTTP status, a hang past the client's timeout, or a non-JSON body); every request is counted
 * and logged.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What `failNext` makes a request do: answer with this HTTP status, never answer, or answer 200 with garbage. */
export type FailMode = number | 'hang' | 'malformed';

/** A running fake provider. */
export interface PriceServer {
  /** CoinGecko: the `…/api/v3` base. Binance: the host root. No trailing slash. */
  readonly url: string;
  /**
   * Sets a price (CoinGecko id such as `ethereum`, or Binance symbol such as `ETHUSDT`).
   * CoinGecko: a number is sent as JSON would write it; a string is written raw as the JSON number text (so `"1e-7"`
   * or `"123456789.123456789"` reach the client exactly like that). `at` fixes `last_updated_at`; without it the
   * server's `now()` at answer time is used.
   * Binance: sent as Binance does, a string padded to 8 decimals (`"3456.78000000"`); `at` is ignored.
   */
  setPrice(idOrSymbol: string, value: number | string, at?: Date): void;
  /** Forgets a price (CoinGecko then omits the id; Binance answers -1121 Invalid symbol). */
  removePrice(idOrSymbol: string): void;
  /** The next `n` requests fail with `mode`. Calls accumulate in order. */
  failNext(n: number, mode: FailMode): void;
  /** Delays every answer by `ms` (0 = none); for single-flight tests. */
  setDelay(ms: number): void;
  /** Number of requests received so far. */
  readonly requests: number;
  /** Path and query of every request received, in order. */
  readonly requestLog: readonly string[];
  /** Stops the server, dropping hung requests. */
  close(): Promise<void>;
}

export interface PriceServerOptions {
  /** Server time for default `last_updated_at` (CoinGecko); pass a FakeClock's `now` to stay in step with it. */
  now?: () => Date;
}

type Handler = (req: IncomingMessage, url: URL, res: ServerResponse) => void;

interface Core {
  url: string;
  failQueue: FailMode[];
  delayMs: number;
  requests: number;
  requestLog: string[];
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

async function listen(
  handle: Handler,
  failure: (res: ServerResponse, status: number) => void,
  basePath: string,
): Promise<Core> {
  const hung = new Set<ServerResponse>();
  const core: Core = { url: '', failQueue: [], delayMs: 0, requests: 0, requestLog: [], close: async () => {} };
  const server: Server = createServer((req, res) => {
    core.requests++;
    core.requestLog.push(req.url ?? '/');
    const mode = core.failQueue.shift();
    const answer = (): void => {
      if (res.destroyed) return;
      if (mode === 'hang') {
        hung.add(res);
        res.on('close', () => hung.delete(res));
        return;
      }
      if (mode === 'malformed') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('<html><body>Bad gateway</body></html>');
        return;
      }
      if (typeof mode === 'number') {
        failure(res, mode);
        return;
      }
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method !== 'GET') {
        sendJson(res, 405, JSON.stringify({ error: 'method not allowed' }));
        return;
      }
      handle(req, url, res);
    };
    if (core.delayMs > 0) setTimeout(answer, core.delayMs);
    else answer();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  core.url = `http://127.0.0.1:${port}${basePath}`;
  core.close = () =>
    new Promise<void>((resolve) => {
      for (const res of hung) res.destroy();
      hung.clear();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return core;
}

function handleFrom(
  core: Core,
  setPrice: PriceServer['setPrice'],
  removePrice: PriceServer['removePrice'],
): PriceServer {
  return {
    url: core.url,
    setPrice,
    removePrice,
    failNext(n: number, mode: FailMode) {
      for (let i = 0; i < n; i++) core.failQueue.push(mode);
    },
    setDelay(ms: number) {
      core.delayMs = ms;
    },
    get requests() {
      return core.requests;
    },
    get requestLog() {
      return core.requestLog;
    },
    close: () => core.close(),
  };
}

/**
 * A fake CoinGecko: `GET /api/v3/simple/price?ids=a,b&vs_currencies=usd[&include_last_updated_at=true]` answers
 * `{ "a": { "usd": 1.23, "last_updated_at": 1700000000 } }` for known ids (unknown ids left out); `GET /api/v3/ping`.
 * Failures: 429 with CoinGecko's rate-limit body and `Retry-After`, other statuses with `{ "error": … }`.
 */
export async function startCoinGeckoServer(options: PriceServerOptions = {}): Promise<PriceServer> {
  const now = options.now ?? (() => new Date());
  const prices = new Map<string, { raw: string; at: Date | null }>();
  const core = await listen(
    (_req, url, res) => {
      if (url.pathname === '/api/v3/ping')
        return sendJson(res, 200, JSON.stringify({ gecko_says: '(V3) To the Moon!' }));
      if (url.pathname !== '/api/v3/simple/price') {
        return sendJson(
          res,
          404,
          JSON.stringify({ error: 'Incorrect path. Please check https://www.coingecko.com/api/' }),
        );
      }
      const ids = url.searchParams.get('ids');
      const vs = url.searchParams.get('vs_currencies');
      if (!vs) return sendJson(res, 400, JSON.stringify({ error: 'Missing parameter vs_currencies' }));
      if (!ids) return sendJson(res, 400, JSON.stringify({ error: 'Missing parameter ids' }));
      const currencies = vs.split(',').map((c) => c.trim().toLowerCase());
      const withTime = url.searchParams.get('include_last_updated_at') === 'true';
      const parts: string[] = [];
      for (const id of new Set(ids.split(',').map((i) => i.trim().toLowerCase()))) {
        const p = prices.get(id);
        if (!p) continue;
        const fields: string[] = [];
        if (currencies.includes('usd')) fields.push(`"usd":${p.raw}`);
        if (withTime) fields.push(`"last_updated_at":${Math.floor((p.at ?? now()).getTime() / 1000)}`);
        parts.push(`${JSON.stringify(id)}:{${fields.join(',')}}`);
      }
      sendJson(res, 200, `{${parts.join(',')}}`);
    },
    (res, status) => {
      if (status === 429) {
        return sendJson(
          res,
          429,
          JSON.stringify({
            status: {
              error_code: 429,
              error_message:
                "You've exceeded the Rate Limit. Please visit https://www.coingecko.com/en/api/pricing to subscribe to our API plans for higher rate limits.",
            },
          }),
          { 'retry-after': '60' },
        );
      }
      sendJson(res, status, JSON.stringify({ error: `HTTP ${status}` }));
    },
    '/api/v3',
  );
  return handleFrom(
    core,
    (id, value, at) =>
      prices.set(id.toLowerCase(), { raw: typeof value === 'number' ? JSON.stringify(value) : value, at: at ?? null }),
    (id) => prices.delete(id.toLowerCase()),
  );
}

/** Binance-style price text: a plain decimal padded to at least 8 fraction digits. */
function binancePrice(value: number | string): string {
  let text = String(value);
  if (!/^\d+(\.\d+)?$/.test(text)) {
    // A number String() wrote in exponent form: expand by string manipulation.
    const m = /^(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
    if (!m) throw new Error(`binance price must be a non-negative decimal, got ${text}`);
    const digits = m[1]! + (m[2] ?? '');
    const point = m[1]!.length + Number(m[3]);
    text =
      point <= 0
        ? `0.${'0'.repeat(-point)}${digits}`
        : point >= digits.length
          ? digits + '0'.repeat(point - digits.length)
          : `${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  const [whole, frac = ''] = text.split('.');
  return `${whole}.${frac.length >= 8 ? frac : frac.padEnd(8, '0')}`;
}

/**
 * A fake Binance spot API: `GET /api/v3/ticker/price?symbols=["A","B"]` answers `[{"symbol":"A","price":"1.00000000"}]`,
 * `?symbol=A` answers one object, no parameter answers every ticker. An unknown symbol fails the whole request with
 * HTTP 400 `{"code":-1121,"msg":"Invalid symbol."}`; an unparsable `symbols` with -1100. Failures: 429/418 with
 * Binance's -1003 body and `Retry-After`, other statuses with `{"code":-1000,…}`.
 */
export async function startBinanceServer(_options: PriceServerOptions = {}): Promise<PriceServer> {
  const prices = new Map<string, string>();
  const invalidSymbol = JSON.stringify({ code: -1121, msg: 'Invalid symbol.' });
  const core = await listen(
    (_req, url, res) => {
      if (url.pathname === '/api/v3/ping') return sendJson(res, 200, '{}');
      if (url.pathname !== '/api/v3/ticker/price') return sendJson(res, 404, '');
      const one = url.searchParams.get('symbol');
      const many = url.searchParams.get('symbols');
      if (one !== null && many !== null) {
        return sendJson(res, 400, JSON.stringify({ code: -1128, msg: 'Combination of optional parameters invalid.' }));
      }
      if (one !== null) {
        const price = prices.get(one);
        if (price === undefined) return sendJson(res, 400, invalidSymbol);
        return sendJson(res, 200, JSON.stringify({ symbol: one, price }));
      }
      if (many === null)
        return sendJson(res, 200, JSON.stringify([...prices].map(([symbol, price]) => ({ symbol, price }))));
      let symbols: unknown;
      try {
        symbols = JSON.parse(many);
      } catch {
        symbols = null;
      }
      if (
        !Array.isArray(symbols) ||
        symbols.length === 0 ||
        !symbols.every((s) => typeof s === 'string' && /^[A-Z0-9-_.]{1,20}$/.test(s))
      ) {
        return sendJson(
          res,
          400,
          JSON.stringify({
            code: -1100,
            msg: `Illegal characters found in parameter 'symbols'; legal range is '^\\[("[A-Z0-9-_.]{1,20}"(,"[A-Z0-9-_.]{1,20}"){0,}){0,1}\\]$'.`,
          }),
        );
      }
      const out: { symbol: string; price: string }[] = [];
      for (const s of new Set(symbols as string[])) {
        const price = prices.get(s);
        if (price === undefined) return sendJson(res, 400, invalidSymbol);
        out.push({ symbol: s, price });
      }
      sendJson(res, 200, JSON.stringify(out));
    },
    (res, status) => {
      if (status === 429 || status === 418) {
        return sendJson(
          res,
          status,
          JSON.stringify({
            code: -1003,
            msg: 'Too many requests; current limit of IP(127.0.0.1) request weight is 6000 per 1 MINUTE. Please use WebSocket Streams for live updates to avoid bans.',
          }),
          { 'retry-after': '30' },
        );
      }
      sendJson(
        res,
        status,
        JSON.stringify({ code: -1000, msg: 'An unknown error occured while processing the request.' }),
      );
    },
    '',
  );
  return handleFrom(
    core,
    (symbol, value) => prices.set(symbol.toUpperCase(), binancePrice(value)),
    (symbol) => prices.delete(symbol.toUpperCase()),
  );
}
