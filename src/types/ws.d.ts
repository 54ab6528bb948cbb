/** The part of the `ws` package (WebSocket client and server for Node) Kasse and its test harness use. */
declare module 'ws' {
  import { EventEmitter } from 'node:events';
  import type { IncomingMessage, Server } from 'node:http';
  import type { AddressInfo } from 'node:net';
  import type { Duplex } from 'node:stream';

  export class WebSocket extends EventEmitter {
    static readonly OPEN: 1;
    readonly readyState: number;
    constructor(url: string, options?: { handshakeTimeout?: number; headers?: Record<string, string> });
    send(data: string): void;
    ping(): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    on(event: 'open' | 'pong', listener: () => void): this;
    on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): this;
    on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: string, listener: (...args: never[]) => void): this;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: { server?: Server; noServer?: boolean; port?: number; host?: string });
    readonly clients: Set<WebSocket>;
    address(): AddressInfo;
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, done: (ws: WebSocket) => void): void;
    on(event: 'connection', listener: (ws: WebSocket, req: IncomingMessage) => void): this;
    on(event: string, listener: (...args: never[]) => void): this;
    close(done?: () => void): void;
  }
}
