/** A free TCP port on 127.0.0.1 for a local chain node the harness starts (never a fixed port). */
import { connect, createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A TCP relay in front of a node, to take the node away and bring it back: `down()` closes the port and every open
 * connection (clients then get ECONNREFUSED, as from a stopped node), `up()` listens on the same port again. `url` is
 * the node's URL (user and password kept) with the relay's address.
 */
export interface TcpRelay {
  url: string;
  down(): Promise<void>;
  up(): Promise<void>;
}

export async function startTcpRelay(upstream: string): Promise<TcpRelay> {
  const target = new URL(upstream);
  const sockets = new Set<import('node:net').Socket>();
  const port = await freePort();
  let server: import('node:net').Server | null = null;
  const up = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        const node = connect(Number(target.port), target.hostname);
        for (const sock of [client, node]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => {});
        }
        client.pipe(node).pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        server = s;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const sock of sockets) sock.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = null;
    });
  await up();
  const url = new URL(upstream);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), down, up };
}
