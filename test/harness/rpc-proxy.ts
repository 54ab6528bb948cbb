/**
 * A JSON-RPC fault-injection proxy for tests: an HTTP server on 127.0.0.1 (port 0) that forwards to a real node
 * (the Hardhat harness) and can be told to misbehave the way public RPC endpoints do — JSON-RPC errors, HTTP 500,
 * HTTP 429, answers that never come (past the client's timeout), connections dropped without an answer, non-JSON
 * bodies, `null` blocks, logs naming a block hash that does not exist, empty log answers — and to lag behind the
 * real head (head going backwards; blocks above the lagged head missing; logs clipped to it, like a node that
 * answers a range with only what it has), and to refuse methods as a provider that disabled them. Every request is
 * counted per method.
 *
 * WebSocket connections (`wsUrl`, the node's subscriptions) are relayed to the node's WebSocket on its HTTP port;
 * `dropSockets()` kills the open ones (a node restart, a proxy timeout) and `refuseSockets(true)` turns new ones away.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';

export type RpcFault =
  /** JSON-RPC error -32603 (internal error). */
  | 'error'
  /** HTTP 500. */
  | 'http500'
  /** HTTP 429 with `Retry-After: 0`. */
  | 'rate_limit'
  /** Never answered (the client's timeout fires). */
  | 'timeout'
  /** The connection is destroyed without an answer. */
  | 'drop'
  /** HTTP 200 with a body that is not JSON. */
  | 'malformed'
  /** `result: null` (a block the node does not have). */
  | 'null'
  /** eth_getLogs: every log names a block hash that does not exist (one is made up when there are none). */
  | 'foreign_logs'
  /** eth_getLogs: `[]`. */
  | 'empty_logs';

export interface RpcProxy {
  readonly url: string;
  /** The relayed WebSocket endpoint. */
  readonly wsUrl: string;
  /** Kills every open WebSocket connection. */
  dropSockets(): void;
  /** While true, WebSocket connections are refused. */
  refuseSockets(on: boolean): void;
  /** WebSocket connections opened so far. */
  readonly socketsOpened: number;
  /** The next `n` requests (of `method` only, when given) get `fault`. Queued faults apply in order. */
  failNext(n: number, fault: RpcFault, method?: string): void;
  /** Forgets faults queued and not yet applied. */
  clearFaults(): void;
  /** Pretends to be `blocks` behind the real head (0 = in step). */
  setLag(blocks: number): void;
  /**
   * Answers every request for `methods` (until told otherwise) as a node that does not serve them: JSON-RPC -32601
   * with geth's words, "the method … does not exist/is not available" (a provider that disabled the method).
   */
  refuseMethods(methods: string[]): void;
  /** Requests received, by method (faulted ones included). */
  readonly counts: Map<string, number>;
  /** Faults applied so far, in order. */
  readonly applied: Array<{ method: string; fault: RpcFault }>;
  /** Total requests received. */
  readonly total: number;
  resetCounts(): void;
  close(): Promise<void>;
}

interface RpcRequest {
  jsonrpc: '2.0';
  id: unknown;
  method: string;
  params?: unknown[];
}

export async function startRpcProxy(upstream: string): Promise<RpcProxy> {
  const queue: Array<{ fault: RpcFault; method?: string }> = [];
  const counts = new Map<string, number>();
  const applied: Array<{ method: string; fault: RpcFault }> = [];
  const hung = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  let lag = 0;
  let total = 0;
  let refused = new Set<string>();
  let refuse = false;
  let socketsOpened = 0;
  const wss = new WebSocketServer({ noServer: true });

  const call = async (method: string, params: unknown[] = []): Promise<any> => {
    const res = await fetch(upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return res.json();
  };

  const takeFault = (method: string): RpcFault | null => {
    const i = queue.findIndex((q) => !q.method || q.method === method);
    if (i < 0) return null;
    const [q] = queue.splice(i, 1);
    applied.push({ method, fault: q!.fault });
    return q!.fault;
  };

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...headers,
    });
    res.end(body);
  };

  /** Forwards one request, applying lag; returns the JSON-RPC response object. */
  const forward = async (req: RpcRequest): Promise<any> => {
    const params = req.params ?? [];
    if (lag > 0) {
      const head = BigInt((await call('eth_blockNumber')).result) - BigInt(lag);
      const lagged = head < 0n ? 0n : head;
      if (req.method === 'eth_blockNumber') return { jsonrpc: '2.0', id: req.id, result: `0x${lagged.toString(16)}` };
      if (req.method === 'eth_getBlockByNumber') {
        const tag = params[0];
        if (tag === 'latest') params[0] = `0x${lagged.toString(16)}`;
        else if (typeof tag === 'string' && tag.startsWith('0x') && BigInt(tag) > lagged)
          return { jsonrpc: '2.0', id: req.id, result: null };
      }
      if (req.method === 'eth_getLogs') {
        const filter = { ...(params[0] as Record<string, unknown>) };
        if (typeof filter.fromBlock === 'string' && BigInt(filter.fromBlock) > lagged)
          return { jsonrpc: '2.0', id: req.id, result: [] };
        if (typeof filter.toBlock === 'string' && BigInt(filter.toBlock) > lagged)
          filter.toBlock = `0x${lagged.toString(16)}`;
        params[0] = filter;
      }
    }
    const res = await fetch(upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...req, params }),
    });
    return res.json();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: string) => {
    let parsed: RpcRequest | RpcRequest[];
    try {
      parsed = JSON.parse(raw);
    } catch {
      return send(
        res,
        400,
        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }),
      );
    }
    if (Array.isArray(parsed)) {
      for (const r of parsed) counts.set(r.method, (counts.get(r.method) ?? 0) + 1);
      total += parsed.length;
      const out = await Promise.all(parsed.map(forward));
      return send(res, 200, JSON.stringify(out));
    }
    const r = parsed;
    total++;
    counts.set(r.method, (counts.get(r.method) ?? 0) + 1);
    if (refused.has(r.method))
      return send(
        res,
        200,
        JSON.stringify({
          jsonrpc: '2.0',
          id: r.id,
          error: { code: -32601, message: `the method ${r.method} does not exist/is not available` },
        }),
      );
    const fault = takeFault(r.method);
    switch (fault) {
      case 'error':
        return send(
          res,
          200,
          JSON.stringify({ jsonrpc: '2.0', id: r.id, error: { code: -32603, message: 'internal error (injected)' } }),
        );
      case 'http500':
        return send(res, 500, JSON.stringify({ error: 'injected' }));
      case 'rate_limit':
        return send(
          res,
          429,
          JSON.stringify({
            jsonrpc: '2.0',
            id: r.id,
            error: { code: -32005, message: 'rate limit exceeded (injected)' },
          }),
          { 'retry-after': '0' },
        );
      case 'timeout':
        hung.add(res);
        res.on('close', () => hung.delete(res));
        return;
      case 'drop':
        req.socket.destroy();
        return;
      case 'malformed':
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end('<html>502 Bad Gateway</html>');
      case 'null':
        return send(res, 200, JSON.stringify({ jsonrpc: '2.0', id: r.id, result: null }));
      default:
        break;
    }
    const answer = await forward(r);
    if (fault === 'empty_logs' && r.method === 'eth_getLogs') answer.result = [];
    if (fault === 'foreign_logs' && r.method === 'eth_getLogs' && Array.isArray(answer.result)) {
      const fake = `0x${randomBytes(32).toString('hex')}`;
      if (answer.result.length === 0) {
        const filter = (r.params?.[0] ?? {}) as { fromBlock?: string; address?: string[] | string };
        answer.result = [
          {
            address: Array.isArray(filter.address) ? filter.address[0] : filter.address,
            topics: [
              '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
              `0x${'0'.repeat(64)}`,
              `0x${'0'.repeat(64)}`,
            ],
            data: `0x${'0'.repeat(63)}1`,
            blockNumber: filter.fromBlock ?? '0x0',
            blockHash: fake,
            transactionHash: `0x${randomBytes(32).toString('hex')}`,
            transactionIndex: '0x0',
            logIndex: '0x0',
            removed: false,
          },
        ];
      } else {
        for (const l of answer.result) l.blockHash = fake;
      }
    }
    send(res, 200, JSON.stringify(answer));
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((err) => {
        if (!res.headersSent && !res.destroyed) send(res, 502, JSON.stringify({ error: String(err) }));
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, socket, head) => {
    if (refuse) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (client) => relay(client, upstream.replace(/^http/, 'ws')));
  });
  const relay = (client: WebSocket, target: string) => {
    socketsOpened++;
    const node = new WebSocket(target);
    const early: string[] = [];
    node.on('open', () => {
      for (const m of early.splice(0)) node.send(m);
    });
    node.on('message', (data: Buffer) => client.readyState === WebSocket.OPEN && client.send(data.toString('utf8')));
    client.on('message', (data: Buffer) =>
      node.readyState === WebSocket.OPEN ? node.send(data.toString('utf8')) : early.push(data.toString('utf8')),
    );
    node.on('close', () => client.terminate());
    client.on('close', () => node.terminate());
    node.on('error', () => client.terminate());
    client.on('error', () => node.terminate());
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    dropSockets() {
      for (const c of wss.clients) c.terminate();
    },
    refuseSockets(on) {
      refuse = on;
    },
    get socketsOpened() {
      return socketsOpened;
    },
    failNext(n, fault, method) {
      for (let i = 0; i < n; i++) queue.push({ fault, method });
    },
    clearFaults() {
      queue.length = 0;
    },
    setLag(blocks) {
      lag = blocks;
    },
    refuseMethods(methods) {
      refused = new Set(methods);
    },
    counts,
    applied,
    get total() {
      return total;
    },
    resetCounts() {
      counts.clear();
      total = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hung) res.destroy();
        for (const c of wss.clients) c.terminate();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
