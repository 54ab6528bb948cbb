/** Local chain nodes the harness starts: a free port for one (never a fixed port), its start awaited, a relay before it. */
import type { ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { eventually } from './expect.ts';

/**
 * Resolves once `probe` succeeds against the node `child` started (tried every 100 ms for up to a minute). Fails at
 * once when the node exits; a node that never answers is killed. `name` and the node's `stderr()` go into the error.
 */
export async function nodeAnswering(
  child: ChildProcess,
  name: string,
  probe: () => Promise<unknown>,
  stderr: () => string,
): Promise<void> {
  try {
    await eventually(
      `${name} to answer`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}): ${stderr()}`);
        return probe().then(
          () => true,
          () => false,
        );
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  } catch (err) {
    if (child.exitCode !== null) throw err;
    child.kill('SIGKILL');
    throw new Error(`${name} did not start: ${stderr()}`, { cause: err });
  }
}

/** A free TCP port on 127.0.0.1. */
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
