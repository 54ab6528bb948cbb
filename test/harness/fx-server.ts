/**
 * A local stand-in for the Frankfurter API (v1 wire format), so tests run the real FX client:
 * `GET /v1/{YYYY-MM-DD}?base=USD&symbols=INR` answers `{"amount":1.0,"base":"USD","date":"…","rates":{"INR":86.9}}`
 * with the last fixing on or before that day (as Frankfurter does on weekends and holidays), 404
 * `{"message":"not found"}` before the first. Rates are written as the JSON number text given. The next requests can
 * be made to fail with an HTTP status or a malformed body; every request is logged.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FxServer {
  /** Base URL ending in /v1, for KASSE_FX_URL. */
  url: string;
  /** Sets the USD→INR fixing of a day; `raw` is the JSON number text. */
  setRate(date: string, raw: string): void;
  failNext(n: number, mode: number | 'malformed'): void;
  readonly requestLog: string[];
  close(): Promise<void>;
}

export async function startFxServer(): Promise<FxServer> {
  const rates = new Map<string, string>();
  const fails: Array<number | 'malformed'> = [];
  const requestLog: string[] = [];
  const send = (res: import('node:http').ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = createServer((req, res) => {
    requestLog.push(req.url ?? '/');
    const fail = fails.shift();
    if (fail === 'malformed') return send(res, 200, '<html>maintenance</html>');
    if (typeof fail === 'number') return send(res, fail, JSON.stringify({ message: 'unavailable' }));
    const url = new URL(req.url ?? '/', 'http://x');
    const m = /^\/v1\/(\d{4}-\d{2}-\d{2})$/.exec(url.pathname);
    if (!m) return send(res, 404, JSON.stringify({ message: 'not found' }));
    const base = url.searchParams.get('base') ?? 'EUR';
    const symbols = (url.searchParams.get('symbols') ?? '').split(',');
    if (base !== 'USD' || !symbols.includes('INR'))
      return send(res, 422, JSON.stringify({ message: 'this stand-in knows USD→INR only' }));
    const day = [...rates.keys()]
      .filter((d) => d <= m[1]!)
      .sort()
      .pop();
    if (!day) return send(res, 404, JSON.stringify({ message: 'not found' }));
    send(res, 200, `{"amount":1.0,"base":"USD","date":"${day}","rates":{"INR":${rates.get(day)}}}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    setRate: (date, raw) => void rates.set(date, raw),
    failNext: (n, mode) => {
      for (let i = 0; i < n; i++) fails.push(mode);
    },
    requestLog,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
